// What every metadata engine's decoder checks in a stored record before trusting it (a
// SQLite or PostgreSQL row, a Redis hash field), and the LIMIT of a listing query: written
// once for all engines.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace folio::meta {

// Whether v fits a uint32 field.
inline bool FitsU32(int64_t v) { return v >= 0 && v <= int64_t{UINT32_MAX}; }
// Whether t is a stored FileType (1..7).
inline bool ValidFileType(int64_t t) { return t >= 1 && t <= 7; }
// Whether t is a stored lock type (0..2).
inline bool ValidLockType(int64_t t) { return t >= 0 && t <= 2; }
// A listing's entry limit as an SQL LIMIT parameter (signed 64-bit), clamped.
inline int64_t SqlLimit(size_t limit) {
  return static_cast<int64_t>(std::min<size_t>(limit, std::numeric_limits<int64_t>::max()));
}

}  // namespace folio::meta
