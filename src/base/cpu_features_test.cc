#include "base/cpu_features.h"

#include <unistd.h>

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

TEST(CpuFeaturesTest, AgreesWithProcCpuinfo) {
  std::set<std::string> flags = ProcCpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  CpuFeatures f = DetectCpuFeatures();
#if defined(__x86_64__)
  EXPECT_EQ(f.arch, CpuArch::kX86_64);
  EXPECT_EQ(f.sse42, flags.count("sse4_2") == 1);
  EXPECT_EQ(f.pclmulqdq, flags.count("pclmulqdq") == 1);
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
  // AVX-512 implies AVX2-capable OS state.
  if (f.avx512f) {
    EXPECT_TRUE(f.os_avx);
  }
#elif defined(__aarch64__)
  EXPECT_EQ(f.arch, CpuArch::kArm64);
  EXPECT_EQ(f.arm_crc32, flags.count("crc32") == 1);
  EXPECT_EQ(f.arm_lse, flags.count("atomics") == 1);
  EXPECT_EQ(f.arm_neon, flags.count("asimd") == 1);
#endif
}

TEST(CpuFeaturesTest, ListMatchesFields) {
  CpuFeatures f = DetectCpuFeatures();
  auto list = f.List();
#if defined(__x86_64__)
  ASSERT_EQ(list.size(), 6u);
  EXPECT_EQ(list[0].first, "sse4.2-crc32");
  EXPECT_EQ(list[0].second, f.sse42);
  EXPECT_EQ(list[2].first, "avx2");
  EXPECT_EQ(list[2].second, f.avx2);
#elif defined(__aarch64__)
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[1].first, "lse-atomics");
  EXPECT_EQ(list[1].second, f.arm_lse);
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
  EXPECT_TRUE(source == "sysconf" || source == "sysfs" || source == "default") << source;
  long sc = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (sc > 0) {
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

}  // namespace
}  // namespace folio
