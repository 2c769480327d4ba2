// Fsck and gc of a Folio FS volume, as library functions (the CLI's `folio fs fsck` and
// `folio fs gc`, and the tests after every remount).
//
// Fsck checks, over the metadata and the store:
//   - every directory entry names an inode of the entry's type; directories' ".." (parent),
//     link counts (2 + subdirectories) and entry counts; every other inode's link count equals
//     the entries naming it (an inode with no link must be sustained by a session or queued
//     for deletion); every inode is reachable; symlinks have targets
//   - every chunk's slice records decode and are valid; every object they name exists in the
//     store; every object's reference count (SliceRef) equals the records naming it
//   - with check_data, every named object is read whole: the store verifies every sector's
//     CRC32C, and every pack is walked, verifying each entry's CRC32C
//   - the usage counters (used inodes, used bytes) match the inodes
// With repair, what can be fixed in the metadata is: link counts, directory sizes, reference
// counts, unreferenced inodes (queued for deletion), the usage counters. Missing or corrupt
// objects cannot be repaired here (a file that names one is reported with its path hint).
//
// Gc finds objects in the store that nothing references: neither a SliceRef nor the deletion
// queue. A dry run only reports them. With delete_leaked they are queued for deletion with
// not_before = now + safety_window (so an object uploaded by a write still in flight somewhere
// is never deleted: the deletion of an object that has gained a SliceRef meanwhile is skipped),
// and queue items already due are carried out. It also reports the packs' live fraction.
//
// Both scan in bounded pages; memory is proportional to the number of inodes and objects.
// Run them on an unmounted volume, or accept that a mounted one's changes in flight show up as
// problems (fsck) or young objects (gc).
//
// Thread safety: one call at a time per volume is meaningful; the functions are reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "folio/status.h"
#include "fs/store/block_store.h"
#include "meta/meta_engine.h"

namespace folio::fs {

struct FsckOptions {
  bool repair = false;
  bool check_data = true;
  // Called with (items done, items total) as the scan goes (for a progress bar).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct FsckReport {
  uint64_t inodes = 0, directories = 0, files = 0, entries = 0;
  uint64_t chunks = 0, slices = 0, objects = 0, object_bytes = 0, packs = 0, pack_entries = 0;
  uint64_t checksum_failures = 0;
  std::vector<std::string> problems;  // one line each
  uint64_t repaired = 0;
  bool clean() const { return problems.empty(); }
};

Result<FsckReport> Fsck(meta::MetaEngine* meta, store::BlockStore* store,
                        const FsckOptions& options);

struct GcOptions {
  bool delete_leaked = false;
  int64_t safety_window_ms = 3600000;
};

struct GcReport {
  uint64_t objects = 0, object_bytes = 0;
  uint64_t referenced = 0;
  uint64_t leaked = 0, leaked_bytes = 0;   // nothing references them
  uint64_t queued = 0;                     // leaked objects put on the deletion queue now
  uint64_t deleted = 0;                    // queue items carried out now
  uint64_t pending_deletions = 0;          // queue items left (not due yet)
  uint64_t packs = 0, pack_bytes = 0, pack_live_bytes = 0;
  uint64_t packs_below_half = 0;           // live fraction < 0.5
};

Result<GcReport> Gc(meta::MetaEngine* meta, store::BlockStore* store, const GcOptions& options);

}  // namespace folio::fs
