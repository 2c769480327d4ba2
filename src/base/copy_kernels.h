// The copy kernels that base/copy.h dispatches between, one per ISA variant. Each copies n
// bytes between non-overlapping buffers of any alignment and any length (0 included), like
// memcpy, and returns when the bytes are visible to other threads as ordinary stores are (the
// non-temporal kernels end with a store fence, so a release store after them publishes the data).
//
// Each ISA's kernels are compiled with that ISA's function target attributes only (no
// translation unit is built with -mavx2, -mavx512* or +sve), so no inline function from a
// shared header gets a wide-vector copy that the linker might pick for every CPU. Call a kernel
// only when CopyImplAvailable() (base/copy.h) says the CPU has what it needs.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>

namespace folio::copy_internal {

void CopyGlibc(void* dst, const void* src, size_t n);

#if defined(__x86_64__)
// 32-byte AVX2 loads and stores, destination aligned after the first (unaligned) store.
void CopyAvx2(void* dst, const void* src, size_t n);
// The same with non-temporal (streaming) stores from kNtMinBytes up, glibc below.
void CopyAvx2Nt(void* dst, const void* src, size_t n);
// 64-byte AVX-512F loads and stores, destination aligned after the first (unaligned) store.
void CopyAvx512(void* dst, const void* src, size_t n);
// The same with non-temporal stores from kNtMinBytes up, glibc below.
void CopyAvx512Nt(void* dst, const void* src, size_t n);
// `rep movsb` (fast with ERMS / FSRM).
void CopyRepMovsb(void* dst, const void* src, size_t n);
#endif

#if defined(__aarch64__)
// 64-byte NEON (ASIMD) loads and stores (ld1 / st1 of four q registers).
void CopyNeon(void* dst, const void* src, size_t n);
// SVE predicated loads and stores of the CPU's vector length (ld1b / st1b, whilelo).
void CopySve(void* dst, const void* src, size_t n);
#endif

// Non-temporal stores only pay off when the copy is large enough to evict useful lines.
inline constexpr size_t kNtMinBytes = 64 * 1024;

}  // namespace folio::copy_internal
