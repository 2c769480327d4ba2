// Page cache under concurrency (label "concurrency": also run under TSan): threads read and
// write disjoint and overlapping regions of two address spaces sharing a small cache, with
// background writeback and the collapse scanner running.
//
// Disjoint regions: each thread keeps a private reference of its region and checks every read
// byte for byte. Overlapping regions: writers write whole 4K-aligned blocks filled with one tag
// byte, announcing the tag in a per-block set before writing; readers check that every block
// they read is uniform and holds an announced tag (or the initial zero).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "cache/cache_test_util.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr uint64_t kRegionBytes = 512 * kKiB;
constexpr uint64_t kSharedBytes = 256 * kKiB;
constexpr uint64_t kSharedBlocks = kSharedBytes / kPageBytes;
constexpr uint64_t kSharedPos = 8 * kMiB;

#ifdef FOLIO_TSAN
constexpr int kOpsPerThread = 600;
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

void Worker(Fixture* fx, SharedBlocks* shared, int id, uint64_t seed, std::atomic<int>* failures) {
  std::mt19937_64 rng(seed + id);
  const int as_index = id % 2;
  AddressSpace* as = fx->spaces[as_index].get();
  AddressSpace* other = fx->spaces[1 - as_index].get();
  const uint64_t base = static_cast<uint64_t>(id / 2) * kRegionBytes;
  std::vector<char> ref(kRegionBytes, 0);
  std::vector<char> buf;
  auto fail = [&](const std::string& what) {
    if (failures->fetch_add(1) < 5) ADD_FAILURE() << "thread " << id << ": " << what;
  };
  for (int op = 0; op < kOpsPerThread && failures->load() == 0; ++op) {
    const uint64_t r = rng() % 100;
    if (r < 30) {  // write own region
      uint64_t len = 1 + rng() % (rng() % 4 == 0 ? 64 * kKiB : 6 * kKiB);
      uint64_t off = rng() % (kRegionBytes - len + 1);
      buf.resize(len);
      for (char& c : buf) c = static_cast<char>(rng());
      std::memcpy(&ref[off], buf.data(), len);
      Result<size_t> n = as->Write(base + off, buf);
      if (!n.ok() || *n != len) fail("write: " + n.status().ToString());
    } else if (r < 60) {  // read own region
      uint64_t len = 1 + rng() % (32 * kKiB);
      uint64_t off = rng() % (kRegionBytes - len + 1);
      buf.resize(len);
      Result<size_t> n = as->Read(base + off, buf);
      if (!n.ok() || *n != len) {
        fail("read: " + n.status().ToString());
      } else if (std::memcmp(buf.data(), &ref[off], len) != 0) {
        fail("own region differs at " + std::to_string(base + off));
      }
    } else if (r < 75) {  // write shared blocks, either address space
      int s = rng() % 2;
      AddressSpace* target = s == as_index ? as : other;
      uint64_t block = rng() % kSharedBlocks;
      uint64_t count = 1 + rng() % std::min<uint64_t>(8, kSharedBlocks - block);
      buf.resize(count * kPageBytes);
      for (uint64_t b = 0; b < count; ++b) {
        uint8_t tag = static_cast<uint8_t>(1 + rng() % 255);
        shared->Announce(s, block + b, tag);
        std::memset(&buf[b * kPageBytes], tag, kPageBytes);
      }
      Result<size_t> n = target->Write(kSharedPos + block * kPageBytes, buf);
      if (!n.ok()) fail("shared write: " + n.status().ToString());
    } else if (r < 92) {  // read shared blocks
      int s = rng() % 2;
      AddressSpace* target = s == as_index ? as : other;
      uint64_t block = rng() % kSharedBlocks;
      uint64_t count = 1 + rng() % std::min<uint64_t>(16, kSharedBlocks - block);
      buf.resize(count * kPageBytes);
      Result<size_t> n = target->Read(kSharedPos + block * kPageBytes, buf);
      if (!n.ok()) {
        fail("shared read: " + n.status().ToString());
        continue;
      }
      for (uint64_t b = 0; b < count; ++b) {
        const char* p = &buf[b * kPageBytes];
        const uint8_t tag = static_cast<uint8_t>(p[0]);
        for (uint64_t i = 1; i < kPageBytes; ++i) {
          if (p[i] != p[0]) {
            fail("torn shared block " + std::to_string(block + b));
            break;
          }
        }
        if (!shared->Announced(s, block + b, tag)) {
          fail("shared block " + std::to_string(block + b) + " holds unwritten tag " +
               std::to_string(tag));
        }
      }
    } else if (r < 95) {
      (void)as->Invalidate(base + rng() % kRegionBytes, rng() % (64 * kKiB));
    } else if (r < 97) {
      (void)as->Advise(base, kRegionBytes, Advice::kCollapse);
    } else if (r < 98) {
      (void)as->Advise(kSharedPos, kSharedBytes, rng() % 2 ? Advice::kWillNeed : Advice::kDontNeed);
    } else {
      Status st = as->Fsync();
      if (!st.ok()) fail("fsync: " + st.ToString());
    }
  }
  // Final check of the whole own region.
  buf.resize(kRegionBytes);
  Result<size_t> n = as->Read(base, buf);
  if (!n.ok() || buf != ref) fail("final check of the own region");
}

void RunConcurrent(const char* policy0, const char* policy1, int threads) {
  Fixture fx;
  PageCacheOptions o = cache_test::SmallCacheOptions(4 * kMiB, "dynamic");
  o.writeback_threads = 1;
  o.writeback_interval_ms = 3;
  o.collapse_scanner = true;
  o.dirty_bytes_max = kMiB;
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
  const uint64_t seed = cache_test::SeedOr(77);
  SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(Worker, &fx, shared.get(), t, seed, &failures);
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& as : fx.spaces) EXPECT_TRUE(as->Fsync().ok());
  PageCacheStats s = fx.cache->Stats();
  EXPECT_LE(s.resident_bytes, 4 * kMiB);
  EXPECT_GT(s.evictions, 0u);
}

TEST(CacheConcurrencyTest, DynamicAndFourKSharingASmallCache) { RunConcurrent("dynamic", "4k", 4); }

TEST(CacheConcurrencyTest, FixedAndDynamicSharingASmallCache) {
  RunConcurrent("fixed:16K", "dynamic:256K", 4);
}

}  // namespace
}  // namespace folio
