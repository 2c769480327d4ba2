// The adapter's lookup counting (issue 8 item 11b): the kernel's reference to an inode is
// counted before the reply that hands it over can reach the kernel, because a FORGET of it may
// be served by another worker thread before fuse_reply_entry even returns. The reply is a seam
// here, so the race is driven deterministically: the "kernel" forgets inside the reply.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "fuse/lowlevel_ops.h"

namespace folio::fuse {
namespace {

constexpr InodeId kIno{4};

// A file system that only records the FORGETs it is told about.
class ForgetRecorder : public Filesystem {
 public:
  struct Call {
    InodeId ino;
    uint64_t nlookup;
    uint64_t remaining;
  };
  std::vector<Call> forgets;

  Result<EntryReply> Lookup(InodeId, std::string_view) override { return EntryReply{}; }
  void Forget(InodeId ino, uint64_t nlookup, uint64_t remaining) override {
    forgets.push_back({ino, nlookup, remaining});
  }
  Result<NodeAttr> GetAttr(InodeId) override { return NodeAttr{}; }
  Result<NodeAttr> SetAttr(InodeId, const SetAttrRequest&) override { return NodeAttr{}; }
  Result<OpenReply> Open(InodeId, int) override { return OpenReply{}; }
  Result<size_t> Read(InodeId, uint64_t, uint64_t, std::span<char>) override { return size_t{0}; }
  Result<size_t> Write(InodeId, uint64_t, uint64_t, std::span<const char> in) override {
    return in.size();
  }
  Status Flush(InodeId, uint64_t) override { return Status::OK(); }
  Status Release(InodeId, uint64_t) override { return Status::OK(); }
  Status Fsync(InodeId, uint64_t, SyncKind) override { return Status::OK(); }
  Status Fallocate(InodeId, uint64_t, int, uint64_t, uint64_t) override { return Status::OK(); }
  Result<std::vector<DirEntry>> ReadDir(InodeId) override { return std::vector<DirEntry>{}; }
  Result<FsStatfs> StatFs() override { return FsStatfs{}; }
};

TEST(LookupCountTest, AForgetServedBeforeTheReplyReturnsFindsTheReferenceCounted) {
  ForgetRecorder fs;
  AdapterContext ctx;
  ctx.fs = &fs;
  uint64_t left_during_reply = ~uint64_t{0};
  // The kernel got the entry and, before fuse_reply_entry returned, another worker served its
  // FORGET (the count was added after the reply, this aborted the export).
  const int r = ReplyWithReference(&ctx, kIno, [&] {
    left_during_reply = ctx.lookups.Forget(kIno, 1);
    return 0;
  });
  EXPECT_EQ(r, 0);
  EXPECT_EQ(left_during_reply, 0u);
  EXPECT_EQ(ctx.lookups.Get(kIno), 0u);
  EXPECT_TRUE(fs.forgets.empty());  // the file system hears of kernel forgets from OpForget
}

TEST(LookupCountTest, AReplyThatFailsGivesTheReferenceBack) {
  ForgetRecorder fs;
  AdapterContext ctx;
  ctx.fs = &fs;
  ASSERT_EQ(ReplyWithReference(&ctx, kIno, [] { return 0; }), 0);
  // An interrupted lookup: the kernel never got this entry, so it will never forget it.
  EXPECT_EQ(ReplyWithReference(&ctx, kIno, [] { return -ENOENT; }), -ENOENT);
  EXPECT_EQ(ctx.lookups.Get(kIno), 1u);
  ASSERT_EQ(fs.forgets.size(), 1u);
  EXPECT_EQ(fs.forgets[0].ino, kIno);
  EXPECT_EQ(fs.forgets[0].nlookup, 1u);
  EXPECT_EQ(fs.forgets[0].remaining, 1u);
}

}  // namespace
}  // namespace folio::fuse
