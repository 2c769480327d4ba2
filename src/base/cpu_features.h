// CpuFeatures: what the CPU (and the OS, for wide vector state) offers that Folio can use,
// detected at run time: x86 SSE4.2 CRC32, PCLMULQDQ, AVX2, AVX-512 F/BW/VL; arm64 CRC32,
// LSE atomics, NEON. Also the L1 data cache line size.
//
// Detection reads cpuid / xgetbv on x86 and getauxval(AT_HWCAP) on arm64; a feature whose
// register state the OS does not save (XCR0) is reported absent, since using it would fault.
//
// Thread safety: DetectCpuFeatures() is a pure read of the machine; CpuFeaturesOnce() caches
// the first result in a function-local static (thread-safe initialisation).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio {

enum class CpuArch { kX86_64, kArm64, kOther };

struct CpuFeatures {
  CpuArch arch = CpuArch::kOther;
  // x86-64
  bool sse42 = false;      // SSE4.2, which carries the crc32 instruction (CRC32C)
  bool pclmulqdq = false;  // carry-less multiply (folded CRC)
  bool avx2 = false;       // and the OS saves YMM state
  bool avx512f = false;    // and the OS saves ZMM / opmask state
  bool avx512bw = false;
  bool avx512vl = false;
  bool os_avx = false;     // XCR0 has SSE + AVX state enabled
  bool os_avx512 = false;  // XCR0 has opmask + ZMM state enabled
  // arm64
  bool arm_crc32 = false;  // HWCAP_CRC32
  bool arm_lse = false;    // HWCAP_ATOMICS (ARMv8.1 LSE)
  bool arm_neon = false;   // HWCAP_ASIMD
  size_t cache_line_bytes = 64;
  std::string cache_line_source;  // "sysconf", "sysfs", or "default"

  // The features relevant on this architecture, as (name, present) pairs in a fixed order,
  // e.g. {"sse4.2-crc32", true}. Empty on other architectures.
  std::vector<std::pair<std::string, bool>> List() const;
};

std::string_view CpuArchName(CpuArch arch);

// Probes the CPU now.
CpuFeatures DetectCpuFeatures();
// The result of the first DetectCpuFeatures() call of the process.
const CpuFeatures& CpuFeaturesOnce();

// The L1 data cache line size: sysconf(_SC_LEVEL1_DCACHE_LINESIZE), else
// /sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size, else 64. `source` (optional)
// receives which of the three answered.
size_t DetectCacheLineBytes(std::string* source);

// Parses the content of a coherency_line_size file: a positive power of two up to 4096
// (trailing whitespace allowed). Returns 0 when it is not one.
size_t ParseCacheLineBytes(std::string_view text);

}  // namespace folio
