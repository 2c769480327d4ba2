// Copies into and out of folios per kernel (FOLIO_COPY), 4 KiB .. 2 MiB, with the folio side
// 4 KiB aligned and the user side aligned (+0) or not (+7):
//
//   Copy/<kernel>/in/<bytes>/<skew>   user buffer (hot, reused) -> folios walking a 256 MiB
//                                     arena (cold, as when a write stream fills the cache)
//   Copy/<kernel>/out/<bytes>/<skew>  folios walking the arena -> user buffer (hot)
//
//   base_bench --benchmark_filter=Copy --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Compare kernels at the same size / direction / skew (bytes_per_second, median); `auto` keeps
// a kernel only where it is >= 10% faster than glibc (docs/cpu-dispatch.md). On a shared
// machine add --benchmark_enable_random_interleaving=true: the repetitions of all rows run in
// random order, so a change of load falls on every kernel alike. Below kNtMinBytes the -nt
// kernels are glibc's memcpy, so their cells there show the run's noise.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/copy.h"

namespace folio {
namespace {

constexpr size_t kArenaBytes = 256u << 20;

char* Arena() {
  static char* arena = [] {
    auto* p = static_cast<char*>(std::aligned_alloc(2u << 20, kArenaBytes));
    std::memset(p, 1, kArenaBytes);
    return p;
  }();
  return arena;
}

enum class Direction { kIn, kOut };

void BM_Copy(benchmark::State& state, CopyImpl impl, Direction dir) {
  const size_t n = static_cast<size_t>(state.range(0));
  const size_t skew = static_cast<size_t>(state.range(1));
  const CopyFn fn = CopyImplFn(impl);
  char* arena = Arena();
  auto* user = static_cast<char*>(std::aligned_alloc(4096, n + 4096));
  std::memset(user, 2, n + 4096);
  const size_t slots = kArenaBytes / n;
  size_t slot = 0;
  for (auto _ : state) {
    char* folio = arena + slot * n;
    if (dir == Direction::kIn) {
      fn(folio, user + skew, n);
    } else {
      fn(user + skew, folio, n);
    }
    benchmark::ClobberMemory();
    if (++slot == slots) slot = 0;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  std::free(user);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {4096, 16384, 65536, 262144, 2 << 20}) {
    for (int64_t skew : {0, 7}) b->Args({n, skew});
  }
}

// One registration per kernel this CPU can run, so a filter selects kernels by name.
const bool kCopyRegistered = [] {
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    if (!CopyImplAvailable(impl, CpuFeaturesOnce())) continue;
    for (Direction dir : {Direction::kIn, Direction::kOut}) {
      const std::string name = "Copy/" + std::string(CopyImplName(impl)) +
                               (dir == Direction::kIn ? "/in" : "/out");
      benchmark::RegisterBenchmark(name.c_str(), BM_Copy, impl, dir)->Apply(Args);
    }
  }
  return true;
}();

}  // namespace
}  // namespace folio
