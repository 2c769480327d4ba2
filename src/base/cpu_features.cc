#include "base/cpu_features.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
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
  f->avx512f = f->os_avx512 && (ebx & bit_AVX512F) != 0;
  f->avx512bw = f->avx512f && (ebx & bit_AVX512BW) != 0;
  f->avx512vl = f->avx512f && (ebx & bit_AVX512VL) != 0;
}

#elif defined(__aarch64__)

void DetectArm64(CpuFeatures* f) {
  f->arch = CpuArch::kArm64;
  unsigned long hwcap = getauxval(AT_HWCAP);
  f->arm_crc32 = (hwcap & HWCAP_CRC32) != 0;
  f->arm_lse = (hwcap & HWCAP_ATOMICS) != 0;
  f->arm_neon = (hwcap & HWCAP_ASIMD) != 0;
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

std::vector<std::pair<std::string, bool>> CpuFeatures::List() const {
  switch (arch) {
    case CpuArch::kX86_64:
      return {{"sse4.2-crc32", sse42}, {"pclmulqdq", pclmulqdq}, {"avx2", avx2},
              {"avx512f", avx512f},    {"avx512bw", avx512bw},   {"avx512vl", avx512vl}};
    case CpuArch::kArm64:
      return {{"crc32", arm_crc32}, {"lse-atomics", arm_lse}, {"neon", arm_neon}};
    case CpuArch::kOther:
      break;
  }
  return {};
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
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
  long v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (v > 0 && (v & (v - 1)) == 0) return answer(static_cast<size_t>(v), "sysconf");
#endif
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size");
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    size_t bytes = ParseCacheLineBytes(ss.str());
    if (bytes != 0) return answer(bytes, "sysfs");
  }
  return answer(64, "default");
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
