// kFalseSharingBytes: the alignment and stride that Folio gives data written by different
// threads (per-thread caches, sharded counters, wait-queue buckets) so that no two of them
// share a cache line. A compile-time constant, because alignas needs one:
//
//   x86-64  64: the line is 64 bytes. The spatial (adjacent-line) prefetcher pairs lines into
//           128-byte chunks; base_bench's Atomics/stride:64 vs stride:128 measures whether that
//           costs anything (inconclusive on the shared 2-vCPU VM so far: docs/cpu-dispatch.md)
//   arm64   128: the largest line of the arm64 server and desktop cores Folio targets (Neoverse
//           lines are 64, Apple's 128). GCC 12's std::hardware_destructive_interference_size
//           is 256 for generic arm64 tuning (A64FX), varies with -mtune, and warns
//           (-Winterference-size) when used in a header, so it is reported, not used
//
// `folio doctor` prints this value beside the line the kernel reports (CpuFeatures) and the
// compiler's std::hardware_destructive_interference_size, and warns when the detected line
// is larger than the padding.
//
// Folio descriptors are the exception: one per 4 KiB frame, 64 bytes by contract
// (include/folio/arena.h), aligned to 64 so none straddles a line.
//
// Thread safety: constants and types only.
#pragma once

#include <cstddef>

namespace folio {

#if defined(__aarch64__)
inline constexpr size_t kFalseSharingBytes = 128;
#else
inline constexpr size_t kFalseSharingBytes = 64;
#endif

// The compiler's std::hardware_destructive_interference_size (read in a .cc file, where GCC
// does not warn about it); 0 when the compiler does not define it (clang 14).
size_t CompilerDestructiveInterferenceBytes();

}  // namespace folio
