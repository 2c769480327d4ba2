// Slice resolution: which slice each byte of a chunk comes from. A chunk's slices are kept
// oldest first; where they overlap the newest wins, and bytes no slice covers (holes) read as
// zeros, as do bytes of kZero slices.
//
//   slices (oldest first)     visible segments of [0, 12)
//   0: [0 ........ 8)          [0,2) from 0   [2,5) from 1   [5,8) from 0
//   1:     [2 .. 5)            [8,10) hole    [10,12) from 2
//   2:               [10..12)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "meta/meta_types.h"

namespace folio::fs {

struct Segment {
  uint32_t pos = 0;  // in the chunk
  uint32_t len = 0;
  int src = -1;      // index into the slice list; -1 = a hole
};

// The visible segments of [from, to) in ascending order, covering it exactly.
// REQUIRES: from <= to <= kChunkBytes.
std::vector<Segment> ResolveSlices(std::span<const meta::Slice> slices, uint32_t from,
                                   uint32_t to);

// Bytes of [0, kChunkBytes) that hold data (visible parts of kBlocks / kPacked slices).
uint64_t DataBytes(std::span<const meta::Slice> slices);

// Cuts the slices at `end` (a chunk offset): slices past it are dropped, a slice straddling it
// keeps its part before (the caller adjusts reference counts from the difference).
std::vector<meta::Slice> CutSlices(std::span<const meta::Slice> slices, uint32_t end);

// Whether two slice lists are the same records in the same order (a transaction that rewrites
// a chunk checks it still holds the list it read).
bool SameSlices(std::span<const meta::Slice> a, std::span<const meta::Slice> b);

}  // namespace folio::fs
