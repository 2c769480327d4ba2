// Parsing and printing of sizes ("4K", "64KiB", "2M", "1G", "4096") and durations.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio {

// Parses a byte size: a decimal number with an optional binary suffix K/M/G/T (case-insensitive,
// optionally followed by "i", "iB" or "B"; all powers of 1024, as fio does). `what` names the
// thing in the error message, e.g. "--cache".
Result<uint64_t> ParseSize(std::string_view text, std::string_view what);

// "4K", "64K", "2M", "1G" when exact; otherwise "1.50M" style with two decimals.
std::string FormatSize(uint64_t bytes);

// Parses a duration: a number with optional suffix us, ms, s (default), m, h. Returns microseconds.
Result<uint64_t> ParseDurationUs(std::string_view text, std::string_view what);

bool IsPowerOfTwo(uint64_t v);
// log2 of a power of two.
int Log2(uint64_t v);

}  // namespace folio
