// FsAdapter without a mount: the translation between the FUSE adapter's interface and the
// Folio FS core (types, modes, times, locks, directory pages) and the `.stats` file. The
// caller is root (no adapter call is running, so CallerContext() is root's).
#include "fuse/fs_adapter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fs/fs_test_util.h"

namespace folio::fuse {
namespace {

class FsAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(vol_.Create().ok());
    adapter_ = std::make_unique<FsAdapter>(vol_.fs(), FsAdapterOptions{});
  }
  fs::test::TestVolume vol_;
  std::unique_ptr<FsAdapter> adapter_;
};

TEST_F(FsAdapterTest, CreateWriteReadThroughTheAdapter) {
  Result<Filesystem::CreateReply> c =
      adapter_->Create(kRootInode, "f", S_IFREG | 0640, O_RDWR | O_CREAT | O_EXCL);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->entry.attr.mode, static_cast<mode_t>(S_IFREG | 0640));
  const InodeId ino = c->entry.attr.ino;
  const std::string data = fs::test::Pattern(10000, 3);
  ASSERT_EQ(*adapter_->Write(ino, c->open.fh, 0, {data.data(), data.size()}), data.size());
  std::string back(20000, '\0');
  Result<size_t> n = adapter_->Read(ino, c->open.fh, 0, {back.data(), back.size()});
  ASSERT_TRUE(n.ok());
  back.resize(*n);
  EXPECT_EQ(back, data);
  ASSERT_TRUE(adapter_->Fsync(ino, c->open.fh, SyncKind::kDataAndMetadata).ok());
  ASSERT_TRUE(adapter_->Flush(ino, c->open.fh).ok());
  ASSERT_TRUE(adapter_->Release(ino, c->open.fh).ok());
  Result<NodeAttr> a = adapter_->GetAttr(ino);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size_bytes, data.size());
  EXPECT_EQ(a->nlink, 1u);
}

// fsync of .stats syncs the whole mount (FUSE gets no syncfs): a closed file whose commit
// waits for the flusher (none runs here) is committed, in a pack, when it returns.
TEST_F(FsAdapterTest, FsyncOfStatsCommitsEveryFile) {
  Result<Filesystem::CreateReply> c =
      adapter_->Create(kRootInode, "f", S_IFREG | 0644, O_RDWR | O_CREAT | O_EXCL);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::string data = fs::test::Pattern(10000, 4);
  ASSERT_EQ(*adapter_->Write(c->entry.attr.ino, c->open.fh, 0, {data.data(), data.size()}),
            data.size());
  ASSERT_TRUE(adapter_->Flush(c->entry.attr.ino, c->open.fh).ok());
  ASSERT_TRUE(adapter_->Release(c->entry.attr.ino, c->open.fh).ok());
  EXPECT_EQ(vol_.fs()->Stats().packed_files, 0u);  // waits for its settle
  Result<EntryReply> e = adapter_->Lookup(kRootInode, ".stats");
  ASSERT_TRUE(e.ok());
  Result<OpenReply> o = adapter_->Open(e->attr.ino, O_RDONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(adapter_->Fsync(e->attr.ino, o->fh, SyncKind::kDataAndMetadata).ok());
  const fs::FsStats st = vol_.fs()->Stats();
  EXPECT_EQ(st.packed_files, 1u);
  EXPECT_EQ(st.packs_written, 1u);
  ASSERT_TRUE(adapter_->Release(e->attr.ino, o->fh).ok());
}

TEST_F(FsAdapterTest, MknodMapsTypesAndSetAttrMapsTimes) {
  Result<EntryReply> fifo = adapter_->Mknod(kRootInode, "p", S_IFIFO | 0600, 0);
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  EXPECT_TRUE(S_ISFIFO(fifo->attr.mode));
  Result<EntryReply> chr = adapter_->Mknod(kRootInode, "c", S_IFCHR | 0600, makedev(1, 3));
  ASSERT_TRUE(chr.ok());
  EXPECT_TRUE(S_ISCHR(chr->attr.mode));
  EXPECT_EQ(chr->attr.rdev, makedev(1, 3));
  EXPECT_EQ(adapter_->Mknod(kRootInode, "x", 0170000 | 0600, 0).status().ToErrno(), EINVAL);

  SetAttrRequest r;
  r.has_mtime = true;
  r.has_times = true;
  r.mtime = timespec{1234567, 890};
  r.has_atime = true;
  r.atime_now = true;
  Result<NodeAttr> a = adapter_->SetAttr(fifo->attr.ino, r);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->mtime.tv_sec, 1234567);
  EXPECT_EQ(a->mtime.tv_nsec, 890);
  EXPECT_GT(a->atime.tv_sec, 1600000000);  // now
}

TEST_F(FsAdapterTest, StatsIsFoundReadableAndNotListed) {
  Result<EntryReply> e = adapter_->Lookup(kRootInode, ".stats");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(static_cast<uint64_t>(e->attr.ino), FsAdapter::kStatsIno);
  EXPECT_EQ(adapter_->Open(e->attr.ino, O_WRONLY).status().ToErrno(), EPERM);
  Result<OpenReply> o = adapter_->Open(e->attr.ino, O_RDONLY);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->direct_io);
  std::string text(1 << 20, '\0');
  Result<size_t> n = adapter_->Read(e->attr.ino, o->fh, 0, {text.data(), text.size()});
  ASSERT_TRUE(n.ok());
  text.resize(*n);
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["volume"], "testvol");
  EXPECT_TRUE(j["page_cache"]["orders"].is_array());
  // The eviction counters folio export's .stats shows (the sparse rule's among them).
  for (const char* k : {"evictions", "evicted_dirty", "sparse_evictions"}) {
    EXPECT_TRUE(j["page_cache"][k].is_number_unsigned()) << k;
  }
  EXPECT_TRUE(j["meta_ops"]["ops"].is_object());
  ASSERT_TRUE(adapter_->Release(e->attr.ino, o->fh).ok());
  EXPECT_EQ(adapter_->Create(kRootInode, ".stats", S_IFREG | 0644, O_RDWR | O_CREAT).status().ToErrno(),
            EEXIST);
  EXPECT_EQ(adapter_->Lookup(InodeId{2}, ".stats").status().ToErrno(), ENOENT);

  ASSERT_TRUE(adapter_->Mkdir(kRootInode, "d", 0755).ok());
  Result<uint64_t> dh = adapter_->OpenDir(kRootInode, 0);
  ASSERT_TRUE(dh.ok());
  std::set<std::string> names;
  uint64_t offset = 0;
  for (;;) {
    Result<std::vector<DirPageEntry>> page = adapter_->ReadDirPage(kRootInode, *dh, offset, 2, true);
    ASSERT_TRUE(page.ok());
    if (page->empty()) break;
    for (const DirPageEntry& d : *page) {
      names.insert(d.name);
      offset = d.offset;
      if (d.name == "d") {
        EXPECT_TRUE(S_ISDIR(d.mode));
        EXPECT_TRUE(S_ISDIR(d.entry.attr.mode));
        EXPECT_EQ(d.entry.attr.nlink, 2u);
      }
    }
  }
  ASSERT_TRUE(adapter_->ReleaseDir(kRootInode, *dh).ok());
  EXPECT_EQ(names, (std::set<std::string>{".", "..", "d"}));
}

TEST_F(FsAdapterTest, PosixLockRangesRoundTrip) {
  Result<Filesystem::CreateReply> c =
      adapter_->Create(kRootInode, "l", S_IFREG | 0644, O_RDWR | O_CREAT);
  ASSERT_TRUE(c.ok());
  FileLock l;
  l.type = F_WRLCK;
  l.start = 100;
  l.end = 199;
  l.pid = 42;
  // The caller's lock owner is 0 outside the adapter: a second owner needs a second context,
  // so check that our own lock does not conflict with us and reads back as unlocked.
  ASSERT_TRUE(adapter_->SetLk(c->entry.attr.ino, c->open.fh, l, false).ok());
  Result<FileLock> got = adapter_->GetLk(c->entry.attr.ino, c->open.fh, l);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->type, F_UNLCK);
  ASSERT_TRUE(adapter_->Release(c->entry.attr.ino, c->open.fh).ok());
}

// With the kernel's writeback cache the kernel places O_APPEND writes itself (the offsets of
// its dirty pages) and fills its page cache through whatever handle writes, write-only ones
// included: the adapter must neither append at its own end of file (the data landed past the
// kernel's size: fs_mount_model_test found it) nor refuse the read (EBADF to a pwrite).
TEST_F(FsAdapterTest, WritebackCacheWritesAtTheKernelsOffsetsAndReadsWriteOnlyHandles) {
  ConnectionInfo conn;
  conn.writeback_cache = true;
  adapter_->Init(conn);
  Result<Filesystem::CreateReply> c =
      adapter_->Create(kRootInode, "a", S_IFREG | 0644, O_WRONLY | O_CREAT | O_APPEND);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const InodeId ino = c->entry.attr.ino;
  const std::string head(1000, 'h'), page = fs::test::Pattern(4096, 5);
  ASSERT_EQ(*adapter_->Write(ino, c->open.fh, 0, {head.data(), head.size()}), head.size());
  // The kernel writes back the whole dirty page, from offset 0, through the O_APPEND handle.
  ASSERT_EQ(*adapter_->Write(ino, c->open.fh, 0, {page.data(), page.size()}), page.size());
  std::string back(8192, '\0');
  Result<size_t> n = adapter_->Read(ino, c->open.fh, 0, {back.data(), back.size()});
  ASSERT_TRUE(n.ok()) << "the kernel's read-modify-write read: " << n.status().ToString();
  back.resize(*n);
  EXPECT_EQ(back, page);
  ASSERT_TRUE(adapter_->Release(ino, c->open.fh).ok());
  EXPECT_EQ(adapter_->GetAttr(ino)->size_bytes, page.size());
}

// Without it the adapter appends (the kernel sends the offset it knows, which another mount may
// have moved) and a write-only handle stays unreadable.
TEST_F(FsAdapterTest, WithoutWritebackCacheAppendsAtTheEndAndWriteOnlyHandlesDoNotRead) {
  Result<Filesystem::CreateReply> c =
      adapter_->Create(kRootInode, "a", S_IFREG | 0644, O_WRONLY | O_CREAT | O_APPEND);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const InodeId ino = c->entry.attr.ino;
  ASSERT_EQ(*adapter_->Write(ino, c->open.fh, 0, {"abc", 3}), 3u);
  ASSERT_EQ(*adapter_->Write(ino, c->open.fh, 0, {"de", 2}), 2u);
  EXPECT_EQ(adapter_->GetAttr(ino)->size_bytes, 5u);
  char b[8];
  EXPECT_EQ(adapter_->Read(ino, c->open.fh, 0, {b, sizeof b}).status().ToErrno(), EBADF);
  ASSERT_TRUE(adapter_->Release(ino, c->open.fh).ok());
}

}  // namespace
}  // namespace folio::fuse
