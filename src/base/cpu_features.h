// CpuFeatures: what the CPU (and the OS, for wide vector state) offers that Folio can use,
// detected at run time, and the cache line size the kernel reports.
//
//   x86-64  cpuid + xgetbv: the vendor string, SSE4.2 crc32, PCLMULQDQ, AVX2, AVX-512 (F/BW/VL and the Ice Lake
//           set ISA-L's fastest CRC needs), VPCLMULQDQ, ERMS / FSRM (fast `rep movsb`)
//   arm64   getauxval(AT_HWCAP / AT_HWCAP2): CRC32, PMULL, LSE atomics, ASIMD (NEON), SVE,
//           SVE2; the SVE vector length (prctl); MIDR_EL1 when the kernel exposes it
//
// A feature whose register state the OS does not save (XCR0) is reported absent, since using
// it would fault. The cache line comes from sysfs coherency_line_size (the kernel), else
// sysconf(_SC_LEVEL1_DCACHE_LINESIZE), else CTR_EL0 (arm64), else 64.
//
// Thread safety: DetectCpuFeatures() is a pure read of the machine; CpuFeaturesOnce() caches
// the first result in a function-local static (thread-safe initialisation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace folio {

enum class CpuArch { kX86_64, kArm64, kOther };

struct CpuFeatures {
  CpuArch arch = CpuArch::kOther;
  // x86-64
  bool sse42 = false;       // SSE4.2, which carries the crc32 instruction (CRC32C)
  bool pclmulqdq = false;   // carry-less multiply (folded CRC)
  bool avx2 = false;        // and the OS saves YMM state
  bool avx512f = false;     // and the OS saves ZMM / opmask state
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_icl = false;  // F DQ CD BW VL + VBMI2 GFNI VAES VPCLMULQDQ VNNI BITALG VPOPCNTDQ
  bool vpclmulqdq = false;  // 256/512-bit carry-less multiply
  bool erms = false;        // enhanced rep movsb / stosb
  bool fsrm = false;        // fast short rep movsb
  bool os_avx = false;      // XCR0 has SSE + AVX state enabled
  bool os_avx512 = false;   // XCR0 has opmask + ZMM state enabled
  std::string x86_vendor;   // cpuid leaf 0: "GenuineIntel", "AuthenticAMD", ...
  // arm64
  bool arm_crc32 = false;   // HWCAP_CRC32
  bool arm_pmull = false;   // HWCAP_PMULL (64-bit polynomial multiply, folded CRC)
  bool arm_lse = false;     // HWCAP_ATOMICS (ARMv8.1 LSE: ldadd, cas, swp)
  bool arm_neon = false;    // HWCAP_ASIMD
  bool arm_sve = false;     // HWCAP_SVE
  bool arm_sve2 = false;    // HWCAP2_SVE2
  size_t sve_vector_bytes = 0;  // the thread's SVE vector length; 0 without SVE
  uint64_t arm_midr = 0;        // MIDR_EL1 (implementer, part); 0 when not exposed
  // Both
  size_t cache_line_bytes = 64;
  std::string cache_line_source;  // "sysfs", "sysconf", "ctr_el0" or "default"

  // The features relevant on this architecture, as (name, present) pairs in a fixed order,
  // e.g. {"sse4.2-crc32", true}. Empty on other architectures.
  std::vector<std::pair<std::string, bool>> List() const;
};

std::string_view CpuArchName(CpuArch arch);

// An AMD x86-64 CPU (vendor "AuthenticAMD"): the copy dispatch's rule differs there (copy.cc).
bool IsAmdX86(const CpuFeatures& f);

// Probes the CPU now.
CpuFeatures DetectCpuFeatures();
// The result of the first DetectCpuFeatures() call of the process.
const CpuFeatures& CpuFeaturesOnce();

// The L1 data cache line size (see the header comment for the order of sources). `source`
// (optional) receives which one answered.
size_t DetectCacheLineBytes(std::string* source);

// Parses the content of a coherency_line_size file: a positive power of two up to 4096
// (trailing whitespace allowed). Returns 0 when it is not one.
size_t ParseCacheLineBytes(std::string_view text);

// "0x41:0xd0c (ARM Neoverse-N1)" style description of a MIDR value: implementer and part
// number, with the name for the few parts Folio's dependencies special-case. "" for 0.
std::string DescribeMidr(uint64_t midr);

}  // namespace folio
