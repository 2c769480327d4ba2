// Copies into and out of folios, through the kernel chosen once per process (base/dispatch.h,
// FOLIO_COPY): glibc's memcpy, or a vector kernel where the copy benchmark measured one at
// least 10% faster (docs/cpu-dispatch.md has the numbers and the rule `auto` follows).
//
//   glibc      memcpy (itself dispatched by glibc: AVX2 / ERMS on x86, ASIMD on arm64)
//   avx2       x86 AVX2 32-byte loads / stores
//   avx2-nt    x86 AVX2 with non-temporal stores from 64 KiB up (glibc below)
//   avx512     x86 AVX-512F 64-byte loads / stores
//   avx512-nt  x86 AVX-512F with non-temporal stores from 64 KiB up (glibc below)
//   rep-movsb  x86 `rep movsb`
//   neon       arm64 ASIMD 64-byte loads / stores
//   sve        arm64 SVE predicated loads / stores
//
// Every kernel is correct for every length and alignment (copy_test.cc checks each one that
// the CPU can run), and completes like memcpy: a release store after it publishes the bytes.
//
// Thread safety: FolioCopyIn / FolioCopyOut are pure. SetCopyImpls may only run while no
// other thread copies (at start, from ApplyDispatch, or in a single-threaded test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/cpu_features.h"

namespace folio {

enum class CopyImpl : uint8_t {
  kGlibc,
  kAvx2,
  kAvx2Nt,
  kAvx512,
  kAvx512Nt,
  kRepMovsb,
  kNeon,
  kSve,
};

// Every kernel of every ISA, in the order the README and error messages list them.
inline constexpr CopyImpl kAllCopyImpls[] = {
    CopyImpl::kGlibc,    CopyImpl::kAvx2,     CopyImpl::kAvx2Nt, CopyImpl::kAvx512,
    CopyImpl::kAvx512Nt, CopyImpl::kRepMovsb, CopyImpl::kNeon,   CopyImpl::kSve,
};

std::string_view CopyImplName(CopyImpl impl);
std::optional<CopyImpl> ParseCopyImpl(std::string_view name);
// Every kernel of this ISA (glibc first), whether or not the CPU can run it.
std::vector<CopyImpl> CopyImplsOfThisIsa();
// Whether this CPU can run impl (and the build has it).
bool CopyImplAvailable(CopyImpl impl, const CpuFeatures& f);

// What `auto` picks on this CPU for copies into folios and out of them.
CopyImpl AutoFolioCopyIn(const CpuFeatures& f);
CopyImpl AutoFolioCopyOut(const CpuFeatures& f);

using CopyFn = void (*)(void* dst, const void* src, size_t n);
// REQUIRES: CopyImplAvailable(impl, CpuFeaturesOnce()).
CopyFn CopyImplFn(CopyImpl impl);

// Copies n bytes into folio memory (dst is in a folio) / out of it (src is). Non-overlapping.
void FolioCopyIn(void* dst, const void* src, size_t n);
void FolioCopyOut(void* dst, const void* src, size_t n);

// REQUIRES: both available on this CPU (checked).
void SetCopyImpls(CopyImpl copy_in, CopyImpl copy_out);
CopyImpl CurrentFolioCopyIn();
CopyImpl CurrentFolioCopyOut();

}  // namespace folio
