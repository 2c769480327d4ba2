// PerThreadRegistry micro-benchmarks, with N registries live on the calling thread (each
// holding this thread's state, as N open files' InodeDevices do):
//   Find         the state of a registry other than the last one looked up (a shuffled cycle
//                through all N: the one-entry cache misses unless N is 1)
//   AttachCycle  a registry created, its state attached, the registry destroyed (an inode's
//                device made, used once by this thread and dropped)
// Run in Release: build/release/src/io/per_thread_bench.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "io/per_thread.h"

namespace folio::io_internal {
namespace {

struct Empty : ThreadState {};

ThreadState* Use(PerThreadRegistry& r) {
  Result<ThreadState*> s = r.GetOrCreate([]() -> Result<std::unique_ptr<Empty>> {
    return std::make_unique<Empty>();
  });
  return s.ok() ? *s : nullptr;
}

std::vector<std::unique_ptr<PerThreadRegistry>> LiveRegistries(int64_t n) {
  std::vector<std::unique_ptr<PerThreadRegistry>> regs;
  for (int64_t i = 0; i < n; ++i) {
    regs.push_back(std::make_unique<PerThreadRegistry>());
    Use(*regs.back());
  }
  return regs;
}

void BM_Find(benchmark::State& state) {
  auto regs = LiveRegistries(state.range(0));
  std::vector<PerThreadRegistry*> order;
  for (auto& r : regs) order.push_back(r.get());
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(order[i]->Find());
    if (++i == order.size()) i = 0;
  }
}
BENCHMARK(BM_Find)->Arg(1)->Arg(100)->Arg(10000);

void BM_AttachCycle(benchmark::State& state) {
  auto regs = LiveRegistries(state.range(0));
  for (auto _ : state) {
    PerThreadRegistry r;
    benchmark::DoNotOptimize(Use(r));
  }
}
BENCHMARK(BM_AttachCycle)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace
}  // namespace folio::io_internal

BENCHMARK_MAIN();
