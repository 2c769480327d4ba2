// Concurrency (run under TSan by `make test`): several threads, each with many requests in
// flight on one shared device, on disjoint ranges; every thread verifies its own data. Also a
// FaultDevice shared by threads (its mutex, crash log and per-thread queues).
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "folio/fault_device.h"
#include "base/test_seed.h"
#include "io/io_test_util.h"

namespace folio {
namespace {


struct Slot {
  IoRequest req;
  AlignedBuffer buf;
  const std::vector<char>* ref = nullptr;
  uint64_t base = 0;  // device offset of ref[0]
  int* done = nullptr;
  int* bad = nullptr;
  bool busy = false;
};

void OnDone(IoRequest* r) {
  auto* s = static_cast<Slot*>(r->ctx);
  s->busy = false;
  ++*s->done;
  if (!r->status.ok() || (r->op == IoOp::kRead &&
                          std::memcmp(r->buf, s->ref->data() + (r->offset - s->base),
                                      r->length) != 0)) {
    ++*s->bad;
  }
}

// One thread's workload on [base, base + bytes): random batches of 4 KiB-multiple reads and
// writes, up to 32 requests in flight, never two in flight on the same block.
void Worker(BlockDevice* dev, uint64_t base, uint64_t bytes, uint64_t seed, int rounds,
            int* bad_out) {
  std::mt19937_64 rng(seed);
  std::vector<char> ref(bytes, 0);
  {
    AlignedBuffer initial(bytes);  // what earlier users left in the range
    if (!dev->Read(base, initial.data(), bytes).ok()) ++*bad_out;
    std::memcpy(ref.data(), initial.data(), bytes);
  }
  std::vector<bool> block_busy(bytes / 4096, false);
  std::deque<Slot> slots(32);
  int done = 0, bad = 0, submitted = 0;
  for (Slot& s : slots) {
    s.buf = AlignedBuffer(4 * 4096);
    s.ref = &ref;
    s.base = base;
    s.done = &done;
    s.bad = &bad;
  }
  std::vector<IoRequest*> batch;
  for (int round = 0; round < rounds; ++round) {
    // Free the blocks of completed requests.
    std::fill(block_busy.begin(), block_busy.end(), false);
    for (Slot& s : slots) {
      if (!s.busy) continue;
      for (uint64_t b = (s.req.offset - base) / 4096; b < (s.req.offset - base + s.req.length) / 4096; ++b) {
        block_busy[b] = true;
      }
    }
    batch.clear();
    for (Slot& s : slots) {
      if (s.busy || rng() % 2) continue;
      const uint64_t n = 1 + rng() % 4;
      const uint64_t first = rng() % (bytes / 4096 - n);
      bool free = true;
      for (uint64_t b = first; b < first + n; ++b) free = free && !block_busy[b];
      if (!free) continue;
      for (uint64_t b = first; b < first + n; ++b) block_busy[b] = true;
      const bool write = rng() % 2;
      s.req.Reset(write ? IoOp::kWrite : IoOp::kRead, base + first * 4096, n * 4096, s.buf.data());
      s.req.done = OnDone;
      s.req.ctx = &s;
      if (write) {
        for (uint64_t i = 0; i < n * 4096; i += 64) s.buf.data()[i] = static_cast<char>(rng());
        std::memcpy(ref.data() + first * 4096, s.buf.data(), n * 4096);
      }
      s.busy = true;
      batch.push_back(&s.req);
    }
    if (!dev->Submit(batch).ok()) ++bad;
    submitted += static_cast<int>(batch.size());
    if (!dev->Poll(rng() % 4).ok()) ++bad;
  }
  if (!io_test::Drain(dev)) ++bad;
  if (done != submitted) ++bad;
  AlignedBuffer all(bytes);
  if (!dev->Read(base, all.data(), bytes).ok() || std::memcmp(all.data(), ref.data(), bytes) != 0) {
    ++bad;
  }
  *bad_out += bad;
}

void RunThreads(BlockDevice* dev, int threads, uint64_t per_thread_bytes, int rounds) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::vector<std::thread> ts;
  std::vector<int> bad(threads, 0);
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back(Worker, dev, i * per_thread_bytes, per_thread_bytes, seed + i, rounds, &bad[i]);
  }
  for (auto& t : ts) t.join();
  for (int i = 0; i < threads; ++i) EXPECT_EQ(bad[i], 0) << "thread " << i;
  DeviceStatsSnapshot st = dev->stats();
  EXPECT_GT(st.read_requests, 0u);
  EXPECT_GT(st.write_requests, 0u);
  EXPECT_EQ(st.errors, 0u);
}

TEST(IoConcurrency, UringDeviceManyThreadsDisjointRanges) {
  FOLIO_SKIP_WITHOUT_IO_URING();
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.engine = FileEngine::kUring;
  o.create = true;
  o.size_bytes = 16 << 20;
  o.queue_depth = 16;
  auto dev = OpenFileDevice(dir.File("dev"), o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  RunThreads(dev->get(), 4, 1 << 20, 80);
}

TEST(IoConcurrency, SyncDeviceManyThreadsDisjointRanges) {
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.engine = FileEngine::kSync;
  o.create = true;
  o.size_bytes = 8 << 20;
  auto dev = OpenFileDevice(dir.File("dev"), o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  RunThreads(dev->get(), 3, 1 << 20, 50);
}

TEST(IoConcurrency, MemDeviceManyThreadsDisjointRanges) {
  MemDeviceOptions o;
  o.size_bytes = 16 << 20;
  auto dev = NewMemDevice(o);
  ASSERT_TRUE(dev.ok());
  RunThreads(dev->get(), 4, 1 << 20, 80);
}

TEST(IoConcurrency, FaultDeviceSharedByThreads) {
  MemDeviceOptions o;
  o.size_bytes = 8 << 20;
  auto fault = FaultDevice::Wrap(std::move(NewMemDevice(o)).value());
  fault->SetLatency(LatencyModel::Parse("fixed:5").value());
  RunThreads(fault.get(), 3, 1 << 20, 40);
  EXPECT_TRUE(fault->Flush().ok());
  EXPECT_GT(fault->latency_stats().requests, 0u);
}

// Threads come and go while the device lives (their rings are torn down at thread exit).
TEST(IoConcurrency, ShortLivedThreadsOnOneUringDevice) {
  FOLIO_SKIP_WITHOUT_IO_URING();
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.engine = FileEngine::kUring;
  o.create = true;
  o.size_bytes = 4 << 20;
  auto dev = OpenFileDevice(dir.File("dev"), o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  for (int wave = 0; wave < 5; ++wave) {
    std::vector<std::thread> ts;
    std::vector<int> bad(2, 0);
    for (int i = 0; i < 2; ++i) {
      ts.emplace_back(Worker, dev->get(), i * (1ull << 20), 1ull << 20, wave * 10 + i, 10, &bad[i]);
    }
    for (auto& t : ts) t.join();
    for (int b : bad) EXPECT_EQ(b, 0);
  }
}

}  // namespace
}  // namespace folio
