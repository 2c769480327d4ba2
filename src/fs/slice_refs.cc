#include "fs/slice_refs.h"

#include <map>
#include <string>

namespace folio::fs {

int64_t RefWeight(const meta::Slice& s) {
  switch (s.kind) {
    case meta::SliceKind::kBlocks: return 1;
    case meta::SliceKind::kPacked: return s.len;
    case meta::SliceKind::kZero: return 0;
  }
  return 0;
}

Status ApplyRefDelta(meta::Txn& txn, std::span<const meta::Slice> before,
                     std::span<const meta::Slice> after, int64_t delete_after_ns) {
  struct Delta {
    meta::SliceKind kind;
    uint32_t object_bytes;
    int64_t delta = 0;
  };
  std::map<uint64_t, Delta> deltas;
  for (const meta::Slice& s : before) {
    if (s.kind == meta::SliceKind::kZero) continue;
    auto [it, inserted] = deltas.try_emplace(Raw(s.id), Delta{s.kind, s.object_bytes, 0});
    it->second.delta -= RefWeight(s);
  }
  for (const meta::Slice& s : after) {
    if (s.kind == meta::SliceKind::kZero) continue;
    auto [it, inserted] = deltas.try_emplace(Raw(s.id), Delta{s.kind, s.object_bytes, 0});
    it->second.delta += RefWeight(s);
  }
  for (const auto& [id, d] : deltas) {
    if (d.delta == 0) continue;
    const meta::SliceId sid{id};
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::SliceRef> ref, txn.GetSliceRef(sid));
    if (!ref) {
      if (d.delta < 0) {
        return Status::Corruption("slice " + std::to_string(id) +
                                  " is named by a slice record but has no reference count");
      }
      FOLIO_RETURN_IF_ERROR(txn.PutSliceRef(meta::SliceRef{sid, d.kind, d.object_bytes, d.delta}));
      continue;
    }
    ref->refs += d.delta;
    if (ref->refs > 0) {
      FOLIO_RETURN_IF_ERROR(txn.PutSliceRef(*ref));
      continue;
    }
    if (ref->refs < 0) {
      return Status::Corruption("slice " + std::to_string(id) + ": reference count below zero");
    }
    FOLIO_RETURN_IF_ERROR(txn.DeleteSliceRef(sid));
    meta::Deletion del;
    del.kind = meta::DeletionKind::kSlice;
    del.id = id;
    del.slice_kind = ref->kind;
    del.bytes = ref->object_bytes;
    del.not_before_ns = delete_after_ns;
    FOLIO_RETURN_IF_ERROR(txn.QueueDeletion(del).status());
  }
  return Status::OK();
}

}  // namespace folio::fs
