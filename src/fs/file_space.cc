// FileData: truncate, fallocate, SEEK_DATA / SEEK_HOLE.
//
// Truncate (under the exclusive lock): the cache drops what lies past the new size (and
// records zero ranges, which reach the device as trims), the device cuts its pending records,
// and one transaction cuts the committed chunks at min(committed size, new size): slices past
// it go, a straddling slice keeps its part before, references follow. So no byte past the end
// of file survives in a slice, and growing a file later reads zeros there.
//
// Punch hole / zero range: the cache writes back and drops the pages of the range, then the
// device appends a kZero record over it (newest wins: the range reads zeros, its blocks lose
// references when a compaction or truncate rewrites the chunk).
#include <linux/falloc.h>

#include <algorithm>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"
#include "fs/slice_refs.h"
#include "fs/slice_view.h"

namespace folio::fs {

Status FileData::Truncate(uint64_t size, const Cred& cred) {
  // A pack entry in flight would commit the old size after this: let it land first.
  FOLIO_RETURN_IF_ERROR(WaitPacked());
  std::unique_lock<std::shared_mutex> io(io_);
  if (size > capacity_) FOLIO_RETURN_IF_ERROR(Regrow(size));
  // The cache first: dropping its pages past the size waits for their writeback, so no
  // record of them reaches the device after the cut below.
  FOLIO_RETURN_IF_ERROR(as_->Truncate(size));
  // The metadata is truncated before the device's flush lock is let go: a flush that took the
  // file's attributes before the cut (the commit of a just-closed file) cannot commit its old
  // size over the truncate.
  Status s;
  dev_->CutPending(size, [&] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (size > view_.size) MarkSparseLocked();  // [old size, size) is a hole
    }
    s = TruncateMeta(size, cred);
  });
  if (!s.ok()) {
    // The cache and the device are truncated already: keep the file that size here, so the
    // next commit writes it (and a later growth cuts or zeroes what the metadata still has).
    std::lock_guard<std::mutex> lock(mu_);
    view_.size = size;
    view_.size_dirty = true;
    view_.size_exact = true;
    view_.mtime_ns = view_.ctime_ns = WallNs();
    view_.times_dirty = true;
    MarkDirtyLocked();
  }
  return s;
}

Status FileData::TruncateMeta(uint64_t size, const Cred& cred) {
  const DataContext& ctx = dp_->ctx();
  const int64_t now = WallNs();
  const int64_t delete_after = now + ctx.format.deletion_grace_ms * 1000000;
  std::vector<std::pair<uint32_t, std::vector<meta::Slice>>> changed;
  meta::Inode out;
  bool elsewhere = false;
  Status s = ctx.meta->Transact("truncate", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    changed.clear();
    FOLIO_ASSIGN_OR_RETURN(out, GetInodeOrEnoent(t, ino_));
    elsewhere = ChangedSinceBase(out);
    const uint64_t committed_size = out.size_bytes;
    Overlay(&out);
    const uint64_t cut_at = std::min(committed_size, size);
    FOLIO_ASSIGN_OR_RETURN(std::vector<uint32_t> chunks, t.ListChunks(ino_));
    for (uint32_t idx : chunks) {
      const uint64_t base = static_cast<uint64_t>(idx) * meta::kChunkBytes;
      if (base + meta::kChunkBytes <= cut_at) continue;
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> old, t.GetChunk(ino_, idx));
      std::vector<meta::Slice> cut =
          base >= cut_at ? std::vector<meta::Slice>{} : CutSlices(old, static_cast<uint32_t>(cut_at - base));
      if (SameSlices(old, cut)) continue;
      FOLIO_RETURN_IF_ERROR(t.PutChunk(ino_, idx, cut));
      FOLIO_RETURN_IF_ERROR(ApplyRefDelta(t, old, cut, delete_after));
      changed.emplace_back(idx, std::move(cut));
    }
    const int64_t delta = Round4k(size) - Round4k(committed_size);
    if (delta != 0) FOLIO_RETURN_IF_ERROR(t.AddToCounter(meta::Counter::kUsedBytes, delta));
    out.size_bytes = size;  // Overlay above carried an uncommitted sparse mark
    out.mtime_ns = out.ctime_ns = now;
    out.mode = ModeAfterWrite(out, cred);
    return t.PutInode(out);
  });
  if (!s.ok()) return s;
  for (auto& [idx, slices] : changed) dev_->InvalidateChunk(idx);
  AdoptAttrs(out);
  if (elsewhere) MarkStale();
  return Status::OK();
}

Status FileData::PunchRange(uint64_t pos, uint64_t len) {
  FOLIO_RETURN_IF_ERROR(as_->Invalidate(pos, len));
  dev_->AddZero(pos, len);
  return Status::OK();
}

Status FileData::Fallocate(int mode, uint64_t pos, uint64_t len, const Cred& cred) {
  const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
  if ((mode & ~known) != 0) return Errno(EOPNOTSUPP, "fallocate mode " + std::to_string(mode));
  const bool punch = (mode & FALLOC_FL_PUNCH_HOLE) != 0;
  const bool zero = (mode & FALLOC_FL_ZERO_RANGE) != 0;
  const bool keep = (mode & FALLOC_FL_KEEP_SIZE) != 0;
  if (punch && zero) return Errno(EINVAL, "fallocate: punch hole and zero range together");
  if (punch && !keep) return Errno(EOPNOTSUPP, "fallocate: punch hole without keep size");
  if (len == 0) return Errno(EINVAL, "fallocate of 0 bytes");
  const uint64_t end = pos + len;
  if (end < pos || end > kMaxFileBytes) return Errno(EFBIG, "fallocate past " + std::to_string(kMaxFileBytes));
  std::unique_lock<std::shared_mutex> io(io_);
  const uint64_t old_size = size();
  if (punch || zero) {
    const uint64_t hi = zero ? end : std::min(end, old_size);
    if (pos < hi) FOLIO_RETURN_IF_ERROR(PunchRange(pos, hi - pos));
  }
  const bool grow = !keep && end > old_size;
  if (grow) {
    if (end > capacity_) FOLIO_RETURN_IF_ERROR(Regrow(end));
    FOLIO_RETURN_IF_ERROR(as_->Truncate(end));
  }
  if (!grow && !punch && !zero) return Status::OK();  // space "allocated": nothing to record
  const int64_t now = WallNs();
  std::lock_guard<std::mutex> lock(mu_);
  MarkSparseLocked();  // grown past the data, or punched / zeroed: holes
  if (punch || zero) written_.Remove((pos + kPageBytes - 1) / kPageBytes, end / kPageBytes);
  NoteModifiedLocked(grow ? end : 0, now, cred);
  return Status::OK();
}

Result<uint64_t> FileData::Seek(uint64_t pos, Whence whence) {
  // Dirty pages first go to the device, whose records the search reads.
  FOLIO_RETURN_IF_ERROR(Sync(SyncMode::kBackground));
  std::shared_lock<std::shared_mutex> io(io_);
  const uint64_t size = this->size();
  if (pos >= size) return Errno(ENXIO, InodeText(ino_) + ": seek at or past the end");
  const std::vector<uint32_t> known = dev_->KnownChunks();
  uint64_t at = pos;
  while (at < size) {
    const uint32_t chunk = static_cast<uint32_t>(at / meta::kChunkBytes);
    const uint64_t base = static_cast<uint64_t>(chunk) * meta::kChunkBytes;
    std::vector<std::pair<uint32_t, uint32_t>> extents;
    if (std::binary_search(known.begin(), known.end(), chunk)) {
      FOLIO_ASSIGN_OR_RETURN(extents, dev_->DataExtents(chunk));
    }
    const uint32_t in = static_cast<uint32_t>(at - base);
    if (whence == Whence::kData) {
      for (const auto& [a, b] : extents) {
        if (b <= in) continue;
        const uint64_t found = base + std::max(a, in);
        if (found >= size) return Errno(ENXIO, InodeText(ino_) + ": no data past " + std::to_string(pos));
        return found;
      }
    } else {
      uint32_t hole = in;
      for (const auto& [a, b] : extents) {
        if (b <= hole) continue;
        if (a > hole) break;
        hole = b;
      }
      if (hole < meta::kChunkBytes) return std::min<uint64_t>(size, base + hole);
    }
    at = base + meta::kChunkBytes;
  }
  if (whence == Whence::kData) return Errno(ENXIO, InodeText(ino_) + ": no data past " + std::to_string(pos));
  return size;
}

}  // namespace folio::fs
