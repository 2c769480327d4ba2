#include "base/seed.h"

#include <cerrno>
#include <cstdlib>
#include <random>
#include <string>

namespace folio {

Result<uint64_t> ParseSeed(std::string_view text, std::string_view what) {
  const std::string s(text);
  const auto bad = [&] {
    return Status::InvalidArgument(std::string(what) + "=" + s +
                                   ": not a seed; use a decimal or 0x-hex number below 2^64 "
                                   "(e.g. " + std::string(what) + "=0x5eed)");
  };
  // strtoull skips blanks and accepts a sign (negating the value): neither is a seed.
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9')) return bad();
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end != s.c_str() + s.size()) return bad();
  return static_cast<uint64_t>(v);
}

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace folio
