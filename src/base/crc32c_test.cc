#include "base/crc32c.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace folio {
namespace {

// Bitwise reference implementation (reflected polynomial 0x82F63B78).
uint32_t ReferenceCrc32c(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
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
}

TEST(Crc32cTest, MatchesReferenceAndChains) {
  uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<unsigned char> buf(rng() % 5000);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    uint32_t want = ReferenceCrc32c(buf.data(), buf.size());
    EXPECT_EQ(Crc32c(buf.data(), buf.size()), want);
    size_t cut = buf.empty() ? 0 : rng() % buf.size();
    uint32_t chained = Crc32c(buf.data() + cut, buf.size() - cut, Crc32c(buf.data(), cut));
    EXPECT_EQ(chained, want);
  }
}

}  // namespace
}  // namespace folio
