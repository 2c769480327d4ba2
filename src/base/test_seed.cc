#include "base/test_seed.h"

#include <cstdio>
#include <cstdlib>

#include "base/seed.h"

namespace folio {

std::optional<uint64_t> EnvSeed() {
  const char* s = std::getenv("FOLIO_SEED");
  if (s == nullptr || *s == '\0') return std::nullopt;
  Result<uint64_t> seed = ParseSeed(s, "FOLIO_SEED");
  if (!seed.ok()) {
    const std::string message(seed.status().message());
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(2);
  }
  return *seed;
}

uint64_t TestSeed() {
  const std::optional<uint64_t> env = EnvSeed();
  return env.has_value() ? *env : RandomSeed();
}

uint64_t TestSeedOr(uint64_t default_seed) { return EnvSeed().value_or(default_seed); }

std::string SeedTrace(uint64_t seed) { return "FOLIO_SEED=" + std::to_string(seed); }

}  // namespace folio
