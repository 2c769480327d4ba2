// Alloc + Free per order through FolioArena, single thread and two threads sharing one arena.
// Orders 0..kCachedOrderMax hit the per-thread cache; larger orders take the buddy lock.
// Contended/<atomics>/order:<k>: 1..4 threads allocating and freeing at once, per atomics
// implementation this CPU can run (arm64: lse and llsc): orders 0 and 2 through the per-thread
// caches, order 9 through the buddy lock.
//
//   mem_bench --benchmark_filter=AllocFree
//   mem_bench --benchmark_filter=Contended --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/atomics_bench_util.h"
#include "folio/arena.h"

namespace folio {
namespace {

FolioArena* SharedArena() {
  static FolioArena* arena = [] {
    ArenaOptions opts;
    opts.capacity_bytes = 256ull << 20;
    auto a = FolioArena::Create(opts);
    if (!a.ok()) {
      std::fprintf(stderr, "%s\n", a.status().ToString().c_str());
      std::exit(1);
    }
    return std::move(a).value().release();
  }();
  return arena;
}

// One Alloc immediately followed by its Free.
void BM_AllocFree(benchmark::State& state) {
  FolioArena* arena = SharedArena();
  int order = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Result<Folio*> f = arena->Alloc(order);
    if (!f.ok()) {
      state.SkipWithError("NoSpace");
      break;
    }
    benchmark::DoNotOptimize(*f);
    arena->Free(*f);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AllocFree)->DenseRange(0, kMaxOrder)->Threads(1)->Threads(2);

// 64 Allocs then 64 Frees: exercises cache refills and flushes (batches through the lock).
void BM_AllocBurst64(benchmark::State& state) {
  FolioArena* arena = SharedArena();
  int order = static_cast<int>(state.range(0));
  std::vector<Folio*> v(64);
  for (auto _ : state) {
    for (Folio*& f : v) {
      Result<Folio*> r = arena->Alloc(order);
      if (!r.ok()) {
        state.SkipWithError("NoSpace");
        return;
      }
      f = *r;
    }
    for (Folio* f : v) arena->Free(f);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_AllocBurst64)->Arg(0)->Arg(2)->Arg(4)->Arg(6)->Threads(1)->Threads(2);

const bool kContendedRegistered = [] {
  ForEachAtomicsImpl([](AtomicsImpl impl, BenchSetupFn setup) {
    for (int order : {0, 2, kMaxOrder}) {
      const std::string name = "Contended/" + std::string(AtomicsImplName(impl)) +
                               "/order:" + std::to_string(order);
      benchmark::RegisterBenchmark(name.c_str(), BM_AllocFree)
          ->Arg(order)
          ->ThreadRange(1, 4)
          ->UseRealTime()
          ->Setup(setup);
    }
  });
  return true;
}();

}  // namespace
}  // namespace folio

BENCHMARK_MAIN();
