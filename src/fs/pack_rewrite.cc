// DataPath::RewritePacks: moving the live entries out of packs that are mostly dead space.
//
// Packs carry no list of the files in them (that is the metadata's job), so the rewrite works
// from two bounded, resumable scans per call:
//   1. the slice references, kRefScan per call: packs whose live bytes (refs) are below
//      pack_live_min of their size join the set of packs to empty (at most kLowMax);
//   2. the inodes, kInodeScan per call: a closed small file whose chunk 0 is one entry of such
//      a pack has its entry read (verified) and handed to the pack committer as a rewrite.
// When the inode scan wraps around, every file of the packs in the set has been visited: the
// set is cleared. A pack whose last live entry moved out reaches 0 references and is deleted
// through the queue after the grace period, like any object.
#include <algorithm>

#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/pack_writer.h"
#include "fs/store_io.h"

namespace folio::fs {

namespace {

constexpr size_t kRefScan = 4096;
constexpr size_t kInodeScan = 1024;
constexpr size_t kLowMax = 1024;

}  // namespace

Status DataPath::RewritePacks() {
  if (ctx_.format.pack_below_bytes == 0) return Status::OK();
  std::vector<meta::SliceRef> refs;
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("pack_scan", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(refs, t.ListSliceRefs(meta::SliceId{rewrite_.ref_cursor}, kRefScan));
    return Status::OK();
  }));
  rewrite_.ref_cursor = refs.size() < kRefScan ? 0 : Raw(refs.back().id);
  for (const meta::SliceRef& r : refs) {
    if (r.kind != meta::SliceKind::kPacked || rewrite_.low.size() >= kLowMax) continue;
    if (static_cast<double>(r.refs) < ctx_.options.pack_live_min * r.object_bytes) {
      rewrite_.low.insert(Raw(r.id));
    }
  }
  if (rewrite_.low.empty()) return Status::OK();

  std::vector<meta::Inode> inodes;
  std::vector<std::pair<InodeId, meta::Slice>> candidates;
  FOLIO_RETURN_IF_ERROR(ctx_.meta->Transact("pack_scan", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    candidates.clear();
    FOLIO_ASSIGN_OR_RETURN(inodes, t.ListInodes(InodeId{rewrite_.inode_cursor}, kInodeScan));
    for (const meta::Inode& inode : inodes) {
      if (inode.type != FileType::kRegular || inode.size_bytes == 0 ||
          inode.size_bytes >= ctx_.format.pack_below_bytes) {
        continue;
      }
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Slice> chunk, t.GetChunk(inode.ino, 0));
      if (chunk.size() == 1 && chunk[0].kind == meta::SliceKind::kPacked &&
          rewrite_.low.count(Raw(chunk[0].id)) != 0) {
        candidates.emplace_back(inode.ino, chunk[0]);
      }
    }
    return Status::OK();
  }));
  if (inodes.size() < kInodeScan) {
    rewrite_.inode_cursor = 0;
    rewrite_.low.clear();
  } else {
    rewrite_.inode_cursor = Raw(inodes.back().ino);
  }
  for (const auto& [ino, packed] : candidates) {
    if (!IdleOrAbsent(ino)) continue;  // an open or dirty file is packed by its own commit
    std::vector<char> content(packed.len);
    StoreBatch batch(ctx_.store);
    AddObjectReads(&batch, packed, packed.object_off, packed.len, ctx_.format.block_bytes,
                   content.data());
    FOLIO_RETURN_IF_ERROR(batch.Run());
    packs_->AddRewrite(ino, packed, content);
  }
  return Status::OK();
}

}  // namespace folio::fs
