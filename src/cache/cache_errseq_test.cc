// Writeback errors per open handle (Linux's errseq rules): ErrSeq itself, then address spaces
// with several cursors over a fault device that fails writes with ENOSPC, as a full file
// system under a file device does.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "cache/cache_test_util.h"
#include "cache/errseq.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

using cache_test::CacheEnv;
using cache_test::MakeEnv;
using cache_test::Pattern;
using cache_test::SmallCacheOptions;
using cache_test::kKiB;
using cache_test::kMiB;
using cache_test::WriteOk;

TEST(ErrSeqTest, EachCursorSeesEachEventOnce) {
  cache::ErrSeq e;
  uint64_t before = e.Sample();
  EXPECT_TRUE(e.CheckAndAdvance(&before).ok());  // nothing happened
  e.Record(Status::NoSpace("first"));
  e.Record(Status::NoSpace("second"));  // nobody saw the first: one event, latest reported
  uint64_t unseen = e.Sample();         // opened after the error, which nobody saw
  Status s = e.CheckAndAdvance(&before);
  EXPECT_TRUE(s.IsNoSpace());
  EXPECT_EQ(s.message(), "second");
  EXPECT_TRUE(e.CheckAndAdvance(&before).ok());
  EXPECT_TRUE(e.CheckAndAdvance(&unseen).IsNoSpace());
  uint64_t after = e.Sample();  // opened once the error was seen
  EXPECT_TRUE(e.CheckAndAdvance(&after).ok());
  e.Record(Status::IOError("third"));  // a new event for everyone
  EXPECT_TRUE(e.CheckAndAdvance(&before).IsIOError());
  EXPECT_TRUE(e.CheckAndAdvance(&unseen).IsIOError());
  EXPECT_TRUE(e.CheckAndAdvance(&after).IsIOError());
  EXPECT_TRUE(e.CheckAndAdvance(&after).ok());
  EXPECT_EQ(e.errors(), 3u);
}

class CacheErrseqTest : public ::testing::Test {
 protected:
  void SetUp() override { MakeEnv(&env_, 16 * kMiB, SmallCacheOptions(8 * kMiB, "dynamic")); }

  // The device answers every write with ENOSPC, as a file on a full file system does.
  void FillUp() {
    env_.device->SetInjectedErrno(ENOSPC);
    env_.device->FailRange(0, 16 * kMiB, /*reads=*/false, /*writes=*/true);
  }
  // What a background writeback pass does: write back everything, report to nobody.
  void BackgroundWriteback() {
    Status s = env_.cache->SyncAll();
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  }

  CacheEnv env_;
};

TEST_F(CacheErrseqTest, EveryHandleOpenAtTheErrorGetsItOnceWithItsErrno) {
  AddressSpace* as = env_.as.get();
  WritebackErrorCursor a = as->SampleWritebackError();
  WritebackErrorCursor b = as->SampleWritebackError();
  const std::vector<char> data = Pattern(1, 0, kMiB);
  WriteOk(as, 0, data);
  FillUp();
  BackgroundWriteback();
  // B fsyncs first: ENOSPC, as it is, naming what failed.
  Status sb = as->Fsync(&b);
  EXPECT_TRUE(sb.IsNoSpace()) << sb.ToString();
  EXPECT_EQ(sb.ToErrno(), ENOSPC);
  EXPECT_NE(sb.message().find("writeback of 524288 bytes at pos"), std::string_view::npos)
      << sb.ToString();
  EXPECT_TRUE(as->Fsync(&b).ok());  // once per handle
  // A was open too: it gets the same error although B saw it first.
  Status sa = as->Fsync(&a);
  EXPECT_TRUE(sa.IsNoSpace()) << sa.ToString();
  EXPECT_TRUE(as->Fsync(&a).ok());
  // A handle opened after someone saw the error does not get it.
  WritebackErrorCursor c = as->SampleWritebackError();
  EXPECT_TRUE(as->Fsync(&c).ok());
  // The cursorless Fsync is a handle as old as the address space.
  EXPECT_TRUE(as->Fsync().IsNoSpace());
  EXPECT_TRUE(as->Fsync().ok());
  // The data stays readable and is counted as never written.
  std::vector<char> back(kMiB);
  ASSERT_TRUE(as->Read(0, back).ok());
  EXPECT_EQ(back, data);
  WritebackErrorState st = as->writeback_errors();
  EXPECT_EQ(st.unwritten_bytes, kMiB);
  EXPECT_GE(st.errors, 1u);
  EXPECT_TRUE(st.latest.IsNoSpace()) << st.latest.ToString();
}

TEST_F(CacheErrseqTest, AHandleOpenedAfterAnUnseenErrorStillGetsIt) {
  AddressSpace* as = env_.as.get();
  WriteOk(as, 0, Pattern(2, 0, 256 * kKiB));
  FillUp();
  BackgroundWriteback();
  WritebackErrorCursor late = as->SampleWritebackError();
  EXPECT_TRUE(as->Fsync(&late).IsNoSpace());
  EXPECT_TRUE(as->Fsync(&late).ok());
}

TEST_F(CacheErrseqTest, WriteBackReportsToNobodyAndMarksNothingSeen) {
  AddressSpace* as = env_.as.get();
  WritebackErrorCursor a = as->SampleWritebackError();
  WriteOk(as, 0, Pattern(3, 0, 256 * kKiB));
  FillUp();
  // What the export does at the last close: the pass's error is its result, for the log...
  Status w = as->WriteBack();
  EXPECT_TRUE(w.IsNoSpace()) << w.ToString();
  // ... and nobody has seen it: a handle opened now and the one open before both get it.
  WritebackErrorCursor reopened = as->SampleWritebackError();
  EXPECT_TRUE(as->Fsync(&reopened).IsNoSpace());
  EXPECT_TRUE(as->Fsync(&a).IsNoSpace());
}

TEST_F(CacheErrseqTest, ANewErrorAfterTheFirstWasSeenReachesEveryHandleAgain) {
  AddressSpace* as = env_.as.get();
  WritebackErrorCursor a = as->SampleWritebackError();
  WritebackErrorCursor b = as->SampleWritebackError();
  WriteOk(as, 0, Pattern(4, 0, 64 * kKiB));
  FillUp();
  BackgroundWriteback();
  EXPECT_TRUE(as->Fsync(&a).IsNoSpace());
  // Now the device fails with EIO instead; b never fsynced in between.
  env_.device->ClearFailures();
  env_.device->FailRange(kMiB, 64 * kKiB, /*reads=*/false, /*writes=*/true);
  WriteOk(as, kMiB, Pattern(5, kMiB, 64 * kKiB));
  EXPECT_TRUE(as->WriteBack().IsIOError());
  Status sa = as->Fsync(&a);
  EXPECT_TRUE(sa.IsIOError()) << sa.ToString();
  EXPECT_EQ(sa.ToErrno(), EIO);
  Status sb = as->Fsync(&b);  // the latest error, like the kernel
  EXPECT_TRUE(sb.IsIOError()) << sb.ToString();
  EXPECT_TRUE(as->Fsync(&a).ok());
  EXPECT_TRUE(as->Fsync(&b).ok());
}

TEST_F(CacheErrseqTest, UnwrittenBytesFallWhenTheDataIsWrittenOverOrTruncated) {
  AddressSpace* as = env_.as.get();
  WriteOk(as, kMiB, Pattern(6, kMiB, 64 * kKiB));
  WriteOk(as, 4 * kMiB, Pattern(7, 4 * kMiB, 64 * kKiB));
  FillUp();
  EXPECT_TRUE(as->WriteBack().IsNoSpace());
  EXPECT_EQ(as->writeback_errors().unwritten_bytes, 128 * kKiB);
  // Space again: rewriting the first range sends it to the device.
  env_.device->ClearFailures();
  WriteOk(as, kMiB, Pattern(8, kMiB, 64 * kKiB));
  EXPECT_TRUE(as->Fsync().IsNoSpace());  // the old error, reported once
  EXPECT_EQ(as->writeback_errors().unwritten_bytes, 64 * kKiB);
  std::vector<char> dev(64 * kKiB);
  ASSERT_TRUE(env_.device->Read(kMiB, dev.data(), dev.size()).ok());
  EXPECT_EQ(dev, Pattern(8, kMiB, 64 * kKiB));
  // Truncating the second range away discards the data nobody could write.
  ASSERT_TRUE(as->Truncate(2 * kMiB).ok());
  EXPECT_EQ(as->writeback_errors().unwritten_bytes, 0u);
  EXPECT_TRUE(as->Fsync().ok());
}

TEST_F(CacheErrseqTest, EvictedUnwrittenDataStaysCounted) {
  AddressSpace* as = env_.as.get();
  WriteOk(as, 0, Pattern(9, 0, 256 * kKiB));
  FillUp();
  EXPECT_TRUE(as->WriteBack().IsNoSpace());
  env_.device->ClearFailures();
  // Stream twice the cache through it: the failed (clean) folios are evicted, their data lost.
  std::vector<char> buf(kMiB);
  for (uint64_t pos = 0; pos < 16 * kMiB; pos += kMiB) ASSERT_TRUE(as->Read(pos, buf).ok());
  ASSERT_TRUE(as->Read(0, buf).ok());
  EXPECT_EQ(std::vector<char>(buf.begin(), buf.begin() + 256 * kKiB),
            std::vector<char>(256 * kKiB, 0));  // the device's content: the data is gone
  EXPECT_EQ(as->writeback_errors().unwritten_bytes, 256 * kKiB);
}

}  // namespace
}  // namespace folio
