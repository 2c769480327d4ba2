// Atomic counters under contention, 1..4 threads, per atomics implementation this CPU can run
// (arm64: lse and llsc; x86: lock-prefixed), and the false-sharing padding question:
//
//   Atomics/<impl>/shared           every thread fetch_adds one counter (true sharing)
//   Atomics/<impl>/stride:<S>       each thread fetch_adds its own counter, counters S bytes
//                                   apart: 8 = one line for all (false sharing), 64 = adjacent
//                                   lines (the x86 spatial prefetcher pairs them), 128, 256
//   Atomics/<impl>/cas              compare-exchange loop on one counter
//
//   base_bench --benchmark_filter=Atomics --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// items_per_second is increments per second over all threads.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/atomics.h"
#include "base/atomics_bench_util.h"

namespace folio {
namespace {

constexpr int kMaxThreads = 4;
constexpr size_t kMaxStride = 256;

// kMaxThreads counters at up to kMaxStride bytes apart, starting on a 4 KiB boundary.
struct alignas(4096) CounterBlock {
  unsigned char bytes[kMaxThreads * kMaxStride];
};
CounterBlock g_block;

std::atomic<uint64_t>& CounterAt(size_t offset) {
  return *reinterpret_cast<std::atomic<uint64_t>*>(g_block.bytes + offset);
}

void BM_Stride(benchmark::State& state, size_t stride) {
  std::atomic<uint64_t>& c = CounterAt(static_cast<size_t>(state.thread_index()) * stride);
  for (auto _ : state) c.fetch_add(1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations());
}

void BM_Shared(benchmark::State& state) {
  std::atomic<uint64_t>& c = CounterAt(0);
  for (auto _ : state) c.fetch_add(1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations());
}

void BM_Cas(benchmark::State& state) {
  std::atomic<uint64_t>& c = CounterAt(0);
  for (auto _ : state) {
    uint64_t v = c.load(std::memory_order_relaxed);
    while (!c.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) {
    }
  }
  state.SetItemsProcessed(state.iterations());
}

const bool kAtomicsRegistered = [] {
  ForEachAtomicsImpl([](AtomicsImpl impl, BenchSetupFn setup) {
    const std::string prefix = "Atomics/" + std::string(AtomicsImplName(impl));
    auto add = [setup](benchmark::internal::Benchmark* b) {
      b->ThreadRange(1, kMaxThreads)->UseRealTime()->Setup(setup);
    };
    add(benchmark::RegisterBenchmark((prefix + "/shared").c_str(), BM_Shared));
    add(benchmark::RegisterBenchmark((prefix + "/cas").c_str(), BM_Cas));
    for (size_t stride : {size_t{8}, size_t{64}, size_t{128}, size_t{256}}) {
      add(benchmark::RegisterBenchmark((prefix + "/stride:" + std::to_string(stride)).c_str(),
                                       BM_Stride, stride));
    }
  });
  return true;
}();

}  // namespace
}  // namespace folio
