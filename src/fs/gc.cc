// Gc (see fsck.h): objects nothing references, queued for deletion after a safety window.
#include <map>
#include <set>

#include "fs/fs_internal.h"
#include "fs/fsck.h"
#include "fs/store_io.h"

namespace folio::fs {

namespace {

constexpr size_t kGcBatch = 4096;  // slice refs per listing read

}  // namespace

Result<GcReport> Gc(meta::MetaEngine* meta, store::BlockStore* store, const GcOptions& options) {
  GcReport report;
  std::optional<meta::FormatRecord> format;
  std::map<uint64_t, meta::SliceRef> refs;
  std::set<uint64_t> queued;  // object ids already on the deletion queue
  std::vector<std::pair<uint64_t, meta::Deletion>> items;
  FOLIO_RETURN_IF_ERROR(meta->Transact("gc", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(format, t.GetFormat());
    FOLIO_ASSIGN_OR_RETURN(items, t.ListDeletions(INT64_MAX, SIZE_MAX));
    return Status::OK();
  }));
  if (!format) return Status::InvalidArgument(meta->url() + ": not a formatted Folio volume");
  for (const auto& [key, d] : items) {
    if (d.kind == meta::DeletionKind::kSlice) queued.insert(d.id);
  }
  meta::SliceId after{0};
  for (;;) {
    std::vector<meta::SliceRef> page;
    FOLIO_RETURN_IF_ERROR(meta->Transact("gc", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(page, t.ListSliceRefs(after, kGcBatch));
      return Status::OK();
    }));
    if (page.empty()) break;
    after = page.back().id;
    for (const meta::SliceRef& r : page) refs[Raw(r.id)] = r;
  }

  // Leaked objects, grouped by slice (or pack) id: what a deletion item for the id must cover.
  struct Leak {
    meta::SliceKind kind;
    uint64_t object_bytes = 0;
  };
  std::map<uint64_t, Leak> leaks;
  const uint64_t bb = format->block_bytes;
  for (store::ObjectKind kind : {store::ObjectKind::kBlock, store::ObjectKind::kPack}) {
    FOLIO_ASSIGN_OR_RETURN(std::vector<store::ObjectInfo> all, store->List(kind));
    for (const store::ObjectInfo& o : all) {
      report.objects++;
      report.object_bytes += o.key.bytes;
      auto r = refs.find(o.key.id);
      if (kind == store::ObjectKind::kPack) {
        report.packs++;
        report.pack_bytes += o.key.bytes;
        if (r != refs.end()) {
          report.pack_live_bytes += static_cast<uint64_t>(r->second.refs);
          if (static_cast<double>(r->second.refs) < 0.5 * o.key.bytes) report.packs_below_half++;
        }
      }
      if (r != refs.end()) {
        report.referenced++;
        continue;
      }
      if (queued.count(o.key.id) != 0) continue;  // on its way out already
      report.leaked++;
      report.leaked_bytes += o.key.bytes;
      Leak& l = leaks[o.key.id];
      if (kind == store::ObjectKind::kPack) {
        l.kind = meta::SliceKind::kPacked;
        l.object_bytes = o.key.bytes;
      } else {
        l.kind = meta::SliceKind::kBlocks;
        l.object_bytes = std::max<uint64_t>(l.object_bytes, static_cast<uint64_t>(o.key.index) * bb + o.key.bytes);
      }
    }
  }
  if (options.delete_leaked && !leaks.empty()) {
    const int64_t not_before = WallNs() + options.safety_window_ms * 1000000;
    FOLIO_RETURN_IF_ERROR(meta->Transact("gc_queue", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      for (const auto& [id, l] : leaks) {
        meta::Deletion d;
        d.kind = meta::DeletionKind::kSlice;
        d.id = id;
        d.slice_kind = l.kind;
        d.bytes = l.object_bytes;
        d.not_before_ns = not_before;
        FOLIO_RETURN_IF_ERROR(t.QueueDeletion(d).status());
      }
      return Status::OK();
    }));
    report.queued = leaks.size();
  }
  if (!options.delete_leaked) {
    report.pending_deletions = items.size();
    return report;
  }
  // Carry out the slice deletions that are due, skipping objects that gained a reference.
  const int64_t now = WallNs();
  for (const auto& item : items) {
    // Named, not a structured binding: the lambda below captures key (clang 14, the fuzz
    // build's compiler, cannot capture structured bindings).
    const auto& key = item.first;
    const auto& d = item.second;
    if (d.kind != meta::DeletionKind::kSlice || d.not_before_ns > now) {
      report.pending_deletions++;
      continue;
    }
    if (refs.count(d.id) == 0) {
      StoreBatch batch(store);
      AddObjectDeletes(&batch, d.slice_kind, d.id, d.bytes, bb);
      FOLIO_RETURN_IF_ERROR(batch.Run());
      report.deleted++;
    }
    FOLIO_RETURN_IF_ERROR(meta->Transact("gc_done", meta::TxnMode::kWrite,
                                         [&](meta::Txn& t) -> Status { return t.RemoveDeletion(key); }));
  }
  report.pending_deletions += report.queued;
  return report;
}

}  // namespace folio::fs
