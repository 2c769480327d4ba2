#include "base/crc32c.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/test_seed.h"

namespace folio {
namespace {

// Bitwise reference implementation (reflected polynomial 0x82F63B78): no tables, no
// instructions, nothing shared with ISA-L.
uint32_t ReferenceCrc32c(const unsigned char* p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, KnownVector) {
  const char* s = "123456789";
  EXPECT_EQ(Crc32c(s, 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  for (CrcImpl impl : {CrcImpl::kHw, CrcImpl::kSw}) {
    EXPECT_EQ(Crc32cWith(impl, s, 9), 0xE3069283u) << CrcImplName(impl);
    EXPECT_EQ(Crc32cWith(impl, "", 0), 0u);
  }
}

// Both implementations against the reference on random lengths (0..~70K, and a few up to a
// 2 MiB folio) at every start alignment 0..63, chained at a random cut.
TEST(Crc32cTest, EveryImplementationMatchesTheReferenceAtRandomLengthsAndAlignments) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> pool((2u << 20) + 4096);
  for (auto& b : pool) b = static_cast<unsigned char>(rng());
  for (int iter = 0; iter < 300; ++iter) {
    size_t len;
    if (iter < 64) {
      len = static_cast<size_t>(iter);  // every short length, where kernels take tail paths
    } else if (iter % 100 == 0) {
      len = (2u << 20) - rng() % 8;
    } else {
      len = rng() % 70000;
    }
    const size_t align = rng() % 64;
    const unsigned char* p = pool.data() + align;
    const uint32_t want = ReferenceCrc32c(p, len);
    const size_t cut = len == 0 ? 0 : rng() % len;
    for (CrcImpl impl : {CrcImpl::kHw, CrcImpl::kSw}) {
      SCOPED_TRACE(std::string(CrcImplName(impl)) + " len " + std::to_string(len) + " align " +
                   std::to_string(align) + " iter " + std::to_string(iter));
      ASSERT_EQ(Crc32cWith(impl, p, len), want);
      ASSERT_EQ(Crc32cWith(impl, p + cut, len - cut, Crc32cWith(impl, p, cut)), want);
    }
  }
}

TEST(Crc32cTest, SetCrcImplSwitchesTheDispatchedFunction) {
  const CrcImpl before = CurrentCrcImpl();
  const std::string data(10000, 'x');
  const uint32_t want = ReferenceCrc32c(reinterpret_cast<const unsigned char*>(data.data()),
                                        data.size());
  for (CrcImpl impl : {CrcImpl::kSw, CrcImpl::kHw}) {
    SetCrcImpl(impl);
    EXPECT_EQ(CurrentCrcImpl(), impl);
    EXPECT_EQ(Crc32c(data.data(), data.size()), want);
  }
  SetCrcImpl(before);
}

// Where the CPU has CRC instructions, ISA-L's crc32_iscsi uses a kernel that runs them (not
// its table code). On arm64 the rule Folio reports is checked against ISA-L's own dispatcher,
// so this also checks that Debian's arm64 ISA-L reaches its CRC32 / PMULL kernels here.
TEST(Crc32cTest, IsaLUsesTheCrcInstructionsTheCpuHas) {
  const CpuFeatures& f = CpuFeaturesOnce();
  const std::string kernel = IsalCrcKernel(f);
  SCOPED_TRACE(kernel);
  EXPECT_NE(IsalCrcKernelDetail(kernel), "unknown");
#if defined(__x86_64__)
  EXPECT_EQ(kernel != "crc32_iscsi_base", f.sse42);
#elif defined(__aarch64__)
  EXPECT_EQ(IsalCrcDispatcherChoice(), kernel);
  EXPECT_EQ(kernel != "crc32_iscsi_base", f.arm_pmull || f.arm_crc32) << "crc32 without pmull";
#endif
}

}  // namespace
}  // namespace folio
