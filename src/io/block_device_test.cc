// Tests every BlockDevice engine (io_uring file, pread/pwrite file, memory) against the same
// contract: a model test against a reference byte vector with many requests in flight, merging
// and its statistics, validation errors, flush / trim, short reads at end of file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "folio/block_device.h"
#include "base/test_seed.h"
#include "io/io_test_util.h"

namespace folio {
namespace {


enum class Engine { kUring, kSync, kMem };

std::string EngineName(const ::testing::TestParamInfo<Engine>& info) {
  switch (info.param) {
    case Engine::kUring: return "Uring";
    case Engine::kSync: return "Sync";
    case Engine::kMem: return "Mem";
  }
  return "Unknown";
}

class DeviceTest : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    if (GetParam() == Engine::kUring) FOLIO_SKIP_WITHOUT_IO_URING();
  }
  std::unique_ptr<BlockDevice> Open(uint64_t size_bytes, uint32_t queue_depth = 32,
                                    uint64_t max_request_bytes = 1 << 20) {
    if (GetParam() == Engine::kMem) {
      MemDeviceOptions o;
      o.size_bytes = size_bytes;
      o.queue_depth = queue_depth;
      o.max_request_bytes = max_request_bytes;
      auto dev = NewMemDevice(o);
      EXPECT_TRUE(dev.ok()) << dev.status().ToString();
      return dev.ok() ? std::move(dev).value() : nullptr;
    }
    FileDeviceOptions o;
    o.engine = GetParam() == Engine::kUring ? FileEngine::kUring : FileEngine::kSync;
    o.create = true;
    o.size_bytes = size_bytes;
    o.queue_depth = queue_depth;
    o.max_request_bytes = max_request_bytes;
    path_ = dir_.File("dev" + std::to_string(++files_));
    auto dev = OpenFileDevice(path_, o);
    EXPECT_TRUE(dev.ok()) << dev.status().ToString();
    return dev.ok() ? std::move(dev).value() : nullptr;
  }
  bool is_file() const { return GetParam() != Engine::kMem; }

  io_test::TempDir dir_;
  std::string path_;
  int files_ = 0;
};

// One request of the model test with its own buffer.
struct Op {
  IoRequest req;
  AlignedBuffer buf;
  uint64_t capacity = 0;
  std::vector<char>* ref = nullptr;
  int* callbacks = nullptr;
  int* mismatches = nullptr;
  bool in_flight = false;
};

void OnModelDone(IoRequest* r) {
  Op* op = static_cast<Op*>(r->ctx);
  ++*op->callbacks;
  op->in_flight = false;
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
  if (r->op == IoOp::kRead &&
      std::memcmp(r->buf, op->ref->data() + r->offset, r->length) != 0) {
    ++*op->mismatches;
  }
}

bool Overlaps(const std::deque<Op>& ops, uint64_t off, uint64_t len) {
  for (const Op& o : ops) {
    if (o.in_flight && off < o.req.offset + o.req.length && o.req.offset < off + len) return true;
  }
  return false;
}

// Random batches of reads and writes (runs of adjacent ones included) with many requests in
// flight from one thread, checked against a reference vector; then a full read-back.
TEST_P(DeviceTest, RandomBatchesMatchReference) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const uint64_t size = 8 << 20;
  auto dev = Open(size, 16, 64 << 10);
  ASSERT_NE(dev, nullptr);
  const uint64_t block = std::max<uint64_t>(dev->logical_block_bytes(), 512);
  std::vector<char> ref(size, 0);
  std::deque<Op> ops(96);
  int callbacks = 0, mismatches = 0, submitted = 0;
  uint64_t reads = 0, writes = 0;
  for (Op& o : ops) {
    o.capacity = 32 * block;
    o.buf = AlignedBuffer(o.capacity);
    o.ref = &ref;
    o.callbacks = &callbacks;
    o.mismatches = &mismatches;
  }
  std::vector<IoRequest*> batch;
  for (int round = 0; round < 150; ++round) {
    batch.clear();
    const bool run = rng() % 3 == 0;  // a run of adjacent requests of one op
    const IoOp run_op = rng() % 2 ? IoOp::kRead : IoOp::kWrite;
    uint64_t next_off = (rng() % (size / block / 2)) * block;
    const int want = 1 + static_cast<int>(rng() % 24);
    for (Op& o : ops) {
      if (static_cast<int>(batch.size()) == want) break;
      if (o.in_flight) continue;
      const uint64_t len = block * (1 + rng() % 8);
      const uint64_t off = run ? next_off : (rng() % ((size - len) / block)) * block;
      if (off + len > size || Overlaps(ops, off, len)) break;
      const IoOp op = run ? run_op : (rng() % 2 ? IoOp::kRead : IoOp::kWrite);
      o.req.Reset(op, off, len, o.buf.data());
      o.req.done = OnModelDone;
      o.req.ctx = &o;
      if (op == IoOp::kWrite) {
        for (uint64_t i = 0; i < len; ++i) o.buf.data()[i] = static_cast<char>(rng());
        std::memcpy(ref.data() + off, o.buf.data(), len);
        ++writes;
      } else {
        ++reads;
      }
      o.in_flight = true;
      batch.push_back(&o.req);
      next_off = off + len;
    }
    ASSERT_TRUE(dev->Submit(batch).ok());
    submitted += static_cast<int>(batch.size());
    ASSERT_EQ(dev->InFlight(), static_cast<size_t>(submitted - callbacks));
    if (rng() % 3 == 0) {
      auto n = dev->Poll(rng() % 8);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
    }
  }
  ASSERT_TRUE(io_test::Drain(dev.get()));
  EXPECT_EQ(callbacks, submitted);
  EXPECT_EQ(mismatches, 0);
  DeviceStatsSnapshot st = dev->stats();
  EXPECT_EQ(st.write_requests + st.write_merges, writes);
  EXPECT_EQ(st.read_requests + st.read_merges, reads);
  EXPECT_GT(st.write_merges + st.read_merges, 0u);
  EXPECT_LE(st.write_request_bytes.max, std::max<uint64_t>(64 << 10, 8 * block));
  EXPECT_EQ(st.errors, 0u);
  AlignedBuffer all(size);
  ASSERT_TRUE(dev->Read(0, all.data(), size).ok());
  EXPECT_EQ(std::memcmp(all.data(), ref.data(), size), 0);
}

TEST_P(DeviceTest, EightAdjacentWritesBecomeOneRequest) {
  auto dev = Open(1 << 20);
  ASSERT_NE(dev, nullptr);
  IoRequest reqs[8];
  AlignedBuffer bufs[8];
  IoRequest* batch[8];
  int done = 0;
  for (int i = 0; i < 8; ++i) {
    bufs[i] = AlignedBuffer(4096);
    std::memset(bufs[i].data(), 'a' + i, 4096);
    reqs[i].Reset(IoOp::kWrite, 65536 + i * 4096, 4096, bufs[i].data());
    reqs[i].ctx = &done;
    reqs[i].done = [](IoRequest* r) { ++*static_cast<int*>(r->ctx); };
    batch[7 - i] = &reqs[i];  // submitted in reverse: the merger sorts
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  ASSERT_TRUE(io_test::Drain(dev.get()));
  EXPECT_EQ(done, 8);
  for (const IoRequest& r : reqs) EXPECT_TRUE(r.status.ok() && r.completed.load());
  DeviceStatsSnapshot st = dev->stats();
  EXPECT_EQ(st.write_requests, 1u);
  EXPECT_EQ(st.write_merges, 7u);
  EXPECT_EQ(st.write_bytes, 32768u);
  auto buckets = st.write_request_bytes.NonEmpty();
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_LE(buckets[0].lo, 32768u);
  EXPECT_GE(buckets[0].hi, 32768u);
  EXPECT_EQ(buckets[0].count, 1u);
  EXPECT_EQ(st.write_request_bytes.max, 32768u);
  AlignedBuffer back(32768);
  ASSERT_TRUE(dev->Read(65536, back.data(), 32768).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back.data()[i * 4096 + 17], 'a' + i);
}

TEST_P(DeviceTest, MaxRequestBytesBoundsMergedRequests) {
  auto dev = Open(4 << 20, 32, 64 << 10);
  ASSERT_NE(dev, nullptr);
  AlignedBuffer buf(1 << 20);  // one contiguous buffer: 1 segment per request
  std::deque<IoRequest> reqs(256);
  std::vector<IoRequest*> batch;
  for (int i = 0; i < 256; ++i) {
    reqs[i].Reset(IoOp::kWrite, i * 4096ull, 4096, buf.data() + i * 4096);
    batch.push_back(&reqs[i]);
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  ASSERT_TRUE(io_test::Drain(dev.get()));
  DeviceStatsSnapshot st = dev->stats();
  EXPECT_EQ(st.write_requests, 16u);
  EXPECT_EQ(st.write_merges, 240u);
  EXPECT_EQ(st.write_request_bytes.max, 64u << 10);
}

Status SubmitOne(BlockDevice* dev, IoOp op, uint64_t off, uint64_t len, char* buf) {
  IoRequest r;
  r.Reset(op, off, len, buf);
  return dev->SubmitAndWait(&r);
}

TEST_P(DeviceTest, ValidationErrorsNameTheAlignmentAndSize) {
  auto dev = Open(1 << 20);
  ASSERT_NE(dev, nullptr);
  const uint32_t lbs = dev->logical_block_bytes();
  const std::string block = std::to_string(lbs) + "-byte logical block size";
  AlignedBuffer buf(1 << 16);
  Status s = SubmitOne(dev.get(), IoOp::kRead, 1000, lbs, buf.data());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find(dev->name() + ": offset 1000 is not a multiple of the " + block),
            std::string::npos) << s.ToString();
  s = SubmitOne(dev.get(), IoOp::kWrite, 0, lbs + 100, buf.data());
  EXPECT_NE(s.ToString().find("length " + std::to_string(lbs + 100) + " is not a multiple of the " +
                              block), std::string::npos) << s.ToString();
  s = SubmitOne(dev.get(), IoOp::kRead, 1 << 20, lbs, buf.data());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("ends beyond the device size 1M"), std::string::npos)
      << s.ToString();
  s = SubmitOne(dev.get(), IoOp::kTrim, (1 << 20) - lbs, 2 * lbs, nullptr);
  EXPECT_TRUE(s.IsInvalidArgument());
  s = SubmitOne(dev.get(), IoOp::kRead, 0, 0, buf.data());
  EXPECT_TRUE(s.IsInvalidArgument());
  s = SubmitOne(dev.get(), IoOp::kWrite, 0, lbs, nullptr);
  EXPECT_NE(s.ToString().find("has no buffer"), std::string::npos) << s.ToString();
  if (is_file()) {
    // O_DIRECT: buffer addresses must be aligned too.
    s = SubmitOne(dev.get(), IoOp::kRead, 0, lbs, buf.data() + 8);
    EXPECT_TRUE(s.IsInvalidArgument());
    EXPECT_NE(s.ToString().find("not aligned to " + std::to_string(lbs) + " bytes"),
              std::string::npos) << s.ToString();
  }
  EXPECT_EQ(dev->stats().errors, is_file() ? 7u : 6u);
  EXPECT_EQ(dev->stats().read_requests, 0u);
}

// An invalid request in a batch completes through the callback; its neighbours still run.
TEST_P(DeviceTest, InvalidRequestCompletesThroughCallback) {
  auto dev = Open(1 << 20);
  ASSERT_NE(dev, nullptr);
  AlignedBuffer buf(8192);
  IoRequest good, bad;
  int calls = 0;
  for (IoRequest* r : {&good, &bad}) {
    r->ctx = &calls;
    r->done = [](IoRequest* q) { ++*static_cast<int*>(q->ctx); };
  }
  good.Reset(IoOp::kWrite, 0, 4096, buf.data());
  bad.Reset(IoOp::kWrite, 4096 + 512 * 3 + 1, 4096, buf.data() + 4096);
  IoRequest* batch[] = {&good, &bad};
  ASSERT_TRUE(dev->Submit(batch).ok());
  EXPECT_EQ(calls, 0);  // callbacks never run inside Submit
  ASSERT_TRUE(io_test::Drain(dev.get()));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(good.status.ok());
  EXPECT_TRUE(bad.status.IsInvalidArgument());
}

TEST_P(DeviceTest, FlushAndTrim) {
  auto dev = Open(1 << 20);
  ASSERT_NE(dev, nullptr);
  AlignedBuffer buf(65536);
  std::memset(buf.data(), 0x5a, 65536);
  ASSERT_TRUE(dev->Write(0, buf.data(), 65536).ok());
  ASSERT_TRUE(dev->Flush().ok());
  ASSERT_TRUE(dev->supports_trim());
  Status s = dev->Trim(16384, 32768);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(dev->Read(0, buf.data(), 65536).ok());
  for (int i = 0; i < 65536; i += 512) {
    const char want = (i >= 16384 && i < 49152) ? 0 : 0x5a;
    ASSERT_EQ(buf.data()[i], want) << "at " << i;
  }
  DeviceStatsSnapshot st = dev->stats();
  EXPECT_EQ(st.flushes, 1u);
  EXPECT_EQ(st.trims, 1u);
}

// A callback may submit more I/O; SubmitAndWait waits for its own request while other
// completions of the thread run their callbacks normally.
TEST_P(DeviceTest, ReentrantCallbacksAndSubmitAndWait) {
  auto dev = Open(1 << 20, 4);
  ASSERT_NE(dev, nullptr);
  struct Chain {
    BlockDevice* dev = nullptr;
    IoRequest req;
    AlignedBuffer buf{4096};
    int remaining = 20;
    int calls = 0;
  } chain;
  chain.dev = dev.get();
  chain.req.Reset(IoOp::kWrite, 0, 4096, chain.buf.data());
  chain.req.ctx = &chain;
  chain.req.done = [](IoRequest* r) {
    auto* c = static_cast<Chain*>(r->ctx);
    ++c->calls;
    EXPECT_TRUE(r->status.ok());
    if (--c->remaining > 0) {
      r->Reset(IoOp::kWrite, c->remaining * 4096ull, 4096, c->buf.data());
      IoRequest* again[] = {r};
      EXPECT_TRUE(c->dev->Submit(again).ok());
    }
  };
  IoRequest* first[] = {&chain.req};
  ASSERT_TRUE(dev->Submit(first).ok());
  AlignedBuffer other(4096);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(dev->Read(512 << 10, other.data(), 4096).ok());
  ASSERT_TRUE(io_test::Drain(dev.get()));
  EXPECT_EQ(chain.calls, 20);
}

TEST_P(DeviceTest, MoreThanQueueDepthInOneBatch) {
  auto dev = Open(4 << 20, 4);
  ASSERT_NE(dev, nullptr);
  AlignedBuffer buf(200 * 8192);
  std::deque<IoRequest> reqs(200);
  std::vector<IoRequest*> batch;
  for (int i = 0; i < 200; ++i) {
    std::memset(buf.data() + i * 8192, i, 8192);
    // Gaps between requests: no merging, 200 device requests through 4 slots.
    reqs[i].Reset(IoOp::kWrite, i * 16384ull, 8192, buf.data() + i * 8192);
    batch.push_back(&reqs[i]);
  }
  ASSERT_TRUE(dev->Submit(batch).ok());
  EXPECT_EQ(dev->InFlight(), 200u);
  ASSERT_TRUE(io_test::Drain(dev.get()));
  EXPECT_EQ(dev->stats().write_requests, 200u);
  AlignedBuffer back(8192);
  for (int i = 0; i < 200; i += 37) {
    ASSERT_TRUE(dev->Read(i * 16384ull, back.data(), 8192).ok());
    EXPECT_EQ(back.data()[100], static_cast<char>(i));
  }
}

// The thread that used a device exits first, or the device dies first: both clean up.
TEST_P(DeviceTest, PerThreadStateLifetimes) {
  auto dev = Open(1 << 20);
  ASSERT_NE(dev, nullptr);
  AlignedBuffer buf(4096);
  std::thread t([&] { EXPECT_TRUE(dev->Write(0, buf.data(), 4096).ok()); });
  t.join();
  ASSERT_TRUE(dev->Write(4096, buf.data(), 4096).ok());
  dev.reset();  // destroys this thread's state while the thread lives
  auto dev2 = Open(1 << 20);
  ASSERT_NE(dev2, nullptr);
  ASSERT_TRUE(dev2->Write(0, buf.data(), 4096).ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, DeviceTest,
                         ::testing::Values(Engine::kUring, Engine::kSync, Engine::kMem), EngineName);

// Counters are kept either way; the request size and latency histograms only when asked for
// (a device made per cached file keeps none).
TEST(DeviceStatsTest, HistogramsAreKeptOnlyWhenAskedFor) {
  DeviceStats with;
  DeviceStats without(/*histograms=*/false);
  for (DeviceStats* s : {&with, &without}) {
    s->RecordRequest(IoOp::kRead, 4096, 1000);
    s->RecordRequest(IoOp::kWrite, 65536, 2000);
  }
  const DeviceStatsSnapshot a = with.Snapshot();
  const DeviceStatsSnapshot b = without.Snapshot();
  EXPECT_EQ(a.read_requests, 1u);
  EXPECT_EQ(b.read_requests, 1u);
  EXPECT_EQ(b.write_bytes, 65536u);
  EXPECT_EQ(a.read_request_bytes.count, 1u);
  EXPECT_EQ(a.latency_ns.count, 2u);
  EXPECT_EQ(b.read_request_bytes.count, 0u);
  EXPECT_EQ(b.write_request_bytes.count, 0u);
  EXPECT_EQ(b.latency_ns.count, 0u);
  with.Reset();
  without.Reset();
  EXPECT_EQ(with.Snapshot().latency_ns.count, 0u);
  EXPECT_EQ(without.Snapshot().read_requests, 0u);
}

}  // namespace
}  // namespace folio
