#include "base/copy.h"

#include <atomic>
#include <cstring>

#include "base/check.h"
#include "base/copy_kernels.h"

namespace folio {

namespace copy_internal {
void CopyGlibc(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
}  // namespace copy_internal

namespace {

using copy_internal::CopyGlibc;

struct KernelInfo {
  CopyImpl impl;
  std::string_view name;
};
constexpr KernelInfo kKernels[] = {
    {CopyImpl::kGlibc, "glibc"},       {CopyImpl::kAvx2, "avx2"},
    {CopyImpl::kAvx2Nt, "avx2-nt"},    {CopyImpl::kAvx512, "avx512"},
    {CopyImpl::kAvx512Nt, "avx512-nt"}, {CopyImpl::kRepMovsb, "rep-movsb"},
    {CopyImpl::kNeon, "neon"},         {CopyImpl::kSve, "sve"},
};

void FirstCopyIn(void* dst, const void* src, size_t n);
void FirstCopyOut(void* dst, const void* src, size_t n);

// Each starts at a trampoline that installs the auto choice on first use (so code that never
// runs ApplyDispatch, like a unit test, runs what production runs). SetCopyImpls runs before
// other threads (see the header): relaxed loads suffice, the pointers name immutable code.
std::atomic<CopyFn> g_copy_in{&FirstCopyIn};
std::atomic<CopyFn> g_copy_out{&FirstCopyOut};

CopyFn Resolve(std::atomic<CopyFn>& slot, CopyFn trampoline, CopyImpl auto_impl) {
  CopyFn fn = slot.load(std::memory_order_relaxed);
  if (fn != trampoline) return fn;
  CopyFn chosen = CopyImplFn(auto_impl);
  // A racing SetCopyImpls wins: the trampoline is replaced only if still there.
  slot.compare_exchange_strong(fn, chosen, std::memory_order_relaxed);
  return slot.load(std::memory_order_relaxed);
}

CopyFn ResolveIn() {
  return Resolve(g_copy_in, &FirstCopyIn, AutoFolioCopyIn(CpuFeaturesOnce()));
}
CopyFn ResolveOut() {
  return Resolve(g_copy_out, &FirstCopyOut, AutoFolioCopyOut(CpuFeaturesOnce()));
}

void FirstCopyIn(void* dst, const void* src, size_t n) { ResolveIn()(dst, src, n); }
void FirstCopyOut(void* dst, const void* src, size_t n) { ResolveOut()(dst, src, n); }

CopyImpl ImplOf(CopyFn fn) {
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    if (CopyImplAvailable(impl, CpuFeaturesOnce()) && CopyImplFn(impl) == fn) return impl;
  }
  return CopyImpl::kGlibc;
}

}  // namespace

std::string_view CopyImplName(CopyImpl impl) {
  for (const KernelInfo& k : kKernels) {
    if (k.impl == impl) return k.name;
  }
  return "unknown";
}

std::optional<CopyImpl> ParseCopyImpl(std::string_view name) {
  for (const KernelInfo& k : kKernels) {
    if (k.name == name) return k.impl;
  }
  return std::nullopt;
}

std::vector<CopyImpl> CopyImplsOfThisIsa() {
#if defined(__x86_64__)
  return {CopyImpl::kGlibc,  CopyImpl::kAvx2,     CopyImpl::kAvx2Nt,
          CopyImpl::kAvx512, CopyImpl::kAvx512Nt, CopyImpl::kRepMovsb};
#elif defined(__aarch64__)
  return {CopyImpl::kGlibc, CopyImpl::kNeon, CopyImpl::kSve};
#else
  return {CopyImpl::kGlibc};
#endif
}

bool CopyImplAvailable(CopyImpl impl, const CpuFeatures& f) {
  switch (impl) {
    case CopyImpl::kGlibc: return true;
#if defined(__x86_64__)
    case CopyImpl::kAvx2:
    case CopyImpl::kAvx2Nt: return f.avx2;
    case CopyImpl::kAvx512:
    case CopyImpl::kAvx512Nt: return f.avx512f;
    case CopyImpl::kRepMovsb: return true;
#elif defined(__aarch64__)
    case CopyImpl::kNeon: return f.arm_neon;
    case CopyImpl::kSve: return f.arm_sve;
#endif
    default: return false;
  }
}

// The rule the copy benchmark supports (docs/cpu-dispatch.md): on x86, copies into folios use
// non-temporal stores from 64 KiB up (a folio written now is read back by writeback or much
// later, so caching its lines only evicts hotter data). 64-byte ZMM stores where the CPU has
// AVX-512F and is not AMD (the Intel Xeon measurement: 1.1-1.3x avx2-nt, 2x glibc); 32-byte YMM
// stores where it has AVX2 (the AMD Zen 3 measurement; and the AMD family 0x1a one with
// AVX-512, where avx2-nt was 1.17-1.60x glibc at 64-256 KiB and avx512-nt 1.03-1.47x).
// Copies out of folios go to a buffer the caller reads next, and keep glibc (no kernel beat it
// by 10% in both runs on any of the three CPUs). Elsewhere glibc.
CopyImpl AutoFolioCopyIn(const CpuFeatures& f) {
  if (CopyImplAvailable(CopyImpl::kAvx512Nt, f) && !IsAmdX86(f)) return CopyImpl::kAvx512Nt;
  if (CopyImplAvailable(CopyImpl::kAvx2Nt, f)) return CopyImpl::kAvx2Nt;
  return CopyImpl::kGlibc;
}

CopyImpl AutoFolioCopyOut(const CpuFeatures&) { return CopyImpl::kGlibc; }

CopyFn CopyImplFn(CopyImpl impl) {
  FOLIO_CHECK(CopyImplAvailable(impl, CpuFeaturesOnce()));
  switch (impl) {
    case CopyImpl::kGlibc: return &CopyGlibc;
#if defined(__x86_64__)
    case CopyImpl::kAvx2: return &copy_internal::CopyAvx2;
    case CopyImpl::kAvx2Nt: return &copy_internal::CopyAvx2Nt;
    case CopyImpl::kAvx512: return &copy_internal::CopyAvx512;
    case CopyImpl::kAvx512Nt: return &copy_internal::CopyAvx512Nt;
    case CopyImpl::kRepMovsb: return &copy_internal::CopyRepMovsb;
#elif defined(__aarch64__)
    case CopyImpl::kNeon: return &copy_internal::CopyNeon;
    case CopyImpl::kSve: return &copy_internal::CopySve;
#endif
    default: break;
  }
  return &CopyGlibc;
}

void FolioCopyIn(void* dst, const void* src, size_t n) {
  g_copy_in.load(std::memory_order_relaxed)(dst, src, n);
}

void FolioCopyOut(void* dst, const void* src, size_t n) {
  g_copy_out.load(std::memory_order_relaxed)(dst, src, n);
}

void SetCopyImpls(CopyImpl copy_in, CopyImpl copy_out) {
  g_copy_in.store(CopyImplFn(copy_in), std::memory_order_relaxed);
  g_copy_out.store(CopyImplFn(copy_out), std::memory_order_relaxed);
}

CopyImpl CurrentFolioCopyIn() { return ImplOf(ResolveIn()); }
CopyImpl CurrentFolioCopyOut() { return ImplOf(ResolveOut()); }

}  // namespace folio
