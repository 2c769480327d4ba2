// Page cache under concurrency (label "concurrency": also run under TSan): threads read and
// write disjoint and overlapping regions of two address spaces sharing a small cache, with
// background writeback and the collapse scanner running.
//
// Disjoint regions: each thread keeps a private reference of its region and checks every read
// byte for byte. Overlapping regions: writers write whole 4K-aligned blocks filled with one tag
// byte, announcing the tag in a per-block set before writing; readers check that every block
// they read is uniform and holds an announced tag (or the initial zero).
//
// Compaction: readers check every byte of a 4k-policy file whose folios compaction keeps
// migrating (a fragmented cache, large writes to another file) until it has moved some.
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
#include "io/io_test_util.h"
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
  // Compaction (on by default) may have moved folios under all of them; how often depends
  // on the interleaving (CompactionUnderReaders makes sure it happens).
  std::printf("compaction: %llu blocks, %llu folios migrated, %llu evicted\n",
              static_cast<unsigned long long>(s.compact_successes),
              static_cast<unsigned long long>(s.compact_migrated_folios),
              static_cast<unsigned long long>(s.compact_evicted_folios));
}

TEST(CacheConcurrencyTest, DynamicAndFourKSharingASmallCache) { RunConcurrent("dynamic", "4k", 4); }

TEST(CacheConcurrencyTest, FixedAndDynamicSharingASmallCache) {
  RunConcurrent("fixed:16K", "dynamic:256K", 4);
}

enum class Compactor { kDirectOnly, kWithBackground };

// A 2M cache full of file a's 4 KiB folios (in page order), most of them referenced: reclaim
// frees scattered pages, so each 64K write to file b needs compaction, which migrates a's
// folios while readers copy out of them lock-free (and hold references that make some
// attempts give up). With the background compactor, it moves folios too, at the same time as
// the writer's own attempts.
void CompactionUnderReaders(Compactor compactor) {
  auto dev_a = cache_test::NewFaultMem(2 * kMiB);
  auto dev_b = cache_test::NewFaultMem(64 * kMiB);
  dev_a->SetCrashTracking(false);
  dev_b->SetCrashTracking(false);
  PageCacheOptions o = cache_test::SmallCacheOptions(2 * kMiB, "dynamic");
  o.compaction_background = compactor == Compactor::kWithBackground;
  o.compaction_background_interval_ms = 1;
  auto cache = std::move(PageCache::Create(o).value());
  AddressSpaceOptions ao;
  ao.override_policy = true;
  ao.policy = *FolioPolicy::Parse("4k");
  auto a = std::move(cache->Open(dev_a.get(), ao).value());
  auto b = std::move(cache->Open(dev_b.get(), AddressSpaceOptions{}).value());
  const std::vector<char> ref = cache_test::Pattern(80, 0, 2 * kMiB);
  ASSERT_EQ(a->Write(0, ref).value(), ref.size());
  ASSERT_TRUE(a->Fsync().ok());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(TestSeedOr(99) + t);
      std::vector<char> buf(16 * kKiB);
      while (!done.load()) {
        const uint64_t pos = rng() % (2 * kMiB - buf.size());
        Result<size_t> n = a->Read(pos, buf);
        if (!n.ok() || *n != buf.size() ||
            std::memcmp(buf.data(), ref.data() + pos, buf.size()) != 0) {
          failures.fetch_add(1);
          return;
        }
      }
    });
  }
  const std::vector<char> d = cache_test::Pattern(81, 0, 64 * kKiB);
  uint64_t writes = 0;
  // What each mode must show, and also when the writes stop: a block built by the writer's own
  // compaction (direct), or by the background compactor (which, running ahead, may leave the
  // writer nothing to compact), with at least one folio migrated under the readers. Migrations
  // alone are not enough: an attempt that moves some folios and then meets a pinned one
  // migrates without building a block.
  auto shown = [&](const PageCacheStats& st) {
    const bool built = compactor == Compactor::kDirectOnly ? st.compact_successes > 0
                                                           : st.compact_background_blocks > 0;
    return built && st.compact_migrated_folios > 0;
  };
  // Bounded: it comes within a few writes unless the readers pin every candidate block.
  while (!shown(cache->Stats()) && writes < 2000 && failures.load() == 0) {
    const uint64_t pos = (writes % 1024) * 64 * kKiB;
    ASSERT_EQ(b->Write(pos, d).value(), d.size());
    ++writes;
  }
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0) << "a reader saw wrong data";
  const PageCacheStats s = cache->Stats();
  EXPECT_TRUE(shown(s)) << "after " << writes << " writes: " << s.compact_successes
                        << " direct blocks, " << s.compact_background_blocks
                        << " background blocks, " << s.compact_migrated_folios
                        << " folios migrated";
  std::vector<char> all(2 * kMiB);
  ASSERT_EQ(a->Read(0, all).value(), all.size());
  EXPECT_EQ(all, ref);
  EXPECT_TRUE(cache->arena()->CheckInvariants().ok());
  b.reset();
  a.reset();
}

TEST(CacheConcurrencyTest, CompactionUnderReaders) { CompactionUnderReaders(Compactor::kDirectOnly); }

TEST(CacheConcurrencyTest, BackgroundCompactionUnderReaders) {
  CompactionUnderReaders(Compactor::kWithBackground);
}

// A device whose Submit of reads takes a while, as InodeDevice's does (it runs a readahead
// window's store gets inside Submit): the async reader then starts more workers.
class SlowSubmitDevice final : public io_test::ForwardingDevice {
 public:
  explicit SlowSubmitDevice(BlockDevice* inner) : ForwardingDevice(inner) {}
  std::string name() const override { return "slow(" + forward_to()->name() + ")"; }
  Status Submit(std::span<IoRequest* const> batch) override {
    for (const IoRequest* r : batch) {
      if (r->op == IoOp::kRead) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        break;
      }
    }
    return forward_to()->Submit(batch);
  }
};

// Sequential readers of four files whose devices take their time in Submit, each file closed
// (its address space destroyed, then its device) at a random point of a read, with readahead
// windows still in the async reader's workers, and opened again on a new device: every byte
// read checks, and no worker touches a device after its address space let it go (ASan / TSan).
TEST(CacheConcurrencyTest, SequentialReadersOverSlowSubmitsAcrossReadaheadWorkers) {
  const uint64_t seed = TestSeedOr(41);
  FOLIO_SEED_TRACE(seed);
  constexpr uint64_t kFileBytes = 24 * kMiB;
  auto cache = PageCache::Create(cache_test::SmallCacheOptions(64 * kMiB, "dynamic"));
  ASSERT_TRUE(cache.ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      MemDeviceOptions mo;
      mo.size_bytes = kFileBytes;
      auto mem = NewMemDevice(mo);
      ASSERT_TRUE(mem.ok());
      for (uint64_t pos = 0; pos < kFileBytes; pos += kMiB) {
        std::vector<char> d = cache_test::Pattern(seed + t, pos, kMiB);
        ASSERT_TRUE((*mem)->Write(pos, d.data(), d.size()).ok());
      }
#ifdef FOLIO_TSAN
      const int rounds = 3;
#else
      const int rounds = 12;
#endif
      std::vector<char> buf(kMiB);
      for (int round = 0; round < rounds; ++round) {
        auto slow = std::make_unique<SlowSubmitDevice>(mem->get());
        auto as = (*cache)->Open(slow.get(), AddressSpaceOptions{});
        ASSERT_TRUE(as.ok());
        const uint64_t stop = (1 + rng() % (kFileBytes / kMiB)) * kMiB;
        for (uint64_t pos = 0; pos < stop; pos += kMiB) {
          Result<size_t> n = (*as)->Read(pos, buf);
          if (!n.ok() || *n != kMiB || buf != cache_test::Pattern(seed + t, pos, kMiB)) {
            ++failures;
            ADD_FAILURE() << "file " << t << " round " << round << " pos " << pos;
            return;
          }
        }
        // The address space goes now, with readahead windows possibly still in workers (its
        // folios go with it, so the next round reads and reads ahead again), then its device.
        as->reset();
        slow.reset();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT((*cache)->Stats().readahead_async, 0u);
}

}  // namespace
}  // namespace folio
