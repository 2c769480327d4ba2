// Several mounts of one volume (FsOptions::shared), two FileSystem instances each with its own
// engine connection, store object and page cache (fs_shared_test_util.h): which mounts may
// join, close-to-open, unlink on one mount while the other holds the file open, another
// mount's growth and new chunks, a pack built over a stale view, locks and a dead mount's
// locks, crosswise renames, id batches, a session cleaned while its mount was paused.
#include <fcntl.h>

#include <atomic>
#include <set>
#include <chrono>
#include <thread>

#include "fs/fs_shared_test_util.h"
#include "fs/session.h"

namespace folio::fs {
namespace {

using test::SharedOptions;
using test::SharedVolume;

std::string Bytes(size_t n, char c) { return std::string(n, c); }

Status PWrite(FileSystem* fs, uint64_t fh, uint64_t pos, const std::string& data) {
  FOLIO_ASSIGN_OR_RETURN(size_t n, fs->Write(fh, pos, {data.data(), data.size()}));
  return n == data.size() ? Status::OK() : Status::IOError("short write");
}

Result<std::string> PRead(FileSystem* fs, uint64_t fh, uint64_t pos, size_t len) {
  std::string out(len, '\0');
  FOLIO_ASSIGN_OR_RETURN(size_t n, fs->Read(fh, pos, {out.data(), out.size()}));
  out.resize(n);
  return out;
}

Status Close(FileSystem* fs, uint64_t fh) {
  FOLIO_RETURN_IF_ERROR(fs->Flush(fh, 1));
  return fs->Release(fh);
}

// A closed file's data is committed by the mount's next maintenance pass (its settling).
void Settle(FileSystem* fs) {
  Status s = fs->RunMaintenance();
  ASSERT_TRUE(s.ok()) << s.ToString();
}

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const Status _s = (expr);                            \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)

class FsSharedTest : public testing::Test {
 protected:
  void Make(const SharedOptions& o = {}) {
    vol_ = std::make_unique<SharedVolume>(test::SqliteKind(), o);
    ASSERT_OK(vol_->Create());
    a_ = vol_->fs(0);
    b_ = vol_->fs(1);
  }
  void Remake(const SharedOptions& o) {
    vol_.reset();
    Make(o);
  }
  InodeId Create(FileSystem* fs, const std::string& name, const std::string& content) {
    Result<InodeId> ino = test::WriteFile(fs, kRootInode, name, content);
    EXPECT_TRUE(ino.ok()) << ino.status().ToString();
    return ino.ok() ? *ino : InodeId{0};
  }
  std::string ReadAll(FileSystem* fs, InodeId ino) {
    Result<std::string> r = test::ReadFile(fs, ino);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::string();
  }

  std::unique_ptr<SharedVolume> vol_;
  FileSystem* a_ = nullptr;
  FileSystem* b_ = nullptr;
};

TEST_F(FsSharedTest, WhichMountsMayJoin) {
  Make();
  // Both shared mounts are up. A mount that is not shared may join only read-only.
  FsOptions solo = vol_->options().fs;
  solo.shared = false;
  ASSERT_OK(vol_->Unmount(1));
  Status s = vol_->Mount(1, &solo);
  EXPECT_EQ(s.code(), StatusCode::kBusy) << s.ToString();
  EXPECT_NE(s.message().find("already mounted read-write"), std::string_view::npos) << s.ToString();
  FsOptions ro = solo;
  ro.read_only = true;
  ASSERT_OK(vol_->Mount(1, &ro));
  ASSERT_OK(vol_->Unmount(1));
  // A lone (not shared) read-write mount keeps shared ones out, and one is kept out by them.
  ASSERT_OK(vol_->Unmount(0));
  ASSERT_OK(vol_->Mount(0, &solo));
  s = vol_->Mount(1);
  EXPECT_EQ(s.code(), StatusCode::kBusy) << s.ToString();
  EXPECT_NE(s.message().find("not shared"), std::string_view::npos) << s.ToString();
  // A crashed lone mount is dead at once (its process is this one, the session no longer
  // live): a shared mount may come.
  vol_->Crash(0);
  ASSERT_OK(vol_->Mount(1));
  ASSERT_OK(vol_->Mount(0));
}

TEST_F(FsSharedTest, CloseOnOneMountThenOpenOnTheOtherSeesDataAndAttributes) {
  Make();
  const std::string v1 = test::Pattern(100000, 1);
  const InodeId ino = Create(a_, "f", v1);
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<Attr> attr = b_->Lookup(Cred::Root(), kRootInode, "f");
  ASSERT_TRUE(attr.ok()) << attr.status().ToString();
  EXPECT_EQ(attr->inode.size_bytes, v1.size());
  // B reads and keeps its handle: its reads leave an atime to commit.
  Result<FileSystem::Opened> held = b_->Open(Cred::Root(), ino, O_RDONLY);
  ASSERT_TRUE(held.ok());
  Result<std::string> got = PRead(b_, held->fh, 0, v1.size());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == v1);
  // A rewrites a range in place (same size) and closes; its commit lands at its settling.
  const std::string v2 = test::Pattern(5000, 2);
  Result<FileSystem::Opened> w = a_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(w.ok());
  ASSERT_OK(PWrite(a_, w->fh, 40000, v2));
  ASSERT_OK(Close(a_, w->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<Attr> after_a = a_->GetAttr(ino);
  ASSERT_TRUE(after_a.ok());
  // An open on B sees it, although B still has a handle whose atime is not committed.
  Result<FileSystem::Opened> again = b_->Open(Cred::Root(), ino, O_RDONLY);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->keep_cache);
  EXPECT_EQ(again->attr.inode.mtime_ns, after_a->inode.mtime_ns);
  std::string want = v1;
  want.replace(40000, v2.size(), v2);
  got = PRead(b_, again->fh, 0, v1.size());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == want) << "B's open after A's close read stale data";
  ASSERT_OK(Close(b_, again->fh));
  ASSERT_OK(Close(b_, held->fh));
  // Attributes: A's chmod is B's at once (no attribute cache in the core).
  SetAttrRequest chmod;
  chmod.set_mode = true;
  chmod.mode = 0600;
  ASSERT_TRUE(a_->SetAttr(Cred::Root(), ino, chmod).ok());
  Result<Attr> on_b = b_->GetAttr(ino);
  ASSERT_TRUE(on_b.ok());
  EXPECT_EQ(on_b->inode.mode, 0600u);
  vol_->ExpectFsckClean();
}

// B commits, then A, which opened the file before B's commit, writes one byte in a page B did
// not write: A's commit keeps the size, and keeps B's mtime (A's differs from what A last saw).
// B's next open must still see A's byte (the ctime tells), and B's pages must stay: A's stale
// view of them (its cache, or a small file's whole content in a pack entry) must not land. The
// page cache writes back whole 4 KiB pages, so a page both wrote goes to the last commit.
class FsSharedStaleViewTest : public FsSharedTest,
                              public testing::WithParamInterface<uint64_t> {};

TEST_P(FsSharedStaleViewTest, ACommitOverAnotherMountsCommitAddsOnlyWhatItWrote) {
  SharedOptions o;
  o.pack_below_bytes = GetParam();  // 0: a stored slice; 64K: a pack entry
  Make(o);
  const InodeId ino = Create(a_, "f", Bytes(12288, 'x'));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(ha.ok());
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(hb.ok());
  ASSERT_OK(PWrite(b_, hb->fh, 0, Bytes(8192, 'B')));
  ASSERT_OK(Close(b_, hb->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  ASSERT_OK(PWrite(a_, ha->fh, 10000, "A"));
  ASSERT_OK(Close(a_, ha->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  std::string want = Bytes(8192, 'B') + Bytes(4096, 'x');
  want[10000] = 'A';
  for (FileSystem* fs : {b_, a_}) {
    Result<std::string> got = test::ReadFile(fs, ino);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(*got == want) << (fs == a_ ? "A" : "B") << " read " << got->substr(0, 4) << "..."
                              << got->substr(9998, 4);
  }
  vol_->ExpectFsckClean();
}

INSTANTIATE_TEST_SUITE_P(SliceAndPack, FsSharedStaleViewTest,
                         testing::Values(uint64_t{0}, uint64_t{64} << 10));

TEST_F(FsSharedTest, AnotherMountsGrowthIsNotUndone) {
  SharedOptions o;
  o.pack_below_bytes = 0;
  Make(o);
  const InodeId ino = Create(a_, "f", Bytes(100, 'x'));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDWR);  // B sees size 100
  ASSERT_TRUE(hb.ok());
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(ha.ok());
  ASSERT_OK(PWrite(a_, ha->fh, 100, Bytes(200, 'a')));  // A grows it to 300
  ASSERT_OK(Close(a_, ha->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  ASSERT_OK(PWrite(b_, hb->fh, 100, Bytes(50, 'b')));  // B grows its view to 150
  ASSERT_OK(Close(b_, hb->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  Result<Attr> attr = a_->GetAttr(ino);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->inode.size_bytes, 300u) << "B's commit cut A's growth";
  EXPECT_EQ(ReadAll(a_, ino), Bytes(100, 'x') + Bytes(50, 'b') + Bytes(150, 'a'));
  vol_->ExpectFsckClean();
}

TEST_F(FsSharedTest, AChunkAnotherMountAddedIsRead) {
  Make();
  const InodeId ino = Create(b_, "f", "small");
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  EXPECT_EQ(ReadAll(b_, ino), "small");  // B caches the file: one chunk known
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  const uint64_t far = meta::kChunkBytes + 4096;
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(ha.ok());
  ASSERT_OK(PWrite(a_, ha->fh, far, "far away"));
  ASSERT_OK(Close(a_, ha->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDONLY);
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(hb->attr.inode.size_bytes, far + 8);
  Result<std::string> got = PRead(b_, hb->fh, far, 8);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "far away");
  ASSERT_OK(Close(b_, hb->fh));
  vol_->ExpectFsckClean();
}

// A grows a file B has cached; B's next open sees the growth, and B's close after reading it
// leaves A's data alone (B's revalidation once sent its cache's growth to its device as a
// trim: zero records over A's data, committed at B's close).
TEST_F(FsSharedTest, AnotherMountsAppendIsReadAndKept) {
  SharedOptions o;
  o.pack_below_bytes = 0;
  Make(o);
  const InodeId ino = Create(a_, "f", Bytes(3000, 'x'));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  EXPECT_EQ(ReadAll(b_, ino), Bytes(3000, 'x'));  // B caches it
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR | O_APPEND);
  ASSERT_TRUE(ha.ok());
  ASSERT_OK(PWrite(a_, ha->fh, 0, Bytes(5000, 'a')));
  ASSERT_OK(Close(a_, ha->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  const std::string want = Bytes(3000, 'x') + Bytes(5000, 'a');
  EXPECT_TRUE(ReadAll(b_, ino) == want) << "B's open after A's append";
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  EXPECT_TRUE(ReadAll(a_, ino) == want) << "B's close changed A's data";
  vol_->ExpectFsckClean();
}

// A file unlinked (or renamed over) on A while B holds it open stays readable on B, whatever A's
// maintenance does meanwhile (deletion grace 0: due at once), and goes at B's last close.
TEST_F(FsSharedTest, AFileUnlinkedOnOneMountStaysReadableWhereItIsOpen) {
  for (bool by_rename : {false, true}) {
    SCOPED_TRACE(by_rename ? "renamed over" : "unlinked");
    SharedOptions o;
    o.block_bytes = 128 << 10;
    Remake(o);
    const std::string content = test::Pattern(300000, 7);  // three blocks, not packed
    const InodeId ino = Create(a_, "f", content);
    ASSERT_NO_FATAL_FAILURE(Settle(a_));
    Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDONLY);
    ASSERT_TRUE(hb.ok());
    Result<std::string> head = PRead(b_, hb->fh, 0, 4096);  // B has read a little
    ASSERT_TRUE(head.ok());
    if (by_rename) {
      Create(a_, "g", "replacement");
      ASSERT_OK(a_->Rename(Cred::Root(), kRootInode, "g", kRootInode, "f", 0));
    } else {
      ASSERT_OK(a_->Unlink(Cred::Root(), kRootInode, "f"));
    }
    for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(Settle(a_));
    ASSERT_NO_FATAL_FAILURE(Settle(b_));
    Result<std::string> all = PRead(b_, hb->fh, 0, content.size());
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    EXPECT_TRUE(*all == content) << "B's open file lost its data to A's unlink";
    Result<Attr> still = b_->GetAttr(ino);
    ASSERT_TRUE(still.ok());
    EXPECT_EQ(still->inode.nlink, 0u);
    ASSERT_OK(Close(b_, hb->fh));
    ASSERT_NO_FATAL_FAILURE(Settle(b_));
    ASSERT_NO_FATAL_FAILURE(Settle(a_));
    EXPECT_EQ(a_->GetAttr(ino).status().ToErrno(), ENOENT) << "not freed at B's last close";
    vol_->ExpectFsckClean();
  }
}

TEST_F(FsSharedTest, ADeadMountsOpenFilesGoWithItsSession) {
  Make();
  const InodeId ino = Create(a_, "f", test::Pattern(100000, 3));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDONLY);
  ASSERT_TRUE(hb.ok());
  ASSERT_OK(a_->Unlink(Cred::Root(), kRootInode, "f"));
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  EXPECT_TRUE(a_->GetAttr(ino).ok()) << "freed while B holds it";
  vol_->Crash(1);
  // A's maintenance cleans dead sessions every tenth pass: B's hold goes, the file is freed.
  for (int i = 0; i < 11; ++i) ASSERT_NO_FATAL_FAILURE(Settle(a_));
  EXPECT_EQ(a_->GetAttr(ino).status().ToErrno(), ENOENT);
  vol_->ExpectFsckClean();
  ASSERT_OK(vol_->Mount(1));
}

TEST_F(FsSharedTest, LocksConflictAcrossMountsAndGoWithADeadSession) {
  Make();
  const InodeId ino = Create(a_, "f", "lock me");
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR);
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(ha.ok() && hb.ok());
  ASSERT_OK(a_->Flock(ha->fh, 11, meta::LockType::kWrite, false, {}));
  EXPECT_EQ(b_->Flock(hb->fh, 11, meta::LockType::kRead, false, {}).ToErrno(), EAGAIN);
  EXPECT_EQ(b_->Flock(hb->fh, 12, meta::LockType::kWrite, false, {}).ToErrno(), EAGAIN);
  PosixLock range{meta::LockType::kWrite, 0, 99, 100};
  ASSERT_OK(a_->SetLk(ha->fh, 11, range, false, {}));
  PosixLock probe{meta::LockType::kRead, 50, 59, 200};
  EXPECT_EQ(b_->SetLk(hb->fh, 11, probe, false, {}).ToErrno(), EAGAIN);
  Result<PosixLock> seen = b_->GetLk(hb->fh, 11, probe);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->type, meta::LockType::kWrite);
  EXPECT_EQ(seen->pid, 100u);
  PosixLock beyond{meta::LockType::kWrite, 100, 199, 200};
  EXPECT_TRUE(b_->SetLk(hb->fh, 11, beyond, false, {}).ok());
  // A dies holding both: B's maintenance cleans its session, and B gets them.
  vol_->Crash(0);
  ASSERT_NO_FATAL_FAILURE(Settle(b_));  // its first pass cleans dead sessions
  EXPECT_TRUE(b_->Flock(hb->fh, 12, meta::LockType::kWrite, false, {}).ok());
  EXPECT_TRUE(b_->SetLk(hb->fh, 11, probe, false, {}).ok());
  ASSERT_OK(Close(b_, hb->fh));
  ASSERT_OK(vol_->Mount(0));
  vol_->ExpectFsckClean();
}

// Two mounts move two directories into each other at the same time, many rounds: the cycle
// check runs inside each rename's transaction, so at most one of each pair succeeds and the
// tree stays a tree.
TEST_F(FsSharedTest, CrosswiseRenamesCannotMakeACycle) {
  Make();
  Result<Attr> da = a_->Mkdir(Cred::Root(), kRootInode, "a", 0755);
  Result<Attr> db = a_->Mkdir(Cred::Root(), kRootInode, "b", 0755);
  ASSERT_TRUE(da.ok() && db.ok());
  int both = 0, one = 0;
  for (int round = 0; round < 40; ++round) {
    std::atomic<int> ready{0};
    Status sa, sb;
    std::thread ta([&] {
      ready.fetch_add(1);
      while (ready.load() < 2) {}
      sa = a_->Rename(Cred::Root(), kRootInode, "a", db->ino(), "a", 0);
    });
    std::thread tb([&] {
      ready.fetch_add(1);
      while (ready.load() < 2) {}
      sb = b_->Rename(Cred::Root(), kRootInode, "b", da->ino(), "b", 0);
    });
    ta.join();
    tb.join();
    ASSERT_FALSE(sa.ok() && sb.ok()) << "both crosswise renames succeeded in round " << round;
    both += !sa.ok() && !sb.ok();
    one += sa.ok() != sb.ok();
    // Back to the root, whichever moved.
    if (sa.ok()) ASSERT_OK(b_->Rename(Cred::Root(), db->ino(), "a", kRootInode, "a", 0));
    if (sb.ok()) ASSERT_OK(a_->Rename(Cred::Root(), da->ino(), "b", kRootInode, "b", 0));
    Result<Attr> ra = b_->Lookup(Cred::Root(), kRootInode, "a");
    Result<Attr> rb = a_->Lookup(Cred::Root(), kRootInode, "b");
    ASSERT_TRUE(ra.ok() && rb.ok());
  }
  EXPECT_GT(one, 0);
  std::printf("crosswise renames: 40 rounds, one of two succeeded in %d, neither in %d\n", one,
              both);
  vol_->ExpectFsckClean();
}

// Both mounts create and write files at once: inode and slice ids come from batches each mount
// takes from the engine's counters, and never collide.
TEST_F(FsSharedTest, IdBatchesOfTwoMountsNeverCollide) {
  SharedOptions o;
  o.pack_below_bytes = 0;  // every file a stored slice of its own
  Make(o);
  constexpr int kFiles = 150;
  std::vector<InodeId> inos[2];
  Status err[2];
  auto work = [&](int m) {
    FileSystem* fs = vol_->fs(m);
    for (int i = 0; i < kFiles && err[m].ok(); ++i) {
      Result<InodeId> ino = test::WriteFile(fs, kRootInode, "m" + std::to_string(m) + "-" +
                                            std::to_string(i), test::Pattern(5000, i));
      if (!ino.ok()) err[m] = ino.status();
      else inos[m].push_back(*ino);
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  ASSERT_OK(err[0]);
  ASSERT_OK(err[1]);
  std::set<uint64_t> all;
  for (int m = 0; m < 2; ++m) {
    for (InodeId ino : inos[m]) all.insert(Raw(ino));
  }
  EXPECT_EQ(all.size(), 2u * kFiles);
  for (int i = 0; i < kFiles; i += 37) {
    EXPECT_EQ(ReadAll(b_, inos[0][i]), test::Pattern(5000, i));
    EXPECT_EQ(ReadAll(a_, inos[1][i]), test::Pattern(5000, i));
  }
  vol_->ExpectFsckClean();
}

// A mount paused past the session timeout is cleaned by the other as dead. When it beats again
// it registers again and writes back the records of the files it holds open, so an unlink
// after that keeps them.
TEST_F(FsSharedTest, AMountCleanedWhilePausedRecordsItsOpenFilesAgain) {
  Make();
  const std::string content = test::Pattern(200000, 9);
  const InodeId ino = Create(a_, "f", content);
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDONLY);
  ASSERT_TRUE(hb.ok());
  ASSERT_OK(CleanSession(vol_->meta(0), b_->session()));  // what A does to a dead session
  Status beat = b_->RunMaintenance();  // the first pass beats
  EXPECT_EQ(beat.code(), StatusCode::kDataLoss) << beat.ToString();
  ASSERT_OK(a_->Unlink(Cred::Root(), kRootInode, "f"));
  for (int i = 0; i < 2; ++i) ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<std::string> all = PRead(b_, hb->fh, 0, content.size());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(*all == content);
  ASSERT_OK(Close(b_, hb->fh));
  ASSERT_NO_FATAL_FAILURE(Settle(b_));
  EXPECT_EQ(a_->GetAttr(ino).status().ToErrno(), ENOENT);
  vol_->ExpectFsckClean();
}

// The locks a paused mount held are released when another mount cleans its session. When it
// runs again it must not go on as if it held them: every handle that took a lock fails its I/O
// with EIO until closed (as NFS does with lost locks); handles without locks go on; the other
// mount can take the locks; a reopened file locks normally again.
TEST_F(FsSharedTest, AMountCleanedWhilePausedFailsIoOnHandlesWhoseLocksItLost) {
  Make();
  const InodeId ino = Create(a_, "f", "lock me");
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> flocked = b_->Open(Cred::Root(), ino, O_RDWR);
  Result<FileSystem::Opened> plocked = b_->Open(Cred::Root(), ino, O_RDWR);
  Result<FileSystem::Opened> plain = b_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(flocked.ok() && plocked.ok() && plain.ok());
  ASSERT_OK(b_->Flock(flocked->fh, 21, meta::LockType::kWrite, false, {}));
  ASSERT_OK(b_->SetLk(plocked->fh, 22, PosixLock{meta::LockType::kWrite, 0, 99, 300}, false, {}));
  Result<FileSystem::Opened> ha = a_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(ha.ok());
  EXPECT_EQ(a_->Flock(ha->fh, 31, meta::LockType::kWrite, false, {}).ToErrno(), EAGAIN);
  ASSERT_OK(CleanSession(vol_->meta(0), b_->session()));  // what A does to a dead session
  EXPECT_EQ(b_->RunMaintenance().code(), StatusCode::kDataLoss);
  char buf[8];
  for (uint64_t fh : {flocked->fh, plocked->fh}) {
    EXPECT_EQ(b_->Read(fh, 0, buf).status().ToErrno(), EIO) << "handle " << fh;
    EXPECT_EQ(b_->Write(fh, 0, std::string_view("x")).status().ToErrno(), EIO);
    EXPECT_EQ(b_->Fsync(fh, false).ToErrno(), EIO);
    EXPECT_EQ(b_->Flock(fh, 23, meta::LockType::kRead, false, {}).ToErrno(), EIO);
  }
  Result<size_t> n = b_->Read(plain->fh, 0, buf);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(std::string(buf, *n), "lock me");
  // The locks are A's to take now; B's closes succeed.
  ASSERT_OK(a_->Flock(ha->fh, 31, meta::LockType::kWrite, false, {}));
  ASSERT_OK(a_->SetLk(ha->fh, 31, PosixLock{meta::LockType::kWrite, 0, 99, 400}, false, {}));
  for (uint64_t fh : {flocked->fh, plocked->fh, plain->fh}) ASSERT_OK(Close(b_, fh));
  ASSERT_OK(a_->Flock(ha->fh, 31, meta::LockType::kUnlock, false, {}));
  ASSERT_OK(Close(a_, ha->fh));
  Result<FileSystem::Opened> again = b_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(again.ok());
  ASSERT_OK(b_->Flock(again->fh, 24, meta::LockType::kWrite, false, {}));
  ASSERT_OK(PWrite(b_, again->fh, 0, "L"));
  ASSERT_OK(Close(b_, again->fh));
  vol_->ExpectFsckClean();
}

// The same loss seen before the first I/O after the pause, not at the next maintenance pass: a
// handle holding locks beats the session itself when the last beat is older than half the
// session timeout.
TEST_F(FsSharedTest, ALockHoldersFirstIoAfterAPauseSeesTheLoss) {
  SharedOptions o;
  o.session_timeout_ms = 400;
  Make(o);
  const InodeId ino = Create(a_, "f", "lock me");
  ASSERT_NO_FATAL_FAILURE(Settle(a_));
  Result<FileSystem::Opened> hb = b_->Open(Cred::Root(), ino, O_RDWR);
  ASSERT_TRUE(hb.ok());
  ASSERT_OK(b_->Flock(hb->fh, 21, meta::LockType::kWrite, false, {}));
  ASSERT_OK(b_->RunMaintenance());  // a beat: fresh
  char buf[8];
  ASSERT_TRUE(b_->Read(hb->fh, 0, buf).ok());
  ASSERT_OK(CleanSession(vol_->meta(0), b_->session()));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // "paused" past timeout / 2
  EXPECT_EQ(b_->Write(hb->fh, 0, std::string_view("x")).status().ToErrno(), EIO);
  ASSERT_OK(Close(b_, hb->fh));
  Result<std::string> left = test::ReadFile(a_, ino);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(*left, "lock me");
  vol_->ExpectFsckClean();
}

}  // namespace
}  // namespace folio::fs
