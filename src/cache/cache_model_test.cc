// THE page cache model test: seeded random mixes of Read / Write (any position and length),
// Invalidate, Truncate, Fsync, Advise (collapse included), policy changes and simulated
// crashes, over a FaultDevice on a MemDevice, with caches small enough to force eviction and
// writeback, compared byte for byte with a reference vector and size.
//
// Crash guarantee checked here (and documented in address_space_impl.h): after a crash each
// 4 KiB page holds its content as of the last completed Fsync, or a content it had at some
// later moment, never anything else. The model keeps, per page touched since the last Fsync,
// the hashes of every content it had since then.
//
// Dirty pages: the model keeps the pages written since the last Fsync (DirtyPagesReference).
// The cache's dirty bytes may never exceed 4 KiB per page of that set (a 4 KiB write into a
// 2 MiB folio dirties 4 KiB, not the folio), and are zero after an Fsync.
//
// Writeback errors (both mixes, rarely): one op arms an ENOSPC or EIO range on the fault device
// after an fsync, writes over it, makes a non-reporting pass (the error is certain by then),
// disarms and writes the range again whole. Open handles (cursors) fsync now and then; each
// result is checked against ErrseqReference (the errseq rules). Runs must show what they are
// for: large folios, splits and collapses happened, sequential write streams grew folios
// beyond their writes, partly up-to-date folios were read, and
// reclaim evicted folios (dirty ones too, after writing them back, in the 4k configurations
// without a flusher, whose dirty limit is above the memory).
//
// Two op mixes:
//   wide   lengths up to 1 MiB anywhere on the device, and whole-device checks: every path
//          (readahead ramps, large folios, split, collapse) with much data per op
//   hot    the many-ops run: mostly sub-page to 8 KiB ops, 99.5% of them inside a hot window
//          of an eighth of the cache memory that moves now and then (so eviction and
//          writeback keep running), rarer expensive ops: about 10 us per op, so the
//          default run does millions of operations
//
// FOLIO_SEED=<n> fixes the seed; FOLIO_MODEL_OPS=<n> overrides the op count
// (FOLIO_MODEL_OPS_DIVISOR scales it, test_model_ops.h). A run that has not shown every path
// by then goes on, up to 4x its ops, until it has (checked every 64 ops; it prints how many
// more it took): a third of random seeds of a short wide/fixed:16K run missed a rare event.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/crc32c.h"
#include "base/test_model_ops.h"
#include "base/test_seed.h"
#include "cache/cache_model_refs.h"
#include "cache/cache_test_util.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

using cache_test::kKiB;
using cache_test::kMiB;

#ifdef FOLIO_CACHE_MODEL_SLOW
constexpr uint64_t kOpsScale = 25;
#else
constexpr uint64_t kOpsScale = 1;
#endif

enum class Mix { kWide, kHot };

struct ModelParams {
  Mix mix;
  const char* policy;
  uint64_t device_bytes;
  uint64_t memory_bytes;
  int writeback_threads;
  bool collapse_scanner;
  uint64_t ops;
  uint64_t seed;
};

std::ostream& operator<<(std::ostream& os, const ModelParams& p) {
  return os << (p.mix == Mix::kHot ? "hot/" : "wide/") << p.policy << "/dev" << p.device_bytes / kMiB << "M/mem" << p.memory_bytes / kMiB
            << "M/wb" << p.writeback_threads << (p.collapse_scanner ? "/scan" : "");
}

// FOLIO_MODEL_TRACE=1 prints every operation (for debugging a failing seed).
bool Tracing() {
  static const bool on = std::getenv("FOLIO_MODEL_TRACE") != nullptr;
  return on;
}
#define MODEL_TRACE(...)                       \
  do {                                         \
    if (Tracing()) std::fprintf(stderr, __VA_ARGS__); \
  } while (0)

// CRC32C (hardware, tens of GB/s): the crash check compares page contents by hash.
uint64_t PageHash(const char* p) { return Crc32c(p, kPageBytes); }

class CacheModel {
 public:
  CacheModel(const ModelParams& p, uint64_t seed)
      : p_(p), rng_(seed), ref_(p.device_bytes, 0), size_(p.device_bytes), policy_(p.policy) {
    // Write data is copied from a random pool at a random offset (cheaper than generating it).
    pool_.resize(kPoolBytes + kMiB);
    for (uint64_t i = 0; i < pool_.size(); i += 8) {
      uint64_t v = rng_();
      std::memcpy(&pool_[i], &v, 8);
    }
    hot_bytes_ = std::min(p.device_bytes, std::max<uint64_t>(p.memory_bytes / 8, 256 * kKiB));
  }
  ~CacheModel() {
    as_.reset();
    cache_.reset();
    dev_.reset();
  }

  void Run(uint64_t ops);

 private:
  uint64_t Rand(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  void Open(bool new_cache);
  // Page history: call Touch(page range) before changing ref_, Record after.
  void Touch(uint64_t first, uint64_t last);
  void Record(uint64_t first, uint64_t last);
  uint64_t RandomLen();
  uint64_t RandomPos(uint64_t len);
  // Run's mixes: one op each.
  void WideOp();
  void HotOp();
  void ExpensiveOp();

  void OpWrite();
  void WriteAt(uint64_t pos, uint64_t len);
  void OpRead(uint64_t pos, uint64_t len);
  void OpSequentialRead();
  void OpSequentialWrite();
  void OpTruncate();
  void OpAdvise();
  void OpPolicy();
  void OpCrash();
  void VerifyAll();
  void VerifyDeviceAfterFsync();
  // Fsync, then maybe start a crash epoch.
  void OpFsync();
  // Writeback errors and handles (ErrseqReference).
  void OpWriteError();
  void OpHandle();
  // Checks an Fsync result against the reference's expectation for that handle.
  void ExpectFsync(const Status& s, StatusCode want, const char* who);
  // Every run must have exercised what it exists for (over every cache it used).
  void Accumulate(const PageCacheStats& s);
  struct Seen;
  void AddStats(const PageCacheStats& s, Seen* seen) const;
  // What the run has not shown yet (CheckCoverage's list), counting the open cache's stats.
  std::vector<std::string> NotShownYet() const;
  void CheckCoverage();
  // The 4k configurations without a flusher: a dirty limit above the memory (see Open).
  bool ReclaimWritesBack() const {
    return std::string_view(p_.policy) == "4k" && p_.writeback_threads == 0;
  }
  // The cache's dirty bytes against the dirty-range reference (see the top of the file).
  void CheckDirtyBytes(const char* after);

  const ModelParams p_;
  std::mt19937_64 rng_;
  std::vector<char> ref_;  // the whole device; always zero past size_
  uint64_t size_;
  std::string policy_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> history_;  // page -> content hashes
  // History (and the device's crash log) is kept only in "crash epochs": from an Fsync that
  // decided to track until the next crash. Crashes happen only in such epochs; the rest of
  // the run skips the cost of hashing every page version.
  bool tracking_ = false;
  std::unique_ptr<FaultDevice> dev_;
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<AddressSpace> as_;
  static constexpr uint64_t kPoolBytes = 2 * kMiB;
  std::vector<char> pool_;     // random bytes that writes copy from
  uint64_t hot_base_ = 0;      // hot mix: the window most ops fall in
  uint64_t hot_bytes_ = 0;
  std::vector<char> buf_;      // reused I/O buffer (large allocations are slow under ASan)
  std::vector<char> dev_buf_;  // the whole device, for checks
  cache_test::ErrseqReference errseq_;
  uint64_t error_ops_ = 0;     // OpWriteError runs
  uint64_t handle_fsyncs_ = 0;
  cache_test::DirtyPagesReference written_;
  struct Seen {
    uint64_t large_allocs = 0, splits = 0, collapses = 0, pages_not_read = 0, partial_fills = 0;
    uint64_t stream_folios = 0;
    uint64_t evictions = 0, evicted_dirty = 0, sparse_evictions = 0;
    uint64_t compactions = 0, compact_migrated = 0, compact_evicted = 0;
    uint64_t caches_opened = 0;
    uint64_t background_caches = 0, background_attempts = 0, background_blocks = 0;
    uint64_t background_reclaimed = 0;
  } seen_;  // summed over the caches of the run
};

void CacheModel::Open(bool new_cache) {
  if (dev_ == nullptr) dev_ = cache_test::NewFaultMem(p_.device_bytes);
  if (new_cache || cache_ == nullptr) {
    as_.reset();
    if (cache_ != nullptr) Accumulate(cache_->Stats());
    cache_.reset();
    PageCacheOptions o = cache_test::SmallCacheOptions(p_.memory_bytes, p_.policy);
    o.writeback_threads = p_.writeback_threads;
    o.collapse_scanner = p_.collapse_scanner;
    o.collapse_interval_ms = 2;
    o.dirty_writeback_ms = 2;
    o.dirty_expire_ms = 1 + Rand(10);  // the flusher writes expired data, not only excess
    // Compaction moves folios under every other operation (and the faults): mostly migrate
    // (the default), sometimes evict.
    o.compaction = Rand(4) == 0 ? CompactionMode::kEvict : CompactionMode::kMigrate;
    // Every other cache, the first included, also runs the background compactor beside the
    // model's operations (a run may open only one cache).
    o.compaction_background = seen_.caches_opened++ % 2 == 0;
    o.compaction_background_interval_ms = 1;
    // Some configurations have a dirty limit above the memory: writers never wait, so reclaim
    // meets dirty folios and has to write them back itself.
    if (ReclaimWritesBack()) o.dirty_bytes = 2 * p_.memory_bytes;
    auto c = PageCache::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cache_ = std::move(c).value();
  }
  AddressSpaceOptions ao;
  ao.name = "model";
  ao.override_policy = true;
  ao.policy = *FolioPolicy::Parse(policy_);
  auto as = cache_->Open(dev_.get(), ao);
  ASSERT_TRUE(as.ok()) << as.status().ToString();
  as_ = std::move(as).value();
  errseq_.Reset();
  written_.Reset(p_.device_bytes / kPageBytes);  // a new address space is clean
}

void CacheModel::Touch(uint64_t first, uint64_t last) {
  if (!tracking_) return;
  for (uint64_t pg = first; pg < last; ++pg) {
    auto [it, inserted] = history_.try_emplace(pg);
    if (inserted) it->second.push_back(PageHash(&ref_[pg * kPageBytes]));
  }
}

void CacheModel::Record(uint64_t first, uint64_t last) {
  if (!tracking_) return;
  for (uint64_t pg = first; pg < last; ++pg) {
    history_[pg].push_back(PageHash(&ref_[pg * kPageBytes]));
  }
}

uint64_t CacheModel::RandomLen() {
  uint64_t r = Rand(1000);
  if (p_.mix == Mix::kHot) {
    if (r < 700) return 1 + Rand(kPageBytes);
    if (r < 960) return 1 + Rand(8 * kKiB);
    if (r < 998) return 1 + Rand(64 * kKiB);
    return 1 + Rand(256 * kKiB);
  }
  if (r < 600) return 1 + Rand(kKiB);
  if (r < 850) return 1 + Rand(8 * kKiB);
  if (r < 960) return 1 + Rand(64 * kKiB);
  if (r < 995) return 1 + Rand(256 * kKiB);
  return 1 + Rand(kMiB);
}

uint64_t CacheModel::RandomPos(uint64_t len) {
  uint64_t limit = p_.device_bytes - len;
  uint64_t r = Rand(4);
  uint64_t pos = Rand(limit + 1);
  if (p_.mix == Mix::kHot && Rand(200) != 0) pos = std::min(limit, hot_base_ + Rand(hot_bytes_));
  if (r == 1) pos &= ~(kPageBytes - 1);
  if (r == 2) pos &= ~(64 * kKiB - 1);
  if (r == 3 && size_ > 0) pos = std::min(limit, Rand(size_ + 1));  // near or inside the file
  return pos;
}

void CacheModel::OpWrite() {
  uint64_t len = RandomLen();
  if (Rand(100) == 0) {
    // Past the device end: NoSpace, nothing changes.
    uint64_t pos = p_.device_bytes - len / 2;
    Result<size_t> n = as_->Write(pos, std::vector<char>(len, 'x'));
    ASSERT_FALSE(n.ok());
    ASSERT_TRUE(n.status().IsNoSpace()) << n.status().ToString();
    return;
  }
  WriteAt(RandomPos(len), len);
}

void CacheModel::WriteAt(uint64_t pos, uint64_t len) {
  if (buf_.size() < len) buf_.resize(len);
  std::span<char> data(buf_.data(), len);
  const char tag = static_cast<char>(rng_());
  if (Rand(4) == 0) {
    std::memset(data.data(), tag, len);
  } else {
    std::memcpy(data.data(), &pool_[Rand(kPoolBytes)], len);
  }
  const uint64_t first = pos / kPageBytes, last = (pos + len + kPageBytes - 1) / kPageBytes;
  Touch(first, last);
  std::memcpy(&ref_[pos], data.data(), len);
  Record(first, last);
  written_.Mark(first, last);
  if (pos > size_) written_.MarkPartialPage(size_);  // the old last page's tail is zeroed
  size_ = std::max(size_, pos + len);
  MODEL_TRACE("write %lu at %lu (pages %lu..%lu)\n", len, pos, first, last);
  Result<size_t> n = as_->Write(pos, data);
  ASSERT_TRUE(n.ok()) << "write " << len << " at " << pos << ": " << n.status().ToString();
  ASSERT_EQ(*n, len);
  ASSERT_EQ(as_->size(), size_);
  if (Rand(8) == 0) CheckDirtyBytes("a write");
}

void CacheModel::OpRead(uint64_t pos, uint64_t len) {
  MODEL_TRACE("read %lu at %lu\n", len, pos);
  if (buf_.size() < len) buf_.resize(len);
  std::span<char> out(buf_.data(), len);
  Result<size_t> n = as_->Read(pos, out);
  ASSERT_TRUE(n.ok()) << "read " << len << " at " << pos << ": " << n.status().ToString();
  uint64_t want = pos >= size_ ? 0 : std::min(len, size_ - pos);
  ASSERT_EQ(*n, want) << "read " << len << " at " << pos << " size " << size_;
  if (want > 0 && std::memcmp(out.data(), &ref_[pos], want) != 0) {
    uint64_t i = 0;
    while (out[i] == ref_[pos + i]) ++i;
    FAIL() << "read " << len << " at " << pos << ": first difference at pos " << pos + i
           << " (page " << (pos + i) / kPageBytes << "): got " << int(out[i]) << " want "
           << int(ref_[pos + i]);
  }
}

void CacheModel::OpSequentialRead() {
  uint64_t chunk = uint64_t{4096} << Rand(5);
  uint64_t total = (256 * kKiB) << Rand(4);
  uint64_t pos = Rand(p_.device_bytes / chunk) * chunk;
  for (uint64_t done = 0; done < total && pos + done < p_.device_bytes; done += chunk) {
    OpRead(pos + done, chunk);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A sequential write stream (each write starts where the last ended): page multiples or odd
// lengths, from a random place or appending at the end of file, so the dynamic policy grows
// the stream's new folios beyond its writes (pages before the write unread, or zero above the
// old size).
void CacheModel::OpSequentialWrite() {
  const uint64_t chunk = Rand(2) ? uint64_t{4096} << Rand(6) : 1 + Rand(70 * kKiB);
  const uint64_t total = (128 * kKiB) << Rand(4);
  uint64_t pos = Rand(2) ? size_ : Rand(p_.device_bytes / kPageBytes) * kPageBytes + Rand(3);
  MODEL_TRACE("sequential writes of %lu at %lu\n", chunk, pos);
  for (uint64_t done = 0; done < total && pos + chunk <= p_.device_bytes; done += chunk) {
    WriteAt(pos, chunk);
    if (::testing::Test::HasFatalFailure()) return;
    pos += chunk;
  }
}

void CacheModel::OpTruncate() {
  uint64_t old_size = size_;
  uint64_t new_size;
  if (Rand(p_.mix == Mix::kHot ? 64 : 8) == 0) {
    new_size = Rand(p_.device_bytes + 1);
  } else {
    // Mostly around the current end (large shrinks make large zero ranges to write).
    uint64_t delta = Rand(256 * kKiB);
    new_size = Rand(2) ? old_size - std::min(old_size, delta)
                       : std::min(p_.device_bytes, old_size + delta);
  }
  if (Rand(3) == 0) new_size &= ~(kPageBytes - 1);
  if (new_size < old_size) {
    const uint64_t first = new_size / kPageBytes;
    const uint64_t last = (old_size + kPageBytes - 1) / kPageBytes;
    Touch(first, last);
    std::memset(&ref_[new_size], 0, old_size - new_size);
    Record(first, last);
  }
  written_.MarkPartialPage(std::min(old_size, new_size));  // its tail is zeroed in the cache
  size_ = new_size;
  MODEL_TRACE("truncate %lu -> %lu\n", old_size, new_size);
  Status s = as_->Truncate(new_size);
  ASSERT_TRUE(s.ok()) << "truncate " << old_size << " -> " << new_size << ": " << s.ToString();
  ASSERT_EQ(as_->size(), size_);
}

void CacheModel::OpAdvise() {
  static const Advice kAdvice[] = {Advice::kNormal,   Advice::kSequential, Advice::kRandom,
                                   Advice::kWillNeed, Advice::kDontNeed,   Advice::kCollapse};
  Advice a = kAdvice[Rand(6)];
  uint64_t len, pos;
  if (p_.mix == Mix::kHot) {
    // Sequential advice holds for the whole file until the next normal one, and makes every
    // miss read a large window: keep it to a small share of the run.
    static const Advice kHotAdvice[] = {
        Advice::kNormal,   Advice::kNormal,   Advice::kNormal,   Advice::kNormal,
        Advice::kNormal,   Advice::kNormal,   Advice::kSequential, Advice::kRandom,
        Advice::kRandom,   Advice::kWillNeed, Advice::kWillNeed, Advice::kWillNeed,
        Advice::kWillNeed, Advice::kDontNeed, Advice::kDontNeed, Advice::kDontNeed,
        Advice::kDontNeed, Advice::kCollapse, Advice::kCollapse, Advice::kCollapse};
    a = kHotAdvice[Rand(20)];
    // Whole-device advice (willneed reads all of it) rarely: it would evict the hot window.
    len = Rand(100) == 0 ? p_.device_bytes : RandomLen() * 4;
    pos = RandomPos(std::min(len, p_.device_bytes));
  } else {
    len = Rand(3) == 0 ? p_.device_bytes : RandomLen() * 4;
    pos = Rand(p_.device_bytes);
  }
  MODEL_TRACE("advise %d %lu at %lu\n", static_cast<int>(a), len, pos);
  Status s = as_->Advise(pos, len, a);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void CacheModel::OpCrash() {
  CrashMode mode = Rand(2) ? CrashMode::kDropUnflushed : CrashMode::kRandomSubset;
  MODEL_TRACE("crash %d\n", static_cast<int>(mode));
  dev_->Crash(mode, rng_());
  as_.reset();  // drops whatever was dirty (and its handles); its I/O fails now anyway
  bool new_cache = Rand(2) == 0;
  if (new_cache) {
    Accumulate(cache_->Stats());
    cache_.reset();
  }
  dev_->Restart();
  ASSERT_TRUE(dev_->Flush().ok());  // what survived is the new baseline
  std::vector<char>& dev = dev_buf_;
  dev.resize(p_.device_bytes);
  ASSERT_TRUE(dev_->Read(0, dev.data(), dev.size()).ok());
  for (uint64_t pg = 0; pg < p_.device_bytes / kPageBytes; ++pg) {
    const char* d = &dev[pg * kPageBytes];
    auto it = history_.find(pg);
    if (it == history_.end()) {
      ASSERT_EQ(std::memcmp(d, &ref_[pg * kPageBytes], kPageBytes), 0)
          << "page " << pg << " changed after a crash although it was not written since the "
          << "last fsync";
    } else {
      const std::vector<uint64_t>& v = it->second;
      ASSERT_NE(std::find(v.begin(), v.end(), PageHash(d)), v.end())
          << "page " << pg << " after a crash holds a content it never had since the last "
          << "fsync (" << v.size() << " versions)";
    }
  }
  ref_.swap(dev);
  size_ = p_.device_bytes;
  history_.clear();
  tracking_ = false;
  dev_->SetCrashTracking(false);
  Open(new_cache);
}

void CacheModel::ExpectFsync(const Status& s, StatusCode want, const char* who) {
  if (want == StatusCode::kOk) {
    ASSERT_TRUE(s.ok()) << who << ": " << s.ToString();
  } else {
    ASSERT_EQ(s.code(), want) << who << " should report the unseen writeback error: "
                              << s.ToString();
  }
}

void CacheModel::OpFsync() {
  MODEL_TRACE("fsync\n");
  CheckDirtyBytes("the ops before an fsync");
  if (::testing::Test::HasFatalFailure()) return;
  Status s = as_->Fsync();
  ExpectFsync(s, errseq_.Check(&errseq_.builtin()), "the cursorless fsync");
  if (::testing::Test::HasFatalFailure()) return;
  // Every dirty page was written (a failed one is not redirtied): nothing is dirty now.
  ASSERT_EQ(cache_->Stats().dirty_bytes, 0u) << "dirty bytes left after an fsync";
  written_.Clear();
  history_.clear();
  tracking_ = Rand(4) == 0;
  dev_->SetCrashTracking(tracking_);
}

void CacheModel::VerifyAll() {
  for (uint64_t pos = 0; pos < size_ && !::testing::Test::HasFatalFailure(); pos += kMiB) {
    OpRead(pos, kMiB);
  }
}

void CacheModel::VerifyDeviceAfterFsync() {
  OpFsync();
  if (::testing::Test::HasFatalFailure()) return;
  std::vector<char>& dev = dev_buf_;
  dev.resize(p_.device_bytes);
  ASSERT_TRUE(dev_->Read(0, dev.data(), dev.size()).ok());
  for (uint64_t pg = 0; pg < p_.device_bytes / kPageBytes; ++pg) {
    ASSERT_EQ(std::memcmp(&dev[pg * kPageBytes], &ref_[pg * kPageBytes], kPageBytes), 0)
        << "page " << pg << " on the device differs from the model after an fsync";
  }
}

void CacheModel::WideOp() {
  const uint64_t r = Rand(1000);
  if (r < 400) {
    OpWrite();
  } else if (r < 750) {
    OpRead(Rand(p_.device_bytes), RandomLen());
  } else if (r < 780) {
    OpSequentialRead();
  } else if (r < 800) {
    OpSequentialWrite();
  } else if (r < 830) {
    uint64_t len = RandomLen() * Rand(8);
    uint64_t pos = Rand(p_.device_bytes);
    MODEL_TRACE("invalidate %lu at %lu\n", len, pos);
    ASSERT_TRUE(as_->Invalidate(pos, len).ok());
  } else if (r < 860) {
    OpTruncate();
  } else if (r < 910) {
    OpFsync();
  } else if (r < 975) {
    OpAdvise();
  } else if (r < 980) {
    OpPolicy();
  } else {
    // The expensive ones (whole-device checks, injected errors), rarer still.
    const uint64_t q = Rand(100);
    if (q < 25) {
      ExpensiveOp();
    } else if (q < 30) {
      OpWriteError();
    } else if (q < 45) {
      OpHandle();
    } else {
      OpRead(Rand(size_ + 1), RandomLen());
    }
  }
}

void CacheModel::HotOp() {
  const uint64_t r = Rand(100000);
  if (r < 48000) {
    OpWrite();
  } else if (r < 97000) {
    const uint64_t len = RandomLen();
    OpRead(RandomPos(len), len);
  } else if (r < 97100) {
    OpSequentialRead();
  } else if (r < 97150) {
    OpSequentialWrite();
  } else if (r < 98100) {
    uint64_t len = RandomLen() * Rand(4);
    uint64_t pos = RandomPos(len);
    MODEL_TRACE("invalidate %lu at %lu\n", len, pos);
    ASSERT_TRUE(as_->Invalidate(pos, len).ok());
  } else if (r < 98600) {
    OpTruncate();
  } else if (r < 99100) {
    OpFsync();
  } else if (r < 99900) {
    OpAdvise();
  } else if (r < 99940) {
    OpPolicy();
  } else if (r < 99956) {
    OpHandle();
  } else if (r < 99960) {
    OpWriteError();
  } else if (r < 99995) {
    // The hot window moves: the old one is evicted and written back as the new one fills.
    hot_base_ = Rand(p_.device_bytes - hot_bytes_ + 1) & ~(kPageBytes - 1);
    MODEL_TRACE("hot window at %lu\n", hot_base_);
  } else {
    ExpensiveOp();
  }
}

void CacheModel::OpWriteError() {
  // Everything on the device first, so that only this op's pages can fail while armed.
  OpFsync();
  if (::testing::Test::HasFatalFailure()) return;
  const uint64_t len = (1 + Rand(16)) * kPageBytes;
  const uint64_t pos = RandomPos(len) & ~(kPageBytes - 1);
  const bool nospace = Rand(2) == 0;
  const StatusCode code = nospace ? StatusCode::kNoSpace : StatusCode::kIOError;
  MODEL_TRACE("write error %s: %lu at %lu\n", nospace ? "ENOSPC" : "EIO", len, pos);
  const WritebackErrorState before = as_->writeback_errors();
  dev_->SetInjectedErrno(nospace ? ENOSPC : EIO);
  dev_->FailRange(pos, len, /*reads=*/false, /*writes=*/true);
  WriteAt(pos, len);
  if (::testing::Test::HasFatalFailure()) return;
  // By the end of this pass the pages were written (here, by reclaim or by the flusher), so
  // the error is certain; the pass itself reports to nobody.
  (void)as_->WriteBack();
  errseq_.Record(code);
  const WritebackErrorState after = as_->writeback_errors();
  ASSERT_GE(after.errors, before.errors + 1);
  ASSERT_GE(after.unwritten_bytes, before.unwritten_bytes + len);
  ASSERT_EQ(after.latest.code(), code) << after.latest.ToString();
  dev_->ClearFailures();
  // The data is only in the cache (or lost, if evicted): write it again whole.
  WriteAt(pos, len);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_LE(as_->writeback_errors().unwritten_bytes, before.unwritten_bytes + len);
  ++error_ops_;
}

void CacheModel::OpHandle() {
  std::vector<cache_test::ErrseqReference::Handle>& hs = errseq_.handles();
  const uint64_t r = Rand(10);
  if (hs.empty() || (r < 3 && hs.size() < 8)) {
    MODEL_TRACE("open handle %zu\n", hs.size());
    hs.push_back(errseq_.Open(as_->SampleWritebackError()));
    return;
  }
  const size_t i = Rand(hs.size());
  if (r < 5) {
    MODEL_TRACE("close handle %zu\n", i);
    hs.erase(hs.begin() + static_cast<ptrdiff_t>(i));
    return;
  }
  MODEL_TRACE("fsync handle %zu\n", i);
  Status s = as_->Fsync(&hs[i].cursor);
  ExpectFsync(s, errseq_.Check(&hs[i]), "a handle's fsync");
  ++handle_fsyncs_;
}

void CacheModel::OpPolicy() {
  static const char* kPolicies[] = {"4k", "fixed:16K", "fixed:64K", "dynamic", "dynamic:256K"};
  policy_ = kPolicies[Rand(5)];
  MODEL_TRACE("policy %s\n", policy_.c_str());
  as_->SetPolicy(*FolioPolicy::Parse(policy_));
}

// A crash (in a crash epoch), a whole-file read check or an fsync with a whole-device check.
void CacheModel::ExpensiveOp() {
  const uint64_t q = Rand(25);
  if (q < 15) {
    if (tracking_) {
      OpCrash();
    } else {
      OpFsync();
    }
  } else if (q < 20) {
    VerifyAll();
  } else {
    VerifyDeviceAfterFsync();
  }
}

void CacheModel::Run(uint64_t ops) {
  Open(true);
  if (::testing::Test::HasFatalFailure()) return;
  tracking_ = true;  // the device starts all zero, as if just fsynced
  // Past ops, the run goes on (up to 4x) while a rare event it must show has not happened:
  // short runs (FOLIO_MODEL_OPS_DIVISOR, qemu) then still cover every path.
  auto more = [&](uint64_t op) {
    if (op < ops) return true;
    if (op >= 4 * ops) return false;
    if ((op - ops) % 64 != 0) return true;  // between checks
    return !NotShownYet().empty();
  };
  uint64_t op = 0;
  for (; more(op); ++op) {
    if (p_.mix == Mix::kHot) {
      HotOp();
    } else {
      WideOp();
    }
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "at op " << op;
      return;
    }
  }
  if (op > ops) std::printf("model ops: %llu more to show every path\n",
                            static_cast<unsigned long long>(op - ops));
  VerifyAll();
  if (::testing::Test::HasFatalFailure()) return;
  VerifyDeviceAfterFsync();
  if (::testing::Test::HasFatalFailure()) return;
  PageCacheStats s = cache_->Stats();
  EXPECT_LE(s.resident_bytes, p_.memory_bytes);
  if (p_.writeback_threads == 0) {
    EXPECT_EQ(s.dirty_bytes, 0u);
  }
  Status inv = cache_->arena()->CheckInvariants();
  EXPECT_TRUE(inv.ok()) << inv.ToString();
  Accumulate(s);
  CheckCoverage();
}

void CacheModel::CheckDirtyBytes(const char* after) {
  const uint64_t dirty = cache_->Stats().dirty_bytes;
  ASSERT_LE(dirty, written_.pages() * kPageBytes)
      << "after " << after << ": " << dirty << " dirty bytes, but only " << written_.pages()
      << " pages were written since the last fsync (whole folios dirtied?)";
}

void CacheModel::Accumulate(const PageCacheStats& s) { AddStats(s, &seen_); }

void CacheModel::AddStats(const PageCacheStats& s, Seen* seen) const {
  for (int o = 1; o < kNumOrders; ++o) {
    seen->large_allocs += s.orders[o].allocs;
    seen->splits += s.orders[o].splits;
    seen->collapses += s.orders[o].collapses;
  }
  seen->pages_not_read += s.write_pages_not_read;
  seen->stream_folios += s.write_stream_folios;
  seen->evictions += s.evictions;
  seen->evicted_dirty += s.evicted_dirty;
  seen->sparse_evictions += s.sparse_evictions;
  seen->partial_fills += s.partial_read_fills;
  seen->compactions += s.compact_successes;
  seen->compact_migrated += s.compact_migrated_folios;
  seen->compact_evicted += s.compact_evicted_folios;
  seen->background_blocks += s.compact_background_blocks;
  seen->background_attempts += s.compact_background_attempts;
  seen->background_reclaimed += s.compact_background_reclaimed_bytes;
  if (cache_ != nullptr && cache_->options().compaction_background) ++seen->background_caches;
}

std::vector<std::string> CacheModel::NotShownYet() const {
  Seen seen = seen_;
  if (cache_ != nullptr) AddStats(cache_->Stats(), &seen);
  std::vector<std::string> missing;
  auto need = [&](bool shown, const char* what) {
    if (!shown) missing.push_back(what);
  };
  // Every mix changes the policy now and then, so even the 4k runs see large folios.
  need(seen.large_allocs > 0, "no large folio was ever created");
  need(seen.splits > 0, "no large folio was ever split");
  need(seen.collapses > 0, "no small folios were ever collapsed");
  need(seen.pages_not_read > 0, "no write left pages of a large folio unread");
  need(seen.stream_folios > 0, "no sequential write stream grew a folio");
  need(seen.partial_fills > 0, "nobody read a partly up-to-date folio");
  need(seen.evictions > 0, "reclaim never evicted a folio");
  // The hot mix rereads a few pages of large folios under pressure (reclaim.cc's sparse rule).
  if (p_.mix == Mix::kHot) {
    need(seen.sparse_evictions > 0, "reclaim never evicted a sparsely read large folio");
  }
  if (ReclaimWritesBack()) {
    need(seen.evicted_dirty > 0, "reclaim never had to write back a dirty folio");
  }
  // Large folios in small caches fragment the arena: compaction must have built blocks, by
  // moving folios the model then read back (VerifyAll compares every byte).
  need(seen.compactions > 0, "compaction never served a large folio");
  need(seen.compact_migrated > 0, "compaction never migrated a folio");
  need(seen.background_blocks > 0, "the background compactor never built a block");
  need(error_ops_ > 0, "no writeback error was injected");
  need(handle_fsyncs_ > 0, "no handle fsynced");
  return missing;
}

void CacheModel::CheckCoverage() {
  for (const std::string& what : NotShownYet()) ADD_FAILURE() << what;  // seen_ + the open cache
  std::printf("compaction: %llu blocks (%llu more by the background compactor of %llu caches: "
              "%llu attempts, %llu bytes reclaimed), %llu folios migrated, %llu evicted\n",
              static_cast<unsigned long long>(seen_.compactions),
              static_cast<unsigned long long>(seen_.background_blocks),
              static_cast<unsigned long long>(seen_.background_caches),
              static_cast<unsigned long long>(seen_.background_attempts),
              static_cast<unsigned long long>(seen_.background_reclaimed),
              static_cast<unsigned long long>(seen_.compact_migrated),
              static_cast<unsigned long long>(seen_.compact_evicted));
}

class CacheModelTest : public ::testing::TestWithParam<ModelParams> {};
// The slow variant (same source, label "slow") gets its own suite name so that ctest names
// stay unique.
#ifdef FOLIO_CACHE_MODEL_SLOW
using CacheModelSlowTest = CacheModelTest;
#define FOLIO_MODEL_SUITE CacheModelSlowTest
#else
#define FOLIO_MODEL_SUITE CacheModelTest
#endif
// One more macro level so that FOLIO_MODEL_SUITE is expanded before gtest pastes it.
#define FOLIO_MODEL_TEST_P(suite, name) TEST_P(suite, name)
#define FOLIO_MODEL_INSTANTIATE(prefix, suite, ...) \
  INSTANTIATE_TEST_SUITE_P(prefix, suite, __VA_ARGS__)

FOLIO_MODEL_TEST_P(FOLIO_MODEL_SUITE, MatchesReferenceAndSurvivesCrashes) {
  const ModelParams& p = GetParam();
  // The slow label runs the wide mix 25 times longer and the hot mix 5 times.
  const uint64_t default_ops =
      p.ops * (p.mix == Mix::kHot ? std::min<uint64_t>(kOpsScale, 5) : kOpsScale);
  // A third of the run misses rare events (hot/dynamic/dev32M never migrated a folio): a
  // scaled run keeps at least half (test_model_ops.h).
  const uint64_t ops = ModelOps(default_ops, default_ops / 2);
  const uint64_t seed = TestSeedOr(p.seed);
  FOLIO_SEED_TRACE(seed);
  CacheModel model(p, seed);
  model.Run(ops);
  if (HasFailure()) ADD_FAILURE() << "reproduce with " << SeedTrace(seed);
}

FOLIO_MODEL_INSTANTIATE(
    Policies, FOLIO_MODEL_SUITE,
    ::testing::Values(
        // Wide: large ops anywhere, ~46K ops in all.
        ModelParams{Mix::kWide, "4k", 16 * kMiB, 2 * kMiB, 0, false, 10000, 101},
        ModelParams{Mix::kWide, "fixed:64K", 16 * kMiB, 4 * kMiB, 1, true, 10000, 202},
        ModelParams{Mix::kWide, "dynamic", 16 * kMiB, 2 * kMiB, 0, false, 10000, 303},
        ModelParams{Mix::kWide, "dynamic", 32 * kMiB, 4 * kMiB, 1, true, 6000, 404},
        ModelParams{Mix::kWide, "fixed:16K", 16 * kMiB, 2 * kMiB, 2, false, 10000, 505},
        // Hot: small ops in a moving window, 2M ops in all (about 20 s of CPU in Release,
        // a minute under ASan; ctest runs the cases in parallel).
        ModelParams{Mix::kHot, "dynamic", 32 * kMiB, 8 * kMiB, 0, false, 600000, 606},
        ModelParams{Mix::kHot, "4k", 16 * kMiB, 4 * kMiB, 0, false, 700000, 707},
        ModelParams{Mix::kHot, "fixed:16K", 32 * kMiB, 8 * kMiB, 1, true, 400000, 808},
        ModelParams{Mix::kHot, "dynamic", 64 * kMiB, 16 * kMiB, 2, true, 300000, 909}));

}  // namespace
}  // namespace folio
