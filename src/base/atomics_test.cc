#include "base/atomics.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace folio {
namespace {

// libgcc's own start-up choice (arm64 outline atomics) agrees with Folio's reading of HWCAP.
TEST(AtomicsTest, TheRunTimeChoiceMatchesTheCpu) {
  const CpuFeatures& f = CpuFeaturesOnce();
  EXPECT_EQ(CurrentAtomicsImpl(), AutoAtomics(f));
  EXPECT_TRUE(AtomicsImplAvailable(AutoAtomics(f), f));
#if defined(__x86_64__)
  EXPECT_EQ(CurrentAtomicsBuild(), AtomicsBuild::kX86Lock);
#elif defined(__aarch64__)
  // Never inline LSE: that binary would SIGILL on ARMv8.0.
  EXPECT_EQ(CurrentAtomicsBuild(), AtomicsBuild::kArmOutline);
  EXPECT_EQ(CurrentAtomicsImpl(), f.arm_lse ? AtomicsImpl::kLse : AtomicsImpl::kLlsc);
#endif
}

// Every implementation this CPU can run gives exact results under contention: fetch_add
// counters, a compare-exchange counter and exchange-based ownership hand-offs.
TEST(AtomicsTest, EveryImplementationIsExactUnderContention) {
  const CpuFeatures& f = CpuFeaturesOnce();
  const AtomicsImpl before = CurrentAtomicsImpl();
  for (AtomicsImpl impl : {AtomicsImpl::kX86Lock, AtomicsImpl::kLse, AtomicsImpl::kLlsc}) {
    if (!AtomicsImplAvailable(impl, f)) continue;
    SCOPED_TRACE(AtomicsImplName(impl));
    SetAtomicsImpl(impl);
    EXPECT_EQ(CurrentAtomicsImpl(), impl);
    constexpr int kThreads = 4;
    constexpr int kOps = 20000;
    std::atomic<uint64_t> added{0};
    std::atomic<uint32_t> cas_counter{0};
    std::atomic<int> owner{-1};
    std::atomic<int> in_critical{0};
    std::atomic<int> violations{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kOps; ++i) {
          added.fetch_add(3, std::memory_order_relaxed);
          uint32_t v = cas_counter.load(std::memory_order_relaxed);
          while (!cas_counter.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) {
          }
          if (i % 16 == 0) {
            int expected = -1;
            while (!owner.compare_exchange_weak(expected, t, std::memory_order_acquire)) {
              expected = -1;
            }
            if (in_critical.exchange(1, std::memory_order_relaxed) != 0) violations++;
            in_critical.store(0, std::memory_order_relaxed);
            owner.store(-1, std::memory_order_release);
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(added.load(), uint64_t{3} * kThreads * kOps);
    EXPECT_EQ(cas_counter.load(), static_cast<uint32_t>(kThreads * kOps));
    EXPECT_EQ(violations.load(), 0);
  }
  SetAtomicsImpl(before);
}

}  // namespace
}  // namespace folio
