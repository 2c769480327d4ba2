// DataPath: compaction of chunks with many slices, and rewriting of packs with little live data.
//
// Chunk compaction (a chunk this mount appended compact_slices records to since it last looked,
// when the bytes of those shorter than a block pay for the rewrite, at most compact_write_amp
// bytes written per byte appended, or most of what the list references is shadowed, or the
// records reached compact_slices_max; FsOptions):
//   1. read the chunk's committed list and the bytes it shows (every data extent; holes and
//      kZero ranges stay holes, so a sparse file stays sparse);
//   2. write those bytes as ONE new stored slice (extents back to back, blocks put and durable);
//   3. one transaction: if the list is still exactly the one read, replace it by one record per
//      extent naming the new slice, and drop the old records' references (objects at 0 are
//      queued for deletion after the grace period, so a reader holding the old list, on this
//      mount or another, still finds its blocks). If the list changed, the new slice is deleted
//      and the chunk is looked at again later.
// The file's device forgets its cached list of the chunk (pending records stay on top).
//
// Pack rewriting: packs whose live bytes (their refs) fell below pack_live_min of their size
// are found by a scan of the slice references, and the files still in them by an incremental
// scan of inodes (a bounded number per pass); each such file's entry is copied into a new pack
// and the file re-pointed in one transaction that checks it still names the old entry.
#include <algorithm>
#include <cstring>
#include <map>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/slice_refs.h"
#include "fs/slice_view.h"
#include "fs/stats_counters.h"
#include "fs/store_io.h"
#include "base/clock.h"

namespace folio::fs {

namespace {

constexpr size_t kCompactionsPerPass = 16;

}  // namespace

bool KeepsSlice(const meta::Slice& s, const KeptCandidate& c, uint64_t block_bytes) {
  // A stored slice (not a pack entry, whose pack is rewritten by its own rules), of which the
  // chunk shows at least a block and at least half (the space it keeps is at most twice what
  // it shows), in at most kKeptSegmentsMax pieces (the records the rewrite keeps for it).
  return s.kind == meta::SliceKind::kBlocks && c.visible_bytes >= block_bytes &&
         c.visible_bytes * 2 >= s.object_bytes && c.segments <= kKeptSegmentsMax;
}

Status DataPath::CompactNoted() {
  std::vector<std::pair<std::pair<uint64_t, uint32_t>, Appended>> work;
  {
    const uint64_t now = MonotonicNowNs();
    const uint64_t quiet_ns = static_cast<uint64_t>(ctx_.options.compact_quiet_ms) * 1000000;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = compact_.begin(); it != compact_.end() && work.size() < kCompactionsPerPass;) {
      auto found = appended_.find(*it);
      if (found != appended_.end() && found->second.last_append_ns + quiet_ns > now &&
          found->second.records < ctx_.options.compact_slices_max) {
        FsCounters::Add(ctx_.counters->compactions_hot);
        ++it;  // written to lately: left for a later pass (FsOptions::compact_quiet_ms)
        continue;
      }
      work.emplace_back(*it, found != appended_.end() ? found->second : Appended{});
      if (found != appended_.end()) appended_.erase(found);
      it = compact_.erase(it);
    }
  }
  Status first;
  for (const auto& [key, appended] : work) {
    const auto& [ino, chunk] = key;
    Status s = CompactChunk(InodeId{ino}, chunk, appended);
    if (first.ok() && !s.ok() && !s.IsNotFound()) first = s;
  }
  return first;
}

Status DataPath::CompactChunk(InodeId ino, uint32_t chunk, const Appended& appended) {
  const uint64_t bb = ctx_.format.block_bytes;
  std::vector<meta::Slice> old;
  uint64_t size = 0;
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("compact_read", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(meta::Inode inode, GetInodeOrEnoent(t, ino));
    size = inode.size_bytes;
    FOLIO_ASSIGN_OR_RETURN(old, t.GetChunk(ino, chunk));
    return Status::OK();
  }));
  if (old.size() <= 1) return Status::OK();
  const uint64_t base = static_cast<uint64_t>(chunk) * meta::kChunkBytes;
  if (size <= base) return Status::OK();  // past the end: a truncate removes it
  const uint32_t end = static_cast<uint32_t>(std::min<uint64_t>(meta::kChunkBytes, size - base));

  // The data segments the chunk shows, and their bytes.
  std::vector<Segment> segs = ResolveSlices(old, 0, end);
  auto data = [&](const Segment& seg) {
    return seg.src >= 0 && old[seg.src].kind != meta::SliceKind::kZero;
  };
  // The stored slices the rewrite keeps naming instead of copying (KeepsSlice): those a large
  // write left mostly visible, so a chunk overwritten by large writes is compacted by
  // dropping the records they shadow, without reading or writing its data.
  std::map<uint64_t, KeptCandidate> seen;  // by slice id
  for (const Segment& seg : segs) {
    if (!data(seg)) continue;
    KeptCandidate& k = seen[Raw(old[seg.src].id)];
    k.visible_bytes += seg.len;
    k.segments++;
  }
  // Per segment, decided once: kept (named again) or copied; false for holes and zeros.
  std::vector<bool> keep(segs.size(), false);
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!data(segs[i])) continue;
    const meta::Slice& sl = old[segs[i].src];
    keep[i] = KeepsSlice(sl, seen[Raw(sl.id)], bb);
  }
  std::vector<std::pair<uint32_t, uint32_t>> extents;  // (pos, len) of the bytes copied
  uint64_t bytes = 0;       // every data byte the chunk shows
  uint64_t copy_bytes = 0;  // those the rewrite copies into its new slice
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& seg = segs[i];
    if (!data(seg)) continue;
    bytes += seg.len;
    if (keep[i]) continue;
    if (!extents.empty() && extents.back().first + extents.back().second == seg.pos) {
      extents.back().second += seg.len;
    } else {
      extents.emplace_back(seg.pos, seg.len);
    }
    copy_bytes += seg.len;
  }
  // Worth it when the small records appended pay for the rewrite (at most compact_write_amp
  // bytes written per byte appended), when most of what the list references is shadowed (space
  // to reclaim), or when the records are too many. Else wait for more appends (what came
  // meanwhile is kept; large bytes count again from here: the shadowed bytes were just seen).
  const FsOptions& o = ctx_.options;
  const uint64_t amp = std::max<uint32_t>(1, o.compact_write_amp);
  uint64_t referenced = 0;
  for (const meta::Slice& sl : old) referenced += sl.kind == meta::SliceKind::kZero ? 0 : sl.len;
  const uint64_t shadowed = referenced > bytes ? referenced - bytes : 0;
  if (appended.records < o.compact_slices_max && appended.small_bytes * amp < copy_bytes &&
      shadowed < bytes) {
    Appended later = appended;
    later.large_bytes = 0;
    later.need_small = (copy_bytes + amp - 1) / amp;
    later.need_large = bytes - shadowed;
    NoteSlices(ino, chunk, later);
    FsCounters::Add(ctx_.counters->compactions_deferred);
    return Status::OK();
  }
  std::vector<meta::Slice> now;
  for (size_t i = 0; i < segs.size(); ++i) {  // the kept slices' records, one per run of a slice
    const Segment& seg = segs[i];
    if (!keep[i]) continue;
    const meta::Slice& src = old[seg.src];
    const uint32_t object_off = src.object_off + (seg.pos - src.pos);
    if (!now.empty() && now.back().id == src.id && now.back().pos + now.back().len == seg.pos &&
        now.back().object_off + now.back().len == object_off) {
      now.back().len += seg.len;
      continue;
    }
    meta::Slice r = src;
    r.pos = seg.pos;
    r.len = seg.len;
    r.object_off = object_off;
    now.push_back(r);
  }
  if (copy_bytes == 0 && now.size() >= old.size()) return Status::OK();  // nothing to gain
  meta::SliceId id{0};
  if (copy_bytes > 0) {
    std::vector<char> buf(copy_bytes);
    StoreBatch reads(ctx_.store);
    uint64_t at = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      const Segment& seg = segs[i];
      if (!data(seg) || keep[i]) continue;
      const meta::Slice& s = old[seg.src];
      AddObjectReads(&reads, s, s.object_off + (seg.pos - s.pos), seg.len, bb, buf.data() + at);
      at += seg.len;
    }
    FOLIO_RETURN_IF_ERROR(reads.Run());
    FOLIO_ASSIGN_OR_RETURN(id, NewSliceId());
    StoreBatch puts(ctx_.store);
    for (uint32_t b = 0; b < BlockCount(copy_bytes, bb); ++b) {
      puts.Put(BlockKey(Raw(id), b, copy_bytes, bb),
               buf.data() + static_cast<uint64_t>(b) * bb);
    }
    FOLIO_RETURN_IF_ERROR(puts.Run());
    uint32_t off = 0;
    for (const auto& [pos, len] : extents) {
      meta::Slice s;
      s.pos = pos;
      s.len = len;
      s.id = id;
      s.object_bytes = static_cast<uint32_t>(copy_bytes);
      s.object_off = off;
      s.kind = meta::SliceKind::kBlocks;
      now.push_back(s);
      off += len;
    }
  }
  std::sort(now.begin(), now.end(),
            [](const meta::Slice& a, const meta::Slice& b) { return a.pos < b.pos; });
  const int64_t delete_after = WallNs() + ctx_.format.deletion_grace_ms * 1000000;
  bool changed = false;
  Status s = ctx_.meta->Transact("compact", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> cur, t.GetChunk(ino, chunk));
    changed = !SameSlices(cur, old);
    if (changed) return Status::OK();
    FOLIO_RETURN_IF_ERROR(t.PutChunk(ino, chunk, now));
    return ApplyRefDelta(t, old, now, delete_after);
  });
  if (!s.ok() || changed) {
    if (copy_bytes > 0) {
      // Nobody names the new slice: delete it now.
      StoreBatch del(ctx_.store);
      AddObjectDeletes(&del, meta::SliceKind::kBlocks, Raw(id), copy_bytes, bb);
      (void)del.Run();
    }
    if (changed) {
      // Looked at again at the next pass.
      Appended again = appended;
      again.records = std::max<uint64_t>(again.records, o.compact_slices);
      again.need_small = again.need_large = 0;
      NoteSlices(ino, chunk, again);
    }
    return s;
  }
  FsCounters::Add(ctx_.counters->chunks_compacted);
  FsCounters::Add(ctx_.counters->compaction_bytes, copy_bytes);
  FsCounters::Add(ctx_.counters->compaction_kept_bytes, bytes - copy_bytes);
  if (std::shared_ptr<FileData> data = Find(ino)) data->device()->InvalidateChunk(chunk);
  return Status::OK();
}

}  // namespace folio::fs
