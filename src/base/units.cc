#include "base/units.h"

#include <bit>
#include <cctype>
#include <cstdio>
#include <limits>

namespace folio {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "123abc" into 123 and "abc". Fails if there are no digits or on overflow.
bool SplitNumber(std::string_view text, uint64_t* number, std::string* suffix) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    n = n * 10 + d;
    ++i;
  }
  if (i == 0) return false;
  *number = n;
  *suffix = Lower(text.substr(i));
  return true;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text, std::string_view what) {
  uint64_t n = 0;
  std::string suffix;
  auto bad = [&] {
    return Status::InvalidArgument(std::string(what) + " '" + std::string(text) +
                                   "': not a size; use a number with an optional K, M, G or T "
                                   "suffix (e.g. 4K, 64K, 2M, 1G)");
  };
  if (!SplitNumber(text, &n, &suffix)) return bad();
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'b': shift = 0; break;
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: return bad();
    }
    std::string rest = suffix.substr(1);
    if (suffix[0] == 'b') {
      if (!rest.empty()) return bad();
    } else if (!(rest.empty() || rest == "i" || rest == "b" || rest == "ib")) {
      return bad();
    }
  }
  if (shift > 0 && n > (std::numeric_limits<uint64_t>::max() >> shift)) return bad();
  return n << shift;
}

std::string FormatSize(uint64_t bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  if (v < 1024 || u == 4) return std::to_string(v) + kUnits[u];
  double d = static_cast<double>(bytes);
  u = 0;
  while (u < 4 && d >= 1024) {
    d /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%s", d, kUnits[u]);
  return buf;
}

Result<uint64_t> ParseDurationUs(std::string_view text, std::string_view what) {
  uint64_t n = 0;
  std::string suffix;
  auto bad = [&] {
    return Status::InvalidArgument(std::string(what) + " '" + std::string(text) +
                                   "': not a duration; use a number with an optional us, ms, s, "
                                   "m or h suffix (e.g. 20s)");
  };
  if (!SplitNumber(text, &n, &suffix)) return bad();
  uint64_t mult = 1000000;
  if (suffix.empty() || suffix == "s") mult = 1000000;
  else if (suffix == "us") mult = 1;
  else if (suffix == "ms") mult = 1000;
  else if (suffix == "m") mult = 60ull * 1000000;
  else if (suffix == "h") mult = 3600ull * 1000000;
  else return bad();
  if (n > std::numeric_limits<uint64_t>::max() / mult) return bad();
  return n * mult;
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

int Log2(uint64_t v) { return 63 - std::countl_zero(v); }

}  // namespace folio
