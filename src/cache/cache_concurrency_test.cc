// Page cache under concurrency (label "concurrency": also run under TSan): threads read and
// write disjoint and overlapping regions of two address spaces sharing a small cache, with
// background writeback and the collapse scanner running.
//
// Disjoint regions: each thread keeps a private reference of its region and checks every read
// byte for byte. Overlapping regions: writers write whole 4K-aligned blocks filled with one tag
// byte, announcing the tag in a per-block set before writing; readers check that every block
// they read is uniform and holds an announced tag (or the initial zero). Compaction (on, as by
// default) migrates folios under all of them, which the test asserts happened.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_test_util.h"
#include "base/test_seed.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

using cache_test::kKiB;
using cache_test::kMiB;

constexpr uint64_t kRegionBytes = 1024 * kKiB;
constexpr uint64_t kSharedBytes = 256 * kKiB;
constexpr uint64_t kSharedBlocks = kSharedBytes / kPageBytes;
constexpr uint64_t kSharedPos = 8 * kMiB;
constexpr uint64_t kTruncateFloor = kSharedPos + kSharedBytes;

#ifdef FOLIO_TSAN
constexpr int kOpsPerThread = 400;
#else
constexpr int kOpsPerThread = 6000;
#endif

// Tags ever announced for each shared block of each address space (bit t = tag t).
struct SharedBlocks {
  std::array<std::atomic<uint64_t>, 4> tags[2][kSharedBlocks];
  void Announce(int as, uint64_t block, uint8_t tag) {
    tags[as][block][tag / 64].fetch_or(uint64_t{1} << (tag % 64), std::memory_order_seq_cst);
  }
  bool Announced(int as, uint64_t block, uint8_t tag) const {
    return tag == 0 ||
           (tags[as][block][tag / 64].load(std::memory_order_seq_cst) >> (tag % 64)) & 1;
  }
};

struct Fixture {
  std::unique_ptr<FaultDevice> devices[2];
  std::unique_ptr<PageCache> cache;
  std::unique_ptr<AddressSpace> spaces[2];
  ~Fixture() {
    for (auto& as : spaces) as.reset();
    cache.reset();
  }
};

class Worker {
 public:
  Worker(Fixture* fx, SharedBlocks* shared, int id, uint64_t seed, std::atomic<int>* failures)
      : shared_(shared),
        id_(id),
        failures_(failures),
        rng_(seed + id),
        as_index_(id % 2),
        as_(fx->spaces[as_index_].get()),
        other_(fx->spaces[1 - as_index_].get()),
        base_(static_cast<uint64_t>(id / 2) * kRegionBytes),
        ref_(kRegionBytes, 0) {}

  void Run() {
    for (int op = 0; op < kOpsPerThread && failures_->load() == 0; ++op) {
      const uint64_t r = rng_() % 100;
      if (r < 30) {
        WriteOwn();
      } else if (r < 60) {
        ReadOwn();
      } else if (r < 75) {
        WriteShared();
      } else if (r < 92) {
        ReadShared();
      } else if (r < 95) {
        (void)as_->Invalidate(base_ + rng_() % kRegionBytes, rng_() % (64 * kKiB));
      } else if (r < 97) {
        (void)as_->Advise(base_, kRegionBytes, Advice::kCollapse);
      } else if (r < 98) {
        (void)as_->Advise(kSharedPos, kSharedBytes,
                          rng_() % 2 ? Advice::kWillNeed : Advice::kDontNeed);
      } else {
        Status st = as_->Fsync();
        if (!st.ok()) Fail("fsync: " + st.ToString());
      }
    }
    buf_.resize(kRegionBytes);
    Result<size_t> n = as_->Read(base_, buf_);
    if (!n.ok() || buf_ != ref_) Fail("final check of the own region");
  }

 private:
  void Fail(const std::string& what) {
    if (failures_->fetch_add(1) < 5) ADD_FAILURE() << "thread " << id_ << ": " << what;
  }

  void WriteOwn() {
    uint64_t len = 1 + rng_() % (rng_() % 4 == 0 ? 64 * kKiB : 6 * kKiB);
    uint64_t off = rng_() % (kRegionBytes - len + 1);
    buf_.resize(len);
    for (char& c : buf_) c = static_cast<char>(rng_());
    std::memcpy(&ref_[off], buf_.data(), len);
    Result<size_t> n = as_->Write(base_ + off, buf_);
    if (!n.ok() || *n != len) Fail("write: " + n.status().ToString());
  }

  void ReadOwn() {
    uint64_t len = 1 + rng_() % (32 * kKiB);
    uint64_t off = rng_() % (kRegionBytes - len + 1);
    buf_.resize(len);
    Result<size_t> n = as_->Read(base_ + off, buf_);
    if (!n.ok() || *n != len) {
      Fail("read: " + n.status().ToString());
    } else if (std::memcmp(buf_.data(), &ref_[off], len) != 0) {
      Fail("own region differs at " + std::to_string(base_ + off));
    }
  }

  void WriteShared() {
    const int s = static_cast<int>(rng_() % 2);
    AddressSpace* target = s == as_index_ ? as_ : other_;
    uint64_t block = rng_() % kSharedBlocks;
    uint64_t count = 1 + rng_() % std::min<uint64_t>(8, kSharedBlocks - block);
    buf_.resize(count * kPageBytes);
    for (uint64_t b = 0; b < count; ++b) {
      uint8_t tag = static_cast<uint8_t>(1 + rng_() % 255);
      shared_->Announce(s, block + b, tag);
      std::memset(&buf_[b * kPageBytes], tag, kPageBytes);
    }
    Result<size_t> n = target->Write(kSharedPos + block * kPageBytes, buf_);
    if (!n.ok()) Fail("shared write: " + n.status().ToString());
  }

  void ReadShared() {
    const int s = static_cast<int>(rng_() % 2);
    AddressSpace* target = s == as_index_ ? as_ : other_;
    uint64_t block = rng_() % kSharedBlocks;
    uint64_t count = 1 + rng_() % std::min<uint64_t>(16, kSharedBlocks - block);
    buf_.resize(count * kPageBytes);
    Result<size_t> n = target->Read(kSharedPos + block * kPageBytes, buf_);
    if (!n.ok()) {
      Fail("shared read: " + n.status().ToString());
      return;
    }
    for (uint64_t b = 0; b < count; ++b) {
      const char* p = &buf_[b * kPageBytes];
      const uint8_t tag = static_cast<uint8_t>(p[0]);
      for (uint64_t i = 1; i < kPageBytes; ++i) {
        if (p[i] != p[0]) {
          Fail("torn shared block " + std::to_string(block + b));
          break;
        }
      }
      if (!shared_->Announced(s, block + b, tag)) {
        Fail("shared block " + std::to_string(block + b) + " holds unwritten tag " +
             std::to_string(tag));
      }
    }
  }

  SharedBlocks* const shared_;
  const int id_;
  std::atomic<int>* const failures_;
  std::mt19937_64 rng_;
  const int as_index_;
  AddressSpace* const as_;
  AddressSpace* const other_;
  const uint64_t base_;
  std::vector<char> ref_;
  std::vector<char> buf_;
};

void RunConcurrent(const char* policy0, const char* policy1, int threads) {
  Fixture fx;
  PageCacheOptions o = cache_test::SmallCacheOptions(4 * kMiB, "dynamic");
  o.writeback_threads = 1;
  o.dirty_writeback_ms = 3;
  o.collapse_scanner = true;
  o.dirty_background_bytes = 256 * kKiB;
  o.dirty_bytes = kMiB;
  o.dirty_expire_ms = 2;
  auto cache = PageCache::Create(o);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  fx.cache = std::move(cache).value();
  const char* policies[2] = {policy0, policy1};
  for (int i = 0; i < 2; ++i) {
    fx.devices[i] = cache_test::NewFaultMem(16 * kMiB);
    fx.devices[i]->SetCrashTracking(false);
    AddressSpaceOptions ao;
    ao.name = "as" + std::to_string(i);
    ao.override_policy = true;
    ao.policy = *FolioPolicy::Parse(policies[i]);
    auto as = fx.cache->Open(fx.devices[i].get(), ao);
    ASSERT_TRUE(as.ok()) << as.status().ToString();
    fx.spaces[i] = std::move(as).value();
  }
  auto shared = std::make_unique<SharedBlocks>();
  const uint64_t seed = TestSeedOr(77);
  FOLIO_SEED_TRACE(seed);
  std::atomic<int> failures{0};
  std::atomic<int> running{threads};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Worker(&fx, shared.get(), t, seed, &failures).Run();
      running.fetch_sub(1);
    });
  }
  // Truncations past every checked region (shrinks split and drop folios, record zero ranges
  // that writeback materialises) while the workers run.
  std::thread truncator([&] {
    std::mt19937_64 rng(seed);
    while (running.load() > 0) {
      for (auto& as : fx.spaces) {
        uint64_t size = kTruncateFloor + rng() % (16 * kMiB - kTruncateFloor + 1);
        Status s = as->Truncate(size);
        if (!s.ok()) ADD_FAILURE() << s.ToString();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (std::thread& t : workers) t.join();
  truncator.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& as : fx.spaces) EXPECT_TRUE(as->Fsync().ok());
  PageCacheStats s = fx.cache->Stats();
  EXPECT_LE(s.resident_bytes, 4 * kMiB);
  EXPECT_GT(s.evictions, 0u);
  // Compaction moved folios under the lock-free readers and the writers.
  std::printf("compaction: %llu blocks, %llu folios migrated, %llu evicted\n",
              static_cast<unsigned long long>(s.compact_successes),
              static_cast<unsigned long long>(s.compact_migrated_folios),
              static_cast<unsigned long long>(s.compact_evicted_folios));
  EXPECT_GT(s.compact_successes, 0u);
  EXPECT_GT(s.compact_migrated_folios, 0u);
}

TEST(CacheConcurrencyTest, DynamicAndFourKSharingASmallCache) { RunConcurrent("dynamic", "4k", 4); }

TEST(CacheConcurrencyTest, FixedAndDynamicSharingASmallCache) {
  RunConcurrent("fixed:16K", "dynamic:256K", 4);
}

}  // namespace
}  // namespace folio
