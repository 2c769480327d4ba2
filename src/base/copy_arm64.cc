// arm64 copy kernels (base/copy_kernels.h). NEON (ASIMD) is part of the arm64 base ISA as
// Debian builds it; SVE code lives only between the "+sve" target pragmas below, and the
// dispatcher calls it only where HWCAP_SVE says the CPU has it.
#include "base/copy_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace folio::copy_internal {

void CopyNeon(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  if (n < 64) {
    std::memcpy(d, s, n);
    return;
  }
  // The last 64 bytes are loaded first and stored last, so the loop needs no tail.
  const uint8x16x4_t last = vld1q_u8_x4(s + n - 64);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) vst1q_u8_x4(d + i, vld1q_u8_x4(s + i));
  vst1q_u8_x4(d + n - 64, last);
}

}  // namespace folio::copy_internal

#pragma GCC push_options
#pragma GCC target("+sve")
#include <arm_sve.h>

namespace folio::copy_internal {

void CopySve(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const uint64_t step = svcntb();
  for (uint64_t i = 0; i < n; i += step) {
    const svbool_t pg = svwhilelt_b8_u64(i, n);
    svst1_u8(pg, d + i, svld1_u8(pg, s + i));
  }
}

}  // namespace folio::copy_internal
#pragma GCC pop_options

#endif  // __aarch64__
