// Page cache micro-benchmarks over a MemDevice, for each folio policy:
//   CachedRandomRead4K   4 KiB reads at random aligned positions of a fully cached file
//                        (the lock-free hit path: two index loads, TryGet, copy, Put), over a
//                        1 MiB working set (CPU-cache resident: the path's own cost) and the
//                        whole 64 MiB file (dominated by copying 4 KiB from DRAM)
//   Write64KNewFolios    64 KiB aligned writes into uncached ranges (folio allocation,
//                        index insertion, LRU, copy, dirty): dynamic builds one order-4 folio
//                        per write, 4k sixteen order-0 folios
//   Write64KCached       64 KiB aligned overwrites of cached, dirty data
// Run in Release: build/h-cache-rel/src/cache/cache_bench.
#include <benchmark/benchmark.h>

#include <map>
#include <mutex>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "folio/block_device.h"
#include "folio/page_cache.h"

namespace folio {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kFileBytes = 64 * kMiB;

const char* kPolicies[] = {"4k", "fixed:64K", "dynamic"};

struct Fixture {
  std::unique_ptr<BlockDevice> device;
  std::unique_ptr<PageCache> cache;
  std::unique_ptr<AddressSpace> as;
  ~Fixture() {
    as.reset();
    cache.reset();
  }
};

std::unique_ptr<Fixture> MakeFixture(const char* policy, uint64_t memory_bytes) {
  auto fx = std::make_unique<Fixture>();
  MemDeviceOptions mo;
  mo.size_bytes = kFileBytes;
  fx->device = std::move(NewMemDevice(mo).value());
  PageCacheOptions o;
  o.memory_bytes = memory_bytes;
  o.policy = *FolioPolicy::Parse(policy);
  o.writeback_threads = 0;
  o.collapse_scanner = false;
  o.dirty_bytes = memory_bytes;  // the benchmarks control writeback themselves
  fx->cache = std::move(PageCache::Create(o).value());
  fx->as = std::move(fx->cache->Open(fx->device.get(), AddressSpaceOptions{}).value());
  return fx;
}

// One fully cached file per policy, shared by the read benchmarks (built once).
Fixture* ReadFixture(int policy) {
  static std::map<int, std::unique_ptr<Fixture>> fixtures;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& fx = fixtures[policy];
  if (fx == nullptr) {
    fx = MakeFixture(kPolicies[policy], 2 * kFileBytes);
    std::vector<char> chunk(2 * kMiB, 'r');
    for (uint64_t pos = 0; pos < kFileBytes; pos += chunk.size()) {
      (void)fx->as->Write(pos, chunk);
    }
    (void)fx->as->Fsync();
  }
  return fx.get();
}

void CachedRandomRead4K(benchmark::State& state) {
  Fixture* fx = ReadFixture(static_cast<int>(state.range(0)));
  std::mt19937_64 rng(state.thread_index() + 1);
  const uint64_t pages = static_cast<uint64_t>(state.range(1)) / kPageBytes;
  std::vector<uint64_t> positions(1 << 16);
  for (uint64_t& p : positions) p = (rng() % pages) * kPageBytes;
  alignas(64) char buf[kPageBytes];
  size_t i = 0;
  for (auto _ : state) {
    Result<size_t> n = fx->as->Read(positions[i++ & (positions.size() - 1)], buf);
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(buf[0]);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPageBytes));
  state.SetLabel(std::string(kPolicies[state.range(0)]) + " ws " +
                 std::to_string(state.range(1) >> 20) + "M");
}

void Write64KNewFolios(benchmark::State& state) {
  auto fx = MakeFixture(kPolicies[state.range(0)], 64 * kMiB);
  std::vector<char> data(64 * 1024, 'w');
  const uint64_t region = 32 * kMiB;
  uint64_t pos = 0;
  for (auto _ : state) {
    if (pos == region) {
      state.PauseTiming();
      (void)fx->as->Fsync();
      (void)fx->as->Invalidate(0, region);
      pos = 0;
      state.ResumeTiming();
    }
    Result<size_t> n = fx->as->Write(pos, data);
    benchmark::DoNotOptimize(n);
    pos += data.size();
  }
  PageCacheStats s = fx->cache->Stats();
  uint64_t allocs = 0;
  for (const CacheOrderStats& o : s.orders) allocs += o.allocs;
  state.counters["allocs_per_write"] =
      static_cast<double>(allocs) / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
  state.SetLabel(kPolicies[state.range(0)]);
}

void Write64KCached(benchmark::State& state) {
  auto fx = MakeFixture(kPolicies[state.range(0)], 64 * kMiB);
  std::vector<char> data(64 * 1024, 'c');
  const uint64_t region = 16 * kMiB;
  for (uint64_t pos = 0; pos < region; pos += data.size()) (void)fx->as->Write(pos, data);
  uint64_t pos = 0;
  for (auto _ : state) {
    Result<size_t> n = fx->as->Write(pos, data);
    benchmark::DoNotOptimize(n);
    pos = (pos + data.size()) % region;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(CachedRandomRead4K)
    ->ArgsProduct({{0, 1, 2}, {1 << 20, static_cast<int64_t>(kFileBytes)}})
    ->Threads(1)
    ->Threads(2);
BENCHMARK(Write64KNewFolios)->DenseRange(0, 2);
BENCHMARK(Write64KCached)->DenseRange(0, 2);

}  // namespace
}  // namespace folio

BENCHMARK_MAIN();
