// Model test of CrashLog: a simulated device where every write lands when it is issued, random
// completions and flushes, then a crash. The post-crash image must equal the flushed image
// (reference: initial contents + every write a completed flush covered, in order) plus some
// subset of the remaining writes applied in submission order; exactly the flushed image for
// kDropUnflushed.
#include "io/crash_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "base/test_seed.h"
#include "io/io_test_util.h"

namespace folio::io_internal {
namespace {

constexpr uint32_t kBlock = 512;
constexpr uint64_t kBlocks = 64;  // the default device; kWideBlocks spans table leaves and slabs
constexpr uint64_t kWideBlocks = 2048;

struct ModelWrite {
  uint64_t id;
  uint64_t offset;
  std::string data;  // empty: trim (zeros)
  uint64_t length;
  uint64_t completion = 0;  // order of completion, 0 while in flight
  bool durable = false;
};

void Apply(const ModelWrite& w, std::string* image) {
  if (w.data.empty()) {
    std::memset(image->data() + w.offset, 0, w.length);
  } else {
    std::memcpy(image->data() + w.offset, w.data.data(), w.length);
  }
}

class CrashLogModel {
 public:
  explicit CrashLogModel(uint64_t seed, uint64_t blocks = kBlocks)
      : rng_(seed), log_(kBlock), blocks_(blocks) {
    device_.resize(blocks_ * kBlock);
    for (char& c : device_) c = static_cast<char>(rng_());
    initial_ = device_;
  }

  // Runs random events until `unflushed_target` writes are unflushed or the budget ends.
  void Run(int events, size_t max_unflushed) {
    for (int i = 0; i < events; ++i) {
      const int what = static_cast<int>(rng_() % 10);
      if (what < 4 && Unflushed().size() < max_unflushed) {
        IssueWrite();
      } else if (what < 7) {
        CompleteOne();
      } else if (what < 8) {
        flushes_.push_back(completions_);
        EXPECT_EQ(log_.FlushWatermark(), completions_);
      } else if (!flushes_.empty()) {
        const size_t k = rng_() % flushes_.size();
        const uint64_t mark = flushes_[k];
        flushes_.erase(flushes_.begin() + static_cast<std::ptrdiff_t>(k));
        log_.FlushCompleted(mark);
        for (ModelWrite& w : writes_) {
          if (w.completion != 0 && w.completion <= mark) w.durable = true;
        }
      }
    }
  }

  std::vector<const ModelWrite*> Unflushed() const {
    std::vector<const ModelWrite*> u;
    for (const ModelWrite& w : writes_) {
      if (!w.durable) u.push_back(&w);
    }
    return u;
  }

  std::string Flushed() const {
    std::string image = initial_;
    for (const ModelWrite& w : writes_) {
      if (w.durable) Apply(w, &image);
    }
    return image;
  }

  // Applies the crash image to the simulated device and returns it.
  std::string Crash(CrashMode mode, uint64_t seed) {
    for (const CrashLog::ImageRun& run : log_.CrashImage(mode, seed)) {
      EXPECT_LE(run.offset + run.data.size(), device_.size());
      std::memcpy(device_.data() + run.offset, run.data.data(), run.data.size());
    }
    return device_;
  }

  const CrashLog& log() const { return log_; }

 private:
  void IssueWrite() {
    const uint64_t len = kBlock * (1 + rng_() % 8);
    const uint64_t off = kBlock * (rng_() % (blocks_ - len / kBlock + 1));
    for (const ModelWrite& w : writes_) {
      // Callers never overlap writes in flight together (their order would be undefined).
      if (w.completion == 0 && off < w.offset + w.length && w.offset < off + len) return;
    }
    ModelWrite w;
    w.offset = off;
    w.length = len;
    if (rng_() % 5 != 0) {
      w.data.resize(len);
      for (char& c : w.data) c = static_cast<char>(rng_());
    }
    std::vector<CrashLog::Run> runs;
    log_.MissingRuns(off, len, &runs);
    for (const CrashLog::Run& r : runs) log_.Capture(r.offset, device_.data() + r.offset, r.length);
    w.id = log_.AddWrite(off, w.data.empty() ? nullptr : w.data.data(), len);
    Apply(w, &device_);  // lands at once; the crash decides whether it stays
    writes_.push_back(std::move(w));
  }

  void CompleteOne() {
    std::vector<ModelWrite*> pending;
    for (ModelWrite& w : writes_) {
      if (w.completion == 0) pending.push_back(&w);
    }
    if (pending.empty()) return;
    ModelWrite* w = pending[rng_() % pending.size()];
    w->completion = ++completions_;
    log_.CompleteWrite(w->id);
  }

  std::mt19937_64 rng_;
  CrashLog log_;
  const uint64_t blocks_;
  std::string device_, initial_;
  std::vector<ModelWrite> writes_;
  std::vector<uint64_t> flushes_;  // watermarks of flushes in flight
  uint64_t completions_ = 0;
};

// True if image == flushed + some subset of unflushed applied in order.
bool IsSubsetImage(const std::string& image, const std::string& flushed,
                   const std::vector<const ModelWrite*>& unflushed) {
  const size_t n = unflushed.size();
  for (uint64_t mask = 0; mask < (1ull << n); ++mask) {
    std::string candidate = flushed;
    for (size_t i = 0; i < n; ++i) {
      if (mask & (1ull << i)) Apply(*unflushed[i], &candidate);
    }
    if (candidate == image) return true;
  }
  return false;
}

TEST(CrashLog, DropUnflushedRestoresExactlyTheFlushedImage) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  for (int round = 0; round < 200; ++round) {
    CrashLogModel model(seed + round);
    model.Run(60, 1000);
    const std::string flushed = model.Flushed();
    EXPECT_EQ(model.Crash(CrashMode::kDropUnflushed, 0), flushed) << "round " << round;
  }
}

TEST(CrashLog, RandomSubsetIsFlushedPlusAnOrderedSubset) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  int nontrivial = 0;
  for (int round = 0; round < 150; ++round) {
    CrashLogModel model(seed * 7919 + round);
    model.Run(50, 10);
    const auto unflushed = model.Unflushed();
    ASSERT_LE(unflushed.size(), 10u);
    const std::string flushed = model.Flushed();
    const std::string image = model.Crash(CrashMode::kRandomSubset, seed + round);
    EXPECT_TRUE(IsSubsetImage(image, flushed, unflushed)) << "round " << round;
    if (image != flushed) ++nontrivial;
  }
  EXPECT_GT(nontrivial, 10) << "kRandomSubset never kept a write";
}

// A device of 2048 blocks: writes land in several leaves of the block table and need more
// slots than one slab holds, and flushes free slots that later captures reuse.
TEST(CrashLog, WideDeviceAcrossTableLeavesAndSlabs) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  size_t max_tracked = 0;
  for (int round = 0; round < 12; ++round) {
    CrashLogModel model(seed * 31 + round, kWideBlocks);
    model.Run(400, 1000);
    max_tracked = std::max(max_tracked, model.log().tracked_blocks());
    const std::string flushed = model.Flushed();
    EXPECT_EQ(model.Crash(CrashMode::kDropUnflushed, 0), flushed) << "round " << round;
  }
  for (int round = 0; round < 12; ++round) {
    CrashLogModel model(seed * 37 + round, kWideBlocks);
    model.Run(300, 6);
    const auto unflushed = model.Unflushed();
    const std::string image = model.Crash(CrashMode::kRandomSubset, seed + round);
    EXPECT_TRUE(IsSubsetImage(image, model.Flushed(), unflushed)) << "round " << round;
  }
  EXPECT_GT(max_tracked, 64u) << "never more blocks than one slab";
}

TEST(CrashLog, FlushForgetsBlocksNoUnflushedWriteTouches) {
  CrashLog log(kBlock);
  std::string data(4 * kBlock, 'x');
  std::vector<CrashLog::Run> runs;
  log.MissingRuns(0, 4 * kBlock, &runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].length, 4 * kBlock);
  log.Capture(0, std::string(4 * kBlock, 'o').data(), 4 * kBlock);
  const uint64_t a = log.AddWrite(0, data.data(), 2 * kBlock);
  const uint64_t b = log.AddWrite(2 * kBlock, data.data(), 2 * kBlock);
  runs.clear();
  log.MissingRuns(kBlock, 4 * kBlock, &runs);  // blocks 4 is new
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].offset, 4 * kBlock);
  log.CompleteWrite(a);
  const uint64_t mark = log.FlushWatermark();
  log.CompleteWrite(b);  // after the flush was submitted: not covered
  log.FlushCompleted(mark);
  EXPECT_EQ(log.unflushed_writes(), 1u);
  EXPECT_EQ(log.tracked_blocks(), 2u);
  auto image = log.CrashImage(CrashMode::kDropUnflushed, 0);
  ASSERT_EQ(image.size(), 1u);
  EXPECT_EQ(image[0].offset, 2 * kBlock);
  EXPECT_EQ(image[0].data, std::string(2 * kBlock, 'o'));
  log.FlushCompleted(log.FlushWatermark());
  EXPECT_EQ(log.unflushed_writes(), 0u);
  EXPECT_EQ(log.tracked_blocks(), 0u);
}

}  // namespace
}  // namespace folio::io_internal
