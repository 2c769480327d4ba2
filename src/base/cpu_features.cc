#include "base/cpu_features.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace folio {

namespace {

#if defined(__x86_64__) || defined(__i386__)

// XCR0 via xgetbv, valid only when CPUID.1:ECX.OSXSAVE is set.
uint64_t ReadXcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

void DetectX86(CpuFeatures* f) {
  f->arch = CpuArch::kX86_64;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
    char vendor[12];  // EBX, EDX, ECX in that order
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    f->x86_vendor.assign(vendor, sizeof(vendor));
  }
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return;
  f->sse42 = (ecx & bit_SSE4_2) != 0;
  f->pclmulqdq = (ecx & bit_PCLMUL) != 0;
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  const bool cpu_avx = (ecx & bit_AVX) != 0;
  uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  // Bits 1 (SSE) and 2 (AVX upper halves); 5, 6, 7 (opmask, ZMM0-15 upper, ZMM16-31).
  f->os_avx = cpu_avx && (xcr0 & 0x6) == 0x6;
  f->os_avx512 = f->os_avx && (xcr0 & 0xe0) == 0xe0;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  f->avx2 = f->os_avx && (ebx & bit_AVX2) != 0;
  f->erms = (ebx & (1u << 9)) != 0;   // CPUID.7.0:EBX[9]
  f->fsrm = (edx & (1u << 4)) != 0;  // CPUID.7.0:EDX[4]
  f->vpclmulqdq = f->os_avx && (ecx & bit_VPCLMULQDQ) != 0;
  f->avx512f = f->os_avx512 && (ebx & bit_AVX512F) != 0;
  f->avx512bw = f->avx512f && (ebx & bit_AVX512BW) != 0;
  f->avx512vl = f->avx512f && (ebx & bit_AVX512VL) != 0;
  // What ISA-L 2.30's crc_multibinary requires for its AVX-512 kernels (by16_10).
  const unsigned icl_ebx = bit_AVX512F | bit_AVX512DQ | bit_AVX512CD | bit_AVX512BW |
                           bit_AVX512VL;
  const unsigned icl_ecx = bit_AVX512VBMI2 | bit_GFNI | bit_VAES | bit_VPCLMULQDQ |
                           bit_AVX512VNNI | bit_AVX512BITALG | bit_AVX512VPOPCNTDQ;
  f->avx512_icl = f->avx512f && f->avx2 && (ebx & icl_ebx) == icl_ebx &&
                  (ecx & icl_ecx) == icl_ecx;
}

#elif defined(__aarch64__)

void DetectArm64(CpuFeatures* f) {
  f->arch = CpuArch::kArm64;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  f->arm_crc32 = (hwcap & HWCAP_CRC32) != 0;
  f->arm_pmull = (hwcap & HWCAP_PMULL) != 0;
  f->arm_lse = (hwcap & HWCAP_ATOMICS) != 0;
  f->arm_neon = (hwcap & HWCAP_ASIMD) != 0;
  f->arm_sve = (hwcap & HWCAP_SVE) != 0;
  f->arm_sve2 = f->arm_sve && (hwcap2 & HWCAP2_SVE2) != 0;
  if (f->arm_sve) {
    int vl = prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
    if (vl > 0) f->sve_vector_bytes = static_cast<size_t>(vl & PR_SVE_VL_LEN_MASK);
  }
  // With HWCAP_CPUID the kernel emulates EL0 reads of the ID registers.
  if ((hwcap & HWCAP_CPUID) != 0) {
    uint64_t midr = 0;
    __asm__ __volatile__("mrs %0, MIDR_EL1" : "=r"(midr));
    f->arm_midr = midr;
  }
}

// CTR_EL0.DminLine: log2 of the smallest data cache line, in 4-byte words.
size_t CtrEl0LineBytes() {
  uint64_t ctr = 0;
  __asm__ __volatile__("mrs %0, CTR_EL0" : "=r"(ctr));
  return size_t{4} << ((ctr >> 16) & 0xf);
}

#endif

}  // namespace

std::string_view CpuArchName(CpuArch arch) {
  switch (arch) {
    case CpuArch::kX86_64: return "x86_64";
    case CpuArch::kArm64: return "arm64";
    case CpuArch::kOther: return "other";
  }
  return "other";
}

bool IsAmdX86(const CpuFeatures& f) {
  return f.arch == CpuArch::kX86_64 && f.x86_vendor == "AuthenticAMD";
}

std::vector<std::pair<std::string, bool>> CpuFeatures::List() const {
  switch (arch) {
    case CpuArch::kX86_64:
      return {{"sse4.2-crc32", sse42}, {"pclmulqdq", pclmulqdq}, {"avx2", avx2},
              {"avx512f", avx512f},    {"avx512bw", avx512bw},   {"avx512vl", avx512vl},
              {"avx512-icl", avx512_icl}, {"vpclmulqdq", vpclmulqdq}, {"erms", erms},
              {"fsrm", fsrm}};
    case CpuArch::kArm64:
      return {{"crc32", arm_crc32}, {"pmull", arm_pmull}, {"lse-atomics", arm_lse},
              {"neon", arm_neon},   {"sve", arm_sve},     {"sve2", arm_sve2}};
    case CpuArch::kOther:
      break;
  }
  return {};
}

std::string DescribeMidr(uint64_t midr) {
  if (midr == 0) return "";
  const unsigned implementer = static_cast<unsigned>((midr >> 24) & 0xff);
  const unsigned part = static_cast<unsigned>((midr >> 4) & 0xfff);
  const char* name = nullptr;
  if (implementer == 0x41) {  // Arm Ltd: the parts ISA-L's CRC dispatch names
    switch (part) {
      case 0xd03: name = "Cortex-A53"; break;
      case 0xd07: name = "Cortex-A57"; break;
      case 0xd08: name = "Cortex-A72"; break;
      case 0xd0c: name = "Neoverse-N1"; break;
      case 0xd40: name = "Neoverse-V1"; break;
      case 0xd49: name = "Neoverse-N2"; break;
      default: break;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0x%02x:0x%03x%s%s%s", implementer, part,
                name != nullptr ? " (" : "", name != nullptr ? name : "",
                name != nullptr ? ")" : "");
  return buf;
}

size_t ParseCacheLineBytes(std::string_view text) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
    if (n > 4096) return 0;
    ++i;
  }
  if (i == 0) return 0;
  for (; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != ' ' && text[i] != '\t' && text[i] != '\r') return 0;
  }
  if (n == 0 || (n & (n - 1)) != 0) return 0;
  return static_cast<size_t>(n);
}

size_t DetectCacheLineBytes(std::string* source) {
  auto answer = [&](size_t bytes, const char* from) {
    if (source != nullptr) *source = from;
    return bytes;
  };
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size");
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    size_t bytes = ParseCacheLineBytes(ss.str());
    if (bytes != 0) return answer(bytes, "sysfs");
  }
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
  long v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (v > 0 && (v & (v - 1)) == 0) return answer(static_cast<size_t>(v), "sysconf");
#endif
#if defined(__aarch64__)
  return answer(CtrEl0LineBytes(), "ctr_el0");
#else
  return answer(64, "default");
#endif
}

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  DetectX86(&f);
#elif defined(__aarch64__)
  DetectArm64(&f);
#endif
  f.cache_line_bytes = DetectCacheLineBytes(&f.cache_line_source);
  return f;
}

const CpuFeatures& CpuFeaturesOnce() {
  static const CpuFeatures features = DetectCpuFeatures();
  return features;
}

}  // namespace folio
