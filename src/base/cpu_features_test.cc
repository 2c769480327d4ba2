#include "base/cpu_features.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace folio {
namespace {

// The kernel's view of the CPU: the "flags" (x86) or "Features" (arm64) line of
// /proc/cpuinfo. The kernel clears flags whose state it does not save, so it must agree with
// cpuid + xgetbv.
std::set<std::string> ProcCpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      while (words >> w) flags.insert(w);
      break;
    }
  }
  return flags;
}

#if defined(__aarch64__)
// What qemu-user's CPU models offer (`make test-arm64` names the model in FOLIO_QEMU_CPU):
// max is an ARMv8.x+ CPU with everything, cortex-a53 an ARMv8.0 one without LSE or SVE.
void ExpectQemuModel(const CpuFeatures& f, const std::string& model) {
  EXPECT_EQ(f.arch, CpuArch::kArm64);
  EXPECT_TRUE(f.arm_neon);
  EXPECT_TRUE(f.arm_crc32);
  EXPECT_TRUE(f.arm_pmull);
  if (model == "max") {
    EXPECT_TRUE(f.arm_lse);
    EXPECT_TRUE(f.arm_sve);
    EXPECT_TRUE(f.arm_sve2);
    EXPECT_GE(f.sve_vector_bytes, 16u);
    EXPECT_EQ(f.sve_vector_bytes % 16, 0u);
  } else if (model == "cortex-a53") {
    EXPECT_FALSE(f.arm_lse);
    EXPECT_FALSE(f.arm_sve);
    EXPECT_EQ(f.sve_vector_bytes, 0u);
    EXPECT_EQ(DescribeMidr(f.arm_midr), "0x41:0xd03 (Cortex-A53)");
  } else {
    ADD_FAILURE() << "FOLIO_QEMU_CPU=" << model << ": no expectations for this model";
  }
}
#endif

#if defined(__x86_64__)
// The "vendor_id" of /proc/cpuinfo (the kernel's copy of cpuid leaf 0's string), or "".
std::string ProcCpuinfoVendor() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      words >> w;
      return w;
    }
  }
  return "";
}
#endif

TEST(CpuFeaturesTest, AgreesWithProcCpuinfo) {
  std::set<std::string> flags = ProcCpuinfoFlags();
  CpuFeatures f = DetectCpuFeatures();
#if defined(__aarch64__)
  // qemu-user 7.2 shows the host's /proc/cpuinfo: compare with the emulated model instead.
  const char* qemu_cpu = std::getenv("FOLIO_QEMU_CPU");
  if (qemu_cpu != nullptr && flags.count("asimd") == 0) {
    ExpectQemuModel(f, qemu_cpu);
    return;
  }
#endif
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
#if defined(__x86_64__)
  EXPECT_EQ(f.arch, CpuArch::kX86_64);
  EXPECT_EQ(f.x86_vendor, ProcCpuinfoVendor());
  EXPECT_EQ(IsAmdX86(f), f.x86_vendor == "AuthenticAMD");
  EXPECT_EQ(f.sse42, flags.count("sse4_2") == 1);
  EXPECT_EQ(f.pclmulqdq, flags.count("pclmulqdq") == 1);
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.vpclmulqdq, flags.count("vpclmulqdq") == 1);
  EXPECT_EQ(f.erms, flags.count("erms") == 1);
  EXPECT_EQ(f.fsrm, flags.count("fsrm") == 1);
  if (f.avx512_icl) {
    for (const char* flag : {"avx512dq", "avx512cd", "avx512_vbmi2", "gfni", "vaes",
                             "avx512_vnni", "avx512_bitalg", "avx512_vpopcntdq"}) {
      EXPECT_EQ(flags.count(flag), 1u) << flag;
    }
  }
  // AVX-512 implies AVX2-capable OS state.
  if (f.avx512f) {
    EXPECT_TRUE(f.os_avx);
  }
#elif defined(__aarch64__)
  EXPECT_EQ(f.arch, CpuArch::kArm64);
  EXPECT_FALSE(IsAmdX86(f));
  EXPECT_EQ(f.arm_crc32, flags.count("crc32") == 1);
  EXPECT_EQ(f.arm_lse, flags.count("atomics") == 1);
  EXPECT_EQ(f.arm_neon, flags.count("asimd") == 1);
  EXPECT_EQ(f.arm_pmull, flags.count("pmull") == 1);
  EXPECT_EQ(f.arm_sve, flags.count("sve") == 1);
  EXPECT_EQ(f.arm_sve2, flags.count("sve2") == 1);
#endif
}

TEST(CpuFeaturesTest, ListMatchesFields) {
  CpuFeatures f = DetectCpuFeatures();
  auto list = f.List();
#if defined(__x86_64__)
  ASSERT_EQ(list.size(), 10u);
  EXPECT_EQ(list[0].first, "sse4.2-crc32");
  EXPECT_EQ(list[0].second, f.sse42);
  EXPECT_EQ(list[2].first, "avx2");
  EXPECT_EQ(list[2].second, f.avx2);
  EXPECT_EQ(list[6].first, "avx512-icl");
  EXPECT_EQ(list[6].second, f.avx512_icl);
#elif defined(__aarch64__)
  ASSERT_EQ(list.size(), 6u);
  EXPECT_EQ(list[2].first, "lse-atomics");
  EXPECT_EQ(list[2].second, f.arm_lse);
  EXPECT_EQ(list[4].first, "sve");
  EXPECT_EQ(list[4].second, f.arm_sve);
#endif
  EXPECT_EQ(&CpuFeaturesOnce(), &CpuFeaturesOnce());
  EXPECT_EQ(CpuFeaturesOnce().avx2, f.avx2);
}

TEST(CpuFeaturesTest, CacheLineIsAPowerOfTwoFromANamedSource) {
  std::string source;
  size_t bytes = DetectCacheLineBytes(&source);
  EXPECT_GE(bytes, 16u);
  EXPECT_LE(bytes, 4096u);
  EXPECT_EQ(bytes & (bytes - 1), 0u);
  EXPECT_TRUE(source == "sysconf" || source == "sysfs" || source == "ctr_el0" ||
              source == "default")
      << source;
  // The kernel's sysfs answer comes first; sysconf only when sysfs has none.
  std::ifstream sysfs("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size");
  std::stringstream text;
  text << sysfs.rdbuf();
  if (sysfs && ParseCacheLineBytes(text.str()) != 0) {
    EXPECT_EQ(source, "sysfs");
    EXPECT_EQ(bytes, ParseCacheLineBytes(text.str()));
  } else if (long sc = sysconf(_SC_LEVEL1_DCACHE_LINESIZE); sc > 0) {
    EXPECT_EQ(source, "sysconf");
    EXPECT_EQ(bytes, static_cast<size_t>(sc));
  }
  EXPECT_EQ(DetectCpuFeatures().cache_line_bytes, bytes);
}

TEST(CpuFeaturesTest, ParseCacheLineBytes) {
  EXPECT_EQ(ParseCacheLineBytes("64\n"), 64u);
  EXPECT_EQ(ParseCacheLineBytes("128"), 128u);
  EXPECT_EQ(ParseCacheLineBytes("256 \n"), 256u);
  EXPECT_EQ(ParseCacheLineBytes(""), 0u);
  EXPECT_EQ(ParseCacheLineBytes("0\n"), 0u);
  EXPECT_EQ(ParseCacheLineBytes("48\n"), 0u);     // not a power of two
  EXPECT_EQ(ParseCacheLineBytes("64k"), 0u);
  EXPECT_EQ(ParseCacheLineBytes("8192"), 0u);     // beyond any real line
  EXPECT_EQ(ParseCacheLineBytes("99999999999999999999999"), 0u);
  EXPECT_EQ(ParseCacheLineBytes("-64"), 0u);
}

TEST(CpuFeaturesTest, DescribeMidr) {
  EXPECT_EQ(DescribeMidr(0), "");
  EXPECT_EQ(DescribeMidr(0x410fd0c1), "0x41:0xd0c (Neoverse-N1)");
  EXPECT_EQ(DescribeMidr(0x410fd034), "0x41:0xd03 (Cortex-A53)");
  EXPECT_EQ(DescribeMidr(0x610f0220), "0x61:0x022");
}

}  // namespace
}  // namespace folio
