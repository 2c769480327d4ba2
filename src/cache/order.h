// Folio order arithmetic shared by the read, write and readahead paths.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "folio/arena.h"
#include "folio/page_cache.h"

namespace folio::cache {

// Largest order k <= max_order with index % 2^k == 0 and index + 2^k <= limit (at least 0).
inline int AlignedOrder(uint64_t index, uint64_t limit, int max_order) {
  int k = max_order;
  if (index != 0) k = std::min(k, std::countr_zero(index));
  while (k > 0 && index + (uint64_t{1} << k) > limit) --k;
  return k;
}

// The policy's largest order (0 for 4k, the fixed order, the dynamic cap).
inline int PolicyMaxOrder(const FolioPolicy& p) {
  switch (p.kind) {
    case FolioPolicy::Kind::k4k: return 0;
    case FolioPolicy::Kind::kFixed: return std::clamp(p.fixed_order, 0, kMaxOrder);
    case FolioPolicy::Kind::kDynamic: return std::clamp(p.max_order, 0, kMaxOrder);
  }
  return 0;
}

// Packs a policy into 32 bits so an address space can swap it atomically.
inline uint32_t PackPolicy(const FolioPolicy& p) {
  return static_cast<uint32_t>(p.kind) | (static_cast<uint32_t>(p.fixed_order) << 4) |
         (static_cast<uint32_t>(p.max_order) << 8);
}
inline FolioPolicy UnpackPolicy(uint32_t v) {
  FolioPolicy p;
  p.kind = static_cast<FolioPolicy::Kind>(v & 0xf);
  p.fixed_order = static_cast<int>((v >> 4) & 0xf);
  p.max_order = static_cast<int>((v >> 8) & 0xf);
  return p;
}

}  // namespace folio::cache
