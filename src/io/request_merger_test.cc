#include "io/request_merger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

#include "base/test_seed.h"
#include "io/io_test_util.h"

namespace folio::io_internal {
namespace {

class MergerTest : public ::testing::Test {
 protected:
  // A request over memory of its own (non-contiguous with the others) unless buf is given.
  IoRequest* Req(IoOp op, uint64_t offset, uint64_t length, char* buf = nullptr) {
    reqs_.emplace_back();
    IoRequest* r = &reqs_.back();
    if (buf == nullptr && (op == IoOp::kRead || op == IoOp::kWrite)) {
      // A gap between buffers keeps them from coalescing.
      storage_.push_back(std::make_unique<char[]>(length + 64));
      buf = storage_.back().get();
    }
    r->Reset(op, offset, length, buf);
    return r;
  }
  size_t Build(std::initializer_list<IoRequest*> batch, uint64_t max_bytes = 1 << 20) {
    merger_.Clear();
    for (IoRequest* r : batch) merger_.Add(r);
    return merger_.Build(max_bytes);
  }
  std::vector<IoRequest*> Chain(const MergedRequest& m) {
    std::vector<IoRequest*> v;
    for (IoRequest* r = m.head; r != nullptr; r = r->next_in_merge) v.push_back(r);
    return v;
  }

  std::deque<IoRequest> reqs_;
  std::vector<std::unique_ptr<char[]>> storage_;
  RequestMerger merger_;
};

TEST_F(MergerTest, AdjacentWritesMergeInOffsetOrder) {
  IoRequest* c = Req(IoOp::kWrite, 8192, 4096);
  IoRequest* a = Req(IoOp::kWrite, 0, 4096);
  IoRequest* b = Req(IoOp::kWrite, 4096, 4096);
  EXPECT_EQ(Build({c, a, b}), 2u);
  ASSERT_EQ(merger_.requests().size(), 1u);
  const MergedRequest& m = merger_.requests()[0];
  EXPECT_EQ(m.offset, 0u);
  EXPECT_EQ(m.length, 12288u);
  EXPECT_EQ(m.nr_requests, 3u);
  EXPECT_EQ(Chain(m), (std::vector<IoRequest*>{a, b, c}));
  ASSERT_EQ(m.iov_count, 3u);
  EXPECT_EQ(merger_.iovecs(m)[0].iov_base, a->buf);
  EXPECT_EQ(merger_.iovecs(m)[2].iov_base, c->buf);
}

TEST_F(MergerTest, ContiguousBuffersCoalesceIntoOneSegment) {
  auto mem = std::make_unique<char[]>(16384);
  IoRequest* a = Req(IoOp::kRead, 0, 8192, mem.get());
  IoRequest* b = Req(IoOp::kRead, 8192, 8192, mem.get() + 8192);
  EXPECT_EQ(Build({a, b}), 1u);
  ASSERT_EQ(merger_.requests().size(), 1u);
  EXPECT_EQ(merger_.requests()[0].iov_count, 1u);
  EXPECT_EQ(merger_.iovecs(merger_.requests()[0])[0].iov_len, 16384u);
}

TEST_F(MergerTest, DifferentOpsGapsFlushAndTrimDoNotMerge) {
  IoRequest* r0 = Req(IoOp::kRead, 0, 4096);
  IoRequest* w1 = Req(IoOp::kWrite, 4096, 4096);
  IoRequest* w3 = Req(IoOp::kWrite, 12288, 4096);  // gap at 8192
  IoRequest* f = Req(IoOp::kFlush, 0, 0);
  IoRequest* f2 = Req(IoOp::kFlush, 0, 0);
  IoRequest* t0 = Req(IoOp::kTrim, 0, 4096);
  IoRequest* t1 = Req(IoOp::kTrim, 4096, 4096);
  EXPECT_EQ(Build({t1, f, w3, r0, f2, w1, t0}), 0u);
  auto out = merger_.requests();
  ASSERT_EQ(out.size(), 7u);
  // Sorted by (op, offset), ties in submission order.
  EXPECT_EQ(out[0].head, r0);
  EXPECT_EQ(out[1].head, w1);
  EXPECT_EQ(out[2].head, w3);
  EXPECT_EQ(out[3].head, f);
  EXPECT_EQ(out[4].head, f2);
  EXPECT_EQ(out[5].head, t0);
  EXPECT_EQ(out[6].head, t1);
  EXPECT_EQ(out[3].iov_count, 0u);
}

TEST_F(MergerTest, MaxRequestBytesBoundsMerging) {
  std::vector<IoRequest*> batch;
  merger_.Clear();
  for (int i = 0; i < 20; ++i) merger_.Add(Req(IoOp::kWrite, i * 4096ull, 4096));
  EXPECT_EQ(merger_.Build(16384), 15u);
  auto out = merger_.requests();
  ASSERT_EQ(out.size(), 5u);
  for (const auto& m : out) EXPECT_EQ(m.length, 16384u);
}

// A device may take larger reads than writes (Folio FS's file devices: a readahead window is
// one read, writeback completes in smaller steps): each op is merged up to its own bound.
TEST_F(MergerTest, WritesHaveABoundOfTheirOwn) {
  merger_.Clear();
  for (int i = 0; i < 16; ++i) merger_.Add(Req(IoOp::kRead, i * 4096ull, 4096));
  for (int i = 0; i < 16; ++i) merger_.Add(Req(IoOp::kWrite, i * 4096ull, 4096));
  EXPECT_EQ(merger_.Build(65536, 16384), 15u + 12u);
  auto out = merger_.requests();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].op, IoOp::kRead);
  EXPECT_EQ(out[0].length, 65536u);
  for (size_t i = 1; i < out.size(); ++i) {
    EXPECT_EQ(out[i].op, IoOp::kWrite);
    EXPECT_EQ(out[i].length, 16384u);
  }
  // 0: writes are bounded as reads are.
  merger_.Clear();
  for (int i = 0; i < 16; ++i) merger_.Add(Req(IoOp::kWrite, i * 4096ull, 4096));
  EXPECT_EQ(merger_.Build(65536, 0), 15u);
  ASSERT_EQ(merger_.requests().size(), 1u);
}

TEST_F(MergerTest, OversizedSingleRequestPassesWhole) {
  IoRequest* big = Req(IoOp::kRead, 0, 1 << 21);
  IoRequest* next = Req(IoOp::kRead, 1 << 21, 4096);
  EXPECT_EQ(Build({big, next}, 1 << 20), 0u);
  ASSERT_EQ(merger_.requests().size(), 2u);
  EXPECT_EQ(merger_.requests()[0].length, 1u << 21);
}

TEST_F(MergerTest, SegmentCap) {
  merger_.Clear();
  const uint32_t n = RequestMerger::kMaxSegments + 10;
  for (uint32_t i = 0; i < n; ++i) merger_.Add(Req(IoOp::kWrite, i * 512ull, 512));
  EXPECT_EQ(merger_.Build(1ull << 30), n - 2);
  auto out = merger_.requests();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].iov_count, RequestMerger::kMaxSegments);
  EXPECT_EQ(out[1].iov_count, 10u);
}

// Model: random batches; every original appears once, chains are exactly adjacent, in offset
// order, within limits, their iovecs reproduce the originals' buffers, and the output is
// maximal (no two consecutive outputs could have merged).
TEST_F(MergerTest, RandomBatchesModel) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  auto arena = std::make_unique<char[]>(1 << 22);
  for (int round = 0; round < 300; ++round) {
    reqs_.clear();
    merger_.Clear();
    const uint64_t max_bytes = 4096ull << (rng() % 5);
    const int n = 1 + static_cast<int>(rng() % 64);
    std::set<IoRequest*> all;
    for (int i = 0; i < n; ++i) {
      IoOp op = static_cast<IoOp>(rng() % 4);
      uint64_t off = (rng() % 64) * 4096;
      uint64_t len = op == IoOp::kFlush ? 0 : 4096 * (1 + rng() % 4);
      char* buf = arena.get() + (rng() % 2 == 0 ? off : (rng() % 512) * 4096);
      IoRequest* r = Req(op, off, len, op == IoOp::kRead || op == IoOp::kWrite ? buf : nullptr);
      merger_.Add(r);
      all.insert(r);
    }
    size_t absorbed = merger_.Build(max_bytes);
    size_t seen = 0;
    const MergedRequest* prev = nullptr;
    for (const MergedRequest& m : merger_.requests()) {
      auto chain = Chain(m);
      ASSERT_EQ(chain.size(), m.nr_requests);
      uint64_t pos = m.offset;
      std::vector<std::pair<char*, size_t>> expect;
      for (IoRequest* r : chain) {
        ASSERT_EQ(all.erase(r), 1u);
        EXPECT_EQ(r->op, m.op);
        EXPECT_EQ(r->offset, pos);
        pos += r->length;
        if (!expect.empty() && expect.back().first + expect.back().second == r->buf) {
          expect.back().second += r->length;
        } else if (m.iov_count > 0) {
          expect.emplace_back(r->buf, r->length);
        }
      }
      EXPECT_EQ(pos, m.offset + m.length);
      if (m.nr_requests > 1) {
        EXPECT_LE(m.length, max_bytes);
      }
      ASSERT_EQ(expect.size(), m.iov_count);
      for (uint32_t i = 0; i < m.iov_count; ++i) {
        EXPECT_EQ(merger_.iovecs(m)[i].iov_base, expect[i].first);
        EXPECT_EQ(merger_.iovecs(m)[i].iov_len, expect[i].second);
      }
      if (prev != nullptr && (m.op == IoOp::kRead || m.op == IoOp::kWrite) && prev->op == m.op &&
          prev->offset + prev->length == m.offset) {
        EXPECT_GT(prev->length + m.head->length, max_bytes) << "mergeable neighbours left apart";
      }
      seen += m.nr_requests;
      prev = &m;
    }
    EXPECT_TRUE(all.empty());
    EXPECT_EQ(seen, static_cast<size_t>(n));
    EXPECT_EQ(absorbed, n - merger_.requests().size());
  }
}

}  // namespace
}  // namespace folio::io_internal
