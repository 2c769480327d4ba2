// For Google Benchmark registrations that compare atomics implementations: calls
// fn(impl, setup) for every AtomicsImpl this CPU can run, where `setup` (a benchmark Setup
// function, run before the benchmark's threads start) switches to that implementation.
//
// Thread safety: registration time only (static initialisation).
#pragma once

#include <benchmark/benchmark.h>

#include "base/atomics.h"

namespace folio {

namespace atomics_bench_internal {
template <AtomicsImpl kImpl>
void UseImpl(const benchmark::State&) {
  SetAtomicsImpl(kImpl);
}
}  // namespace atomics_bench_internal

using BenchSetupFn = void (*)(const benchmark::State&);

template <typename Fn>
void ForEachAtomicsImpl(Fn&& fn) {
  using atomics_bench_internal::UseImpl;
  const std::pair<AtomicsImpl, BenchSetupFn> impls[] = {
      {AtomicsImpl::kX86Lock, &UseImpl<AtomicsImpl::kX86Lock>},
      {AtomicsImpl::kLse, &UseImpl<AtomicsImpl::kLse>},
      {AtomicsImpl::kLlsc, &UseImpl<AtomicsImpl::kLlsc>}};
  for (const auto& [impl, setup] : impls) {
    if (AtomicsImplAvailable(impl, CpuFeaturesOnce())) fn(impl, setup);
  }
}

}  // namespace folio
