#include "base/copy.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "base/test_seed.h"

namespace folio {
namespace {

std::vector<CopyImpl> RunnableKernels() {
  std::vector<CopyImpl> out;
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    if (CopyImplAvailable(impl, CpuFeaturesOnce())) out.push_back(impl);
  }
  return out;
}

// Source and destination pools big enough for every copy below (2 MiB + slack), 4 KiB aligned;
// the source is filled with random bytes once.
class Pools {
 public:
  static constexpr size_t kGuard = 64;
  explicit Pools(std::mt19937_64& rng) : src_(kBytes + 4096), dst_(kBytes + 4096) {
    for (size_t i = 0; i + 8 <= src_.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(&src_[i], &v, 8);
    }
  }

  // Copies n bytes from source offset s_off to destination offset d_off with `fn`, and checks
  // every copied byte and kGuard untouched bytes on each side.
  void Check(CopyFn fn, size_t n, size_t s_off, size_t d_off) {
    unsigned char* d = Aligned(dst_) + kGuard + d_off;
    const unsigned char* s = Aligned(src_) + kGuard + s_off;
    std::memset(d - kGuard, 0xA5, n + 2 * kGuard);
    fn(d, s, n);
    EXPECT_EQ(std::memcmp(d, s, n), 0) << "copied bytes differ";
    for (size_t i = 1; i <= kGuard; ++i) {
      ASSERT_EQ(d[-static_cast<ptrdiff_t>(i)], 0xA5) << "wrote " << i << " bytes before dst";
      ASSERT_EQ(d[n + i - 1], 0xA5) << "wrote " << i << " bytes past the end";
    }
  }

 private:
  static constexpr size_t kBytes = (2u << 20) + 4096;
  static unsigned char* Aligned(std::vector<unsigned char>& v) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + ((4096 - (p & 4095)) & 4095);
  }
  std::vector<unsigned char> src_, dst_;
};

// Every kernel this CPU can run, at every length up to 300 and around the 32 / 64 / 4K / 64K
// (non-temporal threshold) / 2M boundaries, with source and destination offsets that cover
// every alignment class of a 64-byte vector.
TEST(CopyTest, EveryKernelIsCorrectForEveryLengthAndAlignment) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (size_t base : {size_t{4096}, size_t{65536}, size_t{1} << 20, size_t{2} << 20}) {
    for (size_t delta : {1, 33, 64}) lengths.push_back(base - delta);
    lengths.push_back(base);
    if (base < (size_t{2} << 20)) lengths.push_back(base + 65);
  }
  Pools pools(rng);
  for (CopyImpl impl : RunnableKernels()) {
    const CopyFn fn = CopyImplFn(impl);
    for (size_t n : lengths) {
      // Short lengths: every offset pair class; long ones: a handful (they are slow to check).
      const int pairs = n <= 300 ? 6 : 3;
      for (int p = 0; p < pairs; ++p) {
        const size_t s_off = p == 0 ? 0 : rng() % 64;
        const size_t d_off = p == 0 ? 0 : p == 1 ? 1 : rng() % 64;
        SCOPED_TRACE(std::string(CopyImplName(impl)) + " n=" + std::to_string(n) +
                     " src+" + std::to_string(s_off) + " dst+" + std::to_string(d_off));
        pools.Check(fn, n, s_off, d_off);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every kernel at every (source, destination) offset pair modulo 64, at the lengths where the
// kernels change path: below and at one vector (32 / 64), at two (the AVX-512 body needs 64 and
// ends on a 64-byte overlap), the unrolled loops' 128 / 256, and around the non-temporal
// threshold, where the non-temporal kernels leave glibc. Above 512 bytes the source takes three
// offsets (loads are unaligned; the destination's offset decides the aligned body and the
// overlapping tail): all 64 x 64 pairs at 64 KiB cost 2.4 GB of memset + copy + memcmp per
// kernel, minutes under qemu.
TEST(CopyTest, EveryKernelIsCorrectForEveryAlignmentPair) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  Pools pools(rng);
  const size_t nt = 64 * 1024;
  const size_t lengths[] = {1,   31,  32,  33,  63,  64,  65,  127, 128, 129, 191,
                            192, 255, 256, 257, 319, 320, 383, 4096 + 1, nt - 1, nt, nt + 63};
  for (CopyImpl impl : RunnableKernels()) {
    const CopyFn fn = CopyImplFn(impl);
    for (size_t n : lengths) {
      std::vector<size_t> src_offsets = {0, 17, 63};
      if (n <= 512) {
        src_offsets.clear();
        for (size_t s_off = 0; s_off < 64; ++s_off) src_offsets.push_back(s_off);
      }
      for (size_t s_off : src_offsets) {
        for (size_t d_off = 0; d_off < 64; ++d_off) {
          SCOPED_TRACE(std::string(CopyImplName(impl)) + " n=" + std::to_string(n) + " src+" +
                       std::to_string(s_off) + " dst+" + std::to_string(d_off));
          pools.Check(fn, n, s_off, d_off);
          if (HasFatalFailure() || HasNonfatalFailure()) return;
        }
      }
    }
  }
}

TEST(CopyTest, NamesRoundTripAndOtherIsasAreNotAvailable) {
  std::vector<std::string_view> names;
  for (CopyImpl impl : kAllCopyImpls) {
    EXPECT_EQ(ParseCopyImpl(CopyImplName(impl)), impl);
    EXPECT_NE(CopyImplName(impl), "unknown");
    names.push_back(CopyImplName(impl));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a name twice";
  EXPECT_FALSE(ParseCopyImpl("fast").has_value());
  EXPECT_FALSE(ParseCopyImpl("avx512nt").has_value());
  CpuFeatures everything = CpuFeaturesOnce();
  everything.avx2 = everything.avx512f = everything.arm_neon = everything.arm_sve = true;
#if defined(__x86_64__)
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kNeon, everything));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kSve, everything));
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    EXPECT_TRUE(CopyImplAvailable(impl, everything)) << CopyImplName(impl);
  }
  CpuFeatures no_avx2 = CpuFeaturesOnce();
  no_avx2.avx2 = no_avx2.avx512f = false;
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx2Nt, no_avx2));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx512, no_avx2));
  EXPECT_EQ(AutoFolioCopyIn(no_avx2), CopyImpl::kGlibc);
  EXPECT_EQ(AutoFolioCopyOut(no_avx2), CopyImpl::kGlibc);
  // An AVX2 CPU without AVX-512 (the Zen 3 of docs/cpu-dispatch.md) can run neither AVX-512
  // kernel, and auto keeps what it chose before they existed.
  CpuFeatures avx2_only = CpuFeaturesOnce();
  avx2_only.avx2 = true;
  avx2_only.avx512f = avx2_only.avx512bw = avx2_only.avx512vl = avx2_only.avx512_icl = false;
  avx2_only.os_avx512 = false;
  EXPECT_TRUE(CopyImplAvailable(CopyImpl::kAvx2, avx2_only));
  EXPECT_TRUE(CopyImplAvailable(CopyImpl::kAvx2Nt, avx2_only));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx512, avx2_only));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx512Nt, avx2_only));
  EXPECT_EQ(AutoFolioCopyIn(avx2_only), CopyImpl::kAvx2Nt);
  EXPECT_EQ(AutoFolioCopyOut(avx2_only), CopyImpl::kGlibc);
  // AVX-512F alone is what the kernels need (an OS that does not save ZMM state clears it).
  CpuFeatures avx512_only = CpuFeatures{};
  avx512_only.arch = CpuArch::kX86_64;
  avx512_only.avx512f = true;
  EXPECT_TRUE(CopyImplAvailable(CopyImpl::kAvx512, avx512_only));
  EXPECT_TRUE(CopyImplAvailable(CopyImpl::kAvx512Nt, avx512_only));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx2, avx512_only));
  // Where AVX-512F is, auto writes folios with its non-temporal kernel and reads them with
  // glibc (the Intel Xeon table of docs/cpu-dispatch.md).
  CpuFeatures avx512_and_avx2 = avx2_only;
  avx512_and_avx2.avx512f = avx512_and_avx2.os_avx512 = true;
  avx512_and_avx2.x86_vendor = "GenuineIntel";
  EXPECT_EQ(AutoFolioCopyIn(avx512_and_avx2), CopyImpl::kAvx512Nt);
  EXPECT_EQ(AutoFolioCopyOut(avx512_and_avx2), CopyImpl::kGlibc);
  EXPECT_EQ(AutoFolioCopyIn(avx512_only), CopyImpl::kAvx512Nt);
  // An AMD CPU with AVX-512 keeps the AVX2 non-temporal kernel (the AMD family 0x1a table of
  // docs/cpu-dispatch.md: avx512-nt did not beat glibc by 10% at 256 KiB and 2 MiB there).
  CpuFeatures amd_avx512 = avx512_and_avx2;
  amd_avx512.x86_vendor = "AuthenticAMD";
  EXPECT_TRUE(IsAmdX86(amd_avx512));
  EXPECT_EQ(AutoFolioCopyIn(amd_avx512), CopyImpl::kAvx2Nt);
  EXPECT_EQ(AutoFolioCopyOut(amd_avx512), CopyImpl::kGlibc);
  EXPECT_FALSE(IsAmdX86(avx512_and_avx2));
  const CpuFeatures& here = CpuFeaturesOnce();
  EXPECT_EQ(AutoFolioCopyIn(here), here.avx512f && !IsAmdX86(here) ? CopyImpl::kAvx512Nt
                                   : here.avx2                     ? CopyImpl::kAvx2Nt
                                                                   : CopyImpl::kGlibc);
#elif defined(__aarch64__)
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx2, everything));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx512, everything));
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kAvx512Nt, everything));
  CpuFeatures no_sve = CpuFeaturesOnce();
  no_sve.arm_sve = false;
  EXPECT_FALSE(CopyImplAvailable(CopyImpl::kSve, no_sve));
#endif
  EXPECT_TRUE(CopyImplAvailable(CopyImpl::kGlibc, CpuFeatures{}));
  EXPECT_TRUE(CopyImplAvailable(AutoFolioCopyIn(CpuFeaturesOnce()), CpuFeaturesOnce()));
  EXPECT_TRUE(CopyImplAvailable(AutoFolioCopyOut(CpuFeaturesOnce()), CpuFeaturesOnce()));
}

// The dispatched entry points start on the auto choice and follow SetCopyImpls.
TEST(CopyTest, FolioCopyFollowsTheDispatch) {
  const CpuFeatures& f = CpuFeaturesOnce();
  EXPECT_EQ(CurrentFolioCopyIn(), AutoFolioCopyIn(f));
  EXPECT_EQ(CurrentFolioCopyOut(), AutoFolioCopyOut(f));
  std::vector<char> a(256 * 1024 + 3), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 7);
  for (CopyImpl impl : RunnableKernels()) {
    SetCopyImpls(impl, impl);
    EXPECT_EQ(CurrentFolioCopyIn(), impl);
    EXPECT_EQ(CurrentFolioCopyOut(), impl);
    std::fill(b.begin(), b.end(), 0);
    std::fill(c.begin(), c.end(), 0);
    FolioCopyIn(b.data() + 1, a.data() + 1, a.size() - 1);
    FolioCopyOut(c.data() + 1, b.data() + 1, b.size() - 1);
    EXPECT_EQ(0, std::memcmp(a.data() + 1, c.data() + 1, a.size() - 1)) << CopyImplName(impl);
  }
  SetCopyImpls(AutoFolioCopyIn(f), AutoFolioCopyOut(f));
}

}  // namespace
}  // namespace folio
