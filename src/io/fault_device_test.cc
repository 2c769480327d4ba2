#include "folio/fault_device.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <random>

#include "base/test_seed.h"
#include "io/io_test_util.h"

namespace folio {
namespace {

using io_test::Drain;

std::unique_ptr<BlockDevice> Mem(uint64_t size = 1 << 20, uint32_t lbs = 512) {
  MemDeviceOptions o;
  o.size_bytes = size;
  o.logical_block_bytes = lbs;
  return std::move(NewMemDevice(o)).value();
}

std::string ReadAll(BlockDevice* dev, uint64_t offset, uint64_t length) {
  AlignedBuffer buf(length);
  Status s = dev->Read(offset, buf.data(), length);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::string(buf.data(), length);
}

// "" when equal, else where and how a differs from b (keeps failure output readable).
std::string Diff(const std::string& a, const std::string& b) {
  if (a == b) return "";
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  size_t j = a.size();
  while (a[j - 1] == b[j - 1]) --j;
  return "differs in [" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

Status WriteFill(BlockDevice* dev, uint64_t offset, uint64_t length, char c) {
  AlignedBuffer buf(length);
  std::memset(buf.data(), c, length);
  return dev->Write(offset, buf.data(), length);
}

TEST(FaultDevice, FailNthCountsRequestsAsSubmitted) {
  auto dev = FaultDevice::Wrap(Mem());
  EXPECT_EQ(dev->name(), "fault(mem:1M)");
  dev->FailNth(5);
  // One batch of 8 adjacent writes: the 5th in submission order fails, the rest still merge.
  AlignedBuffer buf(8 * 4096);
  std::memset(buf.data(), 'w', 8 * 4096);
  std::deque<IoRequest> reqs(8);
  std::vector<IoRequest*> batch;
  for (int i = 0; i < 8; ++i) {
    reqs[i].Reset(IoOp::kWrite, (7 - i) * 4096ull, 4096, buf.data() + (7 - i) * 4096);
    batch.push_back(&reqs[i]);
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  ASSERT_TRUE(Drain(dev.get()));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(reqs[i].status.ok(), i != 4) << i << ": " << reqs[i].status.ToString();
  }
  EXPECT_NE(reqs[4].status.ToString().find("injected error on write of 4096 bytes at offset 12288"),
            std::string::npos) << reqs[4].status.ToString();
  EXPECT_EQ(dev->injected_errors(), 1u);
  EXPECT_EQ(ReadAll(dev.get(), 12288, 4096), std::string(4096, '\0'));
  EXPECT_EQ(ReadAll(dev.get(), 16384, 4096), std::string(4096, 'w'));
  // Offsets 0..3 and 4..7 (blocks 0-2 and 4-7) merged in the wrapper and in the inner device.
  EXPECT_EQ(dev->stats().write_requests, 2u);
  EXPECT_EQ(dev->stats().write_merges, 5u);
  EXPECT_EQ(dev->stats().errors, 1u);
  EXPECT_EQ(dev->inner()->stats().write_merges, 5u);
}

TEST(FaultDevice, FailNthOfOneOpAndFailRange) {
  auto dev = FaultDevice::Wrap(Mem());
  dev->FailNthOf(IoOp::kRead, 2);
  ASSERT_TRUE(WriteFill(dev.get(), 0, 4096, 'a').ok());
  ASSERT_TRUE(WriteFill(dev.get(), 4096, 4096, 'b').ok());
  AlignedBuffer buf(4096);
  EXPECT_TRUE(dev->Read(0, buf.data(), 4096).ok());
  EXPECT_TRUE(dev->Read(0, buf.data(), 4096).IsIOError());
  EXPECT_TRUE(dev->Read(0, buf.data(), 4096).ok());
  dev->FailRange(8192, 4096, /*reads=*/true, /*writes=*/false);
  EXPECT_TRUE(WriteFill(dev.get(), 8192, 4096, 'c').ok());
  EXPECT_TRUE(dev->Read(4096, buf.data(), 8192 - 4096).ok());
  EXPECT_TRUE(dev->Read(8192 + 2048, buf.data(), 512).IsIOError());
  dev->FailRange(0, 512, false, true);
  EXPECT_TRUE(WriteFill(dev.get(), 0, 4096, 'z').IsIOError());
  EXPECT_TRUE(dev->Flush().ok());
  EXPECT_EQ(dev->injected_errors(), 3u);
  dev->ClearFailures();
  EXPECT_TRUE(dev->Read(8192, buf.data(), 4096).ok());
  EXPECT_EQ(buf.data()[0], 'c');
}

TEST(FaultDevice, InjectedErrnoMakesTheFailuresNoSpace) {
  auto dev = FaultDevice::Wrap(Mem());
  dev->SetInjectedErrno(ENOSPC);
  dev->FailRange(0, 4096, /*reads=*/false, /*writes=*/true);
  Status s = WriteFill(dev.get(), 0, 4096, 'a');
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_EQ(s.ToErrno(), ENOSPC);
  EXPECT_NE(s.message().find("injected error on write of 4096 bytes at offset 0"),
            std::string_view::npos) << s.ToString();
  // ClearFailures also restores EIO.
  dev->ClearFailures();
  dev->FailNthOf(IoOp::kWrite, 1);
  s = WriteFill(dev.get(), 0, 4096, 'b');
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(s.ToErrno(), EIO);
}

// As a truncated file: writes land, then the first read past the end fails and so does every
// request after it (also below the end); ClearFailures ends it.
TEST(FaultDevice, ShrinkIsSeenByAReadPastTheEndOrAFlushAndSticks) {
  for (bool by_flush : {false, true}) {
    SCOPED_TRACE(by_flush ? "flush" : "read");
    auto dev = FaultDevice::Wrap(Mem());
    dev->Shrink(8192);
    ASSERT_TRUE(WriteFill(dev.get(), 0, 16384, 'a').ok());
    AlignedBuffer buf(16384);
    ASSERT_TRUE(dev->Read(0, buf.data(), 8192).ok());
    Status s = by_flush ? dev->Flush() : dev->Read(4096, buf.data(), 8192);
    EXPECT_EQ(s.code(), StatusCode::kIOError);
    EXPECT_NE(s.ToString().find("the file shrank to 8192 bytes while in use"), std::string::npos)
        << s.ToString();
    EXPECT_TRUE(dev->Read(0, buf.data(), 4096).IsIOError());
    EXPECT_TRUE(WriteFill(dev.get(), 0, 4096, 'b').IsIOError());
    EXPECT_TRUE(dev->Flush().IsIOError());
    EXPECT_EQ(dev->injected_errors(), 1u);
    dev->ClearFailures();
    EXPECT_EQ(ReadAll(dev.get(), 0, 16384), std::string(16384, 'a'));
  }
}

TEST(FaultDevice, TornWriteLandsOnlyAPrefix) {
  auto dev = FaultDevice::Wrap(Mem());
  ASSERT_TRUE(WriteFill(dev.get(), 0, 16384, 'o').ok());
  dev->TearNextWrite(4096 + 100, /*report_error=*/true);
  Status s = WriteFill(dev.get(), 0, 16384, 'n');
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("torn write: 4096 of 16384"), std::string::npos) << s.ToString();
  std::string back = ReadAll(dev.get(), 0, 16384);
  EXPECT_EQ(Diff(back, std::string(4096, 'n') + std::string(12288, 'o')), "");
  dev->TearNextWrite(512, /*report_error=*/false);
  EXPECT_TRUE(WriteFill(dev.get(), 8192, 8192, 'q').ok());
  back = ReadAll(dev.get(), 8192, 8192);
  EXPECT_EQ(Diff(back, std::string(512, 'q') + std::string(7680, 'o')), "");
  EXPECT_TRUE(WriteFill(dev.get(), 8192, 8192, 'r').ok());  // only the next write is torn
  EXPECT_EQ(ReadAll(dev.get(), 8192, 8192), std::string(8192, 'r'));
  EXPECT_EQ(dev->injected_errors(), 2u);
}

// A workload of writes and flushes through the wrapper; the reference is the flushed image
// plus the list of unflushed writes. After Crash(kDropUnflushed) the device holds exactly the
// flushed image; after kRandomSubset, the flushed image plus some ordered subset.
class CrashModel {
 public:
  CrashModel(FaultDevice* dev, uint64_t seed, uint64_t size)
      : dev_(dev), rng_(seed), size_(size), flushed_(size, '\0') {}

  void Run(int ops, size_t max_unflushed) {
    for (int i = 0; i < ops; ++i) {
      if (rng_() % 6 == 0 || unflushed_.size() >= max_unflushed) {
        ASSERT_TRUE(dev_->Flush().ok());
        for (auto& [off, data] : unflushed_) std::memcpy(flushed_.data() + off, data.data(), data.size());
        unflushed_.clear();
        continue;
      }
      const uint64_t len = 4096 * (1 + rng_() % 4);
      const uint64_t off = 4096 * (rng_() % ((size_ - len) / 4096));
      std::string data(len, '\0');
      for (char& c : data) c = static_cast<char>(rng_());
      AlignedBuffer buf(len);
      std::memcpy(buf.data(), data.data(), len);
      ASSERT_TRUE(dev_->Write(off, buf.data(), len).ok());
      unflushed_.emplace_back(off, std::move(data));
    }
  }

  bool MatchesSubset(const std::string& image) const {
    const size_t n = unflushed_.size();
    for (uint64_t mask = 0; mask < (1ull << n); ++mask) {
      std::string c = flushed_;
      for (size_t i = 0; i < n; ++i) {
        if (mask & (1ull << i)) {
          std::memcpy(c.data() + unflushed_[i].first, unflushed_[i].second.data(),
                      unflushed_[i].second.size());
        }
      }
      if (c == image) return true;
    }
    return false;
  }

  const std::string& flushed() const { return flushed_; }
  size_t unflushed() const { return unflushed_.size(); }

 private:
  FaultDevice* dev_;
  std::mt19937_64 rng_;
  uint64_t size_;
  std::string flushed_;
  std::vector<std::pair<uint64_t, std::string>> unflushed_;
};

TEST(FaultDevice, CrashDropsExactlyTheUnflushedWrites) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  for (int round = 0; round < 20; ++round) {
    auto dev = FaultDevice::Wrap(Mem(256 << 10));
    CrashModel model(dev.get(), seed + round, 256 << 10);
    model.Run(40, 100);
    dev->Crash(CrashMode::kDropUnflushed, 0);
    AlignedBuffer buf(4096);
    Status s = dev->Read(0, buf.data(), 4096);
    EXPECT_TRUE(s.IsIOError());
    EXPECT_NE(s.ToString().find("device crashed"), std::string::npos);
    EXPECT_TRUE(dev->Flush().IsIOError());
    EXPECT_EQ(Diff(ReadAll(dev->inner(), 0, 256 << 10), model.flushed()), "") << "round " << round;
    dev->Restart();
    EXPECT_EQ(Diff(ReadAll(dev.get(), 0, 256 << 10), model.flushed()), "");
  }
}

TEST(FaultDevice, RandomSubsetCrashKeepsAnOrderedSubset) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  int nontrivial = 0;
  for (int round = 0; round < 20; ++round) {
    auto dev = FaultDevice::Wrap(Mem(128 << 10, 4096));
    CrashModel model(dev.get(), seed * 31 + round, 128 << 10);
    model.Run(30, 8);
    dev->Crash(CrashMode::kRandomSubset, seed + round);
    dev->Restart();
    const std::string image = ReadAll(dev.get(), 0, 128 << 10);
    EXPECT_TRUE(model.MatchesSubset(image)) << "round " << round;
    nontrivial += image != model.flushed();
  }
  EXPECT_GT(nontrivial, 0);
}

// Writes in flight at the crash complete with the crash error; the rollback waits for them.
TEST(FaultDevice, CrashWithWritesInFlight) {
  auto dev = FaultDevice::Wrap(Mem());
  ASSERT_TRUE(WriteFill(dev.get(), 0, 65536, 'f').ok());
  ASSERT_TRUE(dev->Flush().ok());
  AlignedBuffer buf(65536);
  std::memset(buf.data(), 'u', 65536);
  std::deque<IoRequest> reqs(16);
  std::vector<IoRequest*> batch;
  for (int i = 0; i < 16; ++i) {
    reqs[i].Reset(IoOp::kWrite, i * 4096ull, 4096, buf.data() + i * 4096);
    batch.push_back(&reqs[i]);
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  dev->Crash(CrashMode::kDropUnflushed, 0);
  ASSERT_TRUE(Drain(dev.get()));
  for (const IoRequest& r : reqs) EXPECT_TRUE(r.status.IsIOError());
  EXPECT_EQ(Diff(ReadAll(dev->inner(), 0, 65536), std::string(65536, 'f')), "");
  dev->Restart();
  EXPECT_TRUE(WriteFill(dev.get(), 0, 4096, 'x').ok());
}

TEST(FaultDevice, WrapsAnODirectFileDevice) {
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.create = true;
  o.size_bytes = 1 << 20;
  auto file = OpenFileDevice(dir.File("f"), o);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto dev = FaultDevice::Wrap(std::move(file).value());
  ASSERT_TRUE(WriteFill(dev.get(), 0, 8192, 'a').ok());
  ASSERT_TRUE(dev->Flush().ok());
  ASSERT_TRUE(WriteFill(dev.get(), 4096, 8192, 'b').ok());
  dev->Crash(CrashMode::kDropUnflushed, 0);
  dev->Restart();
  EXPECT_EQ(ReadAll(dev.get(), 0, 12288), std::string(8192, 'a') + std::string(4096, '\0'));
}

TEST(LatencyModel, ParseAndPrint) {
  for (const char* text : {"none", "fixed:250", "hdd:8000:150", "hdd:100:2000"}) {
    auto m = LatencyModel::Parse(text);
    ASSERT_TRUE(m.ok()) << text;
    EXPECT_EQ(m->ToString(), text);
  }
  auto hdd = LatencyModel::Parse("hdd");
  ASSERT_TRUE(hdd.ok());
  EXPECT_EQ(hdd->kind, LatencyModel::Kind::kHdd);
  EXPECT_EQ(hdd->seek_us, 8000u);
  EXPECT_EQ(hdd->bandwidth_bytes_per_s, 150ull << 20);
  for (const char* bad : {"", "fixed:", "fixed:x", "hdd:1", "hdd:1:0", "ssd", "hdd:a:b"}) {
    auto m = LatencyModel::Parse(bad);
    EXPECT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().ToString().find("hdd:SEEK_US:MBPS"), std::string::npos);
  }
}

// The hdd model charges a seek per request that jumps back or far ahead, the gap's media time
// for a short forward gap; its accounting (not wall-clock time) is what the test checks.
TEST(FaultDevice, HddModelChargesSeeksAndTransfer) {
  auto dev = FaultDevice::Wrap(Mem(4 << 20));
  LatencyModel m = LatencyModel::Parse("hdd:50:1000").value();
  const uint64_t seek_ns = 50000;
  const uint64_t transfer_ns = 4096ull * 1000000000 / (1000ull << 20);
  AlignedBuffer buf(4096);
  dev->SetLatency(m);
  for (int i = 0; i < 32; ++i) ASSERT_TRUE(dev->Read(i * 4096ull, buf.data(), 4096).ok());
  LatencyModelStats seq = dev->latency_stats();
  EXPECT_EQ(seq.requests, 32u);
  EXPECT_EQ(seq.seeks, 1u);
  EXPECT_EQ(seq.busy_ns, seek_ns + 32 * transfer_ns);
  // Backward jumps always seek: 32 reads walking down the device.
  dev->SetLatency(m);
  for (int i = 31; i >= 0; --i) ASSERT_TRUE(dev->Read(i * 65536ull, buf.data(), 4096).ok());
  LatencyModelStats rnd = dev->latency_stats();
  EXPECT_EQ(rnd.seeks, 32u);
  EXPECT_EQ(rnd.skips, 0u);
  EXPECT_EQ(rnd.busy_ns - seq.busy_ns, (rnd.seeks - seq.seeks) * seek_ns);
  // A short forward gap (4 KiB: 3.9 us at 1000 MiB/s, less than the 50 us seek) passes under
  // the head; a long one (1 MiB: 1 ms) is a seek.
  dev->SetLatency(m);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(dev->Read(i * 8192ull, buf.data(), 4096).ok());
  LatencyModelStats gaps = dev->latency_stats();
  EXPECT_EQ(gaps.seeks, 1u);
  EXPECT_EQ(gaps.skips, 7u);
  EXPECT_EQ(gaps.busy_ns, seek_ns + 8 * transfer_ns + 7 * transfer_ns);
  dev->SetLatency(m);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(dev->Read(i * 1048576ull, buf.data(), 4096).ok());
  EXPECT_EQ(dev->latency_stats().seeks, 3u);
  EXPECT_EQ(dev->latency_stats().skips, 0u);
  // The model sees merged requests: 8 adjacent writes in one batch cost one request.
  dev->SetLatency(m);
  AlignedBuffer big(32768);
  std::deque<IoRequest> reqs(8);
  std::vector<IoRequest*> batch;
  for (int i = 0; i < 8; ++i) {
    reqs[i].Reset(IoOp::kWrite, 1048576 + i * 4096ull, 4096, big.data() + i * 4096);
    batch.push_back(&reqs[i]);
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  ASSERT_TRUE(Drain(dev.get()));
  EXPECT_EQ(dev->latency_stats().requests, 1u);
  EXPECT_EQ(dev->latency_stats().busy_ns, seek_ns + 32768ull * 1000000000 / (1000ull << 20));
}

TEST(FaultDevice, FixedModelAndTrackingOff) {
  auto dev = FaultDevice::Wrap(Mem());
  dev->SetLatency(LatencyModel::Parse("fixed:20").value());
  dev->SetCrashTracking(false);
  ASSERT_TRUE(WriteFill(dev.get(), 0, 4096, 'k').ok());
  ASSERT_TRUE(WriteFill(dev.get(), 8192, 4096, 'k').ok());
  EXPECT_EQ(dev->latency_stats().requests, 2u);
  EXPECT_EQ(dev->latency_stats().busy_ns, 40000u);
  // Without tracking a crash only fails I/O; nothing is rolled back.
  dev->Crash(CrashMode::kDropUnflushed, 0);
  EXPECT_TRUE(WriteFill(dev.get(), 0, 4096, 'z').IsIOError());
  dev->Restart();
  EXPECT_EQ(ReadAll(dev.get(), 0, 4096), std::string(4096, 'k'));
  EXPECT_EQ(dev->inner()->stats().read_requests, 1u);  // no flushed-image reads were needed
}

TEST(FaultDevice, WrapUnownedLeavesInnerAlive) {
  auto inner = Mem();
  {
    auto dev = FaultDevice::WrapUnowned(inner.get());
    ASSERT_TRUE(WriteFill(dev.get(), 0, 4096, 'p').ok());
    ASSERT_TRUE(dev->Flush().ok());
  }
  EXPECT_EQ(ReadAll(inner.get(), 0, 4096), std::string(4096, 'p'));
}

}  // namespace
}  // namespace folio
