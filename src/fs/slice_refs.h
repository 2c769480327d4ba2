// Reference counts of stored slices and packs (meta::SliceRef), kept inside the transaction
// that changes the slice records naming them.
//
//   kBlocks object: refs = the number of slice records (in any chunk of any file) naming it
//   kPacked object: refs = the sum of the lengths of the records naming it (its live bytes,
//                   so refs / object_bytes is the pack's live fraction for pack rewriting)
//
// An object whose count reaches 0 loses its SliceRef and goes on the deletion queue with
// not_before = now + the volume's deletion grace period: a reader holding an older slice list
// (an open file on any mount, a read in flight, a compaction copying it) still finds it.
//
// Thread safety: pure functions over the caller's Txn.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "meta/meta_engine.h"

namespace folio::fs {

// A record's weight in its object's refs (0 for kZero).
int64_t RefWeight(const meta::Slice& s);

// Applies the change of one set of records (`before`) into another (`after`) to the refs of
// every object they name: objects only in `after` gain a SliceRef, objects whose count reaches
// 0 are queued for deletion not before delete_after_ns.
// Errors: Corruption when a count would go negative or an object named by `before` has no
// SliceRef (naming it).
Status ApplyRefDelta(meta::Txn& txn, std::span<const meta::Slice> before,
                     std::span<const meta::Slice> after, int64_t delete_after_ns);

}  // namespace folio::fs
