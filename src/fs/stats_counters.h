// FsCounters: the core's live counters (relaxed atomics), snapshotted into FsStats for .stats.
//
// Thread safety: Add from any thread; Snapshot sees each counter at a recent value.
#pragma once

#include <atomic>
#include <cstdint>

#include "fs/file_system.h"

namespace folio::fs {

struct FsCounters {
  std::atomic<uint64_t> commits{0}, slices_committed{0}, atime_files{0}, atime_commits{0};
  std::atomic<uint64_t> packed_files{0}, packs_written{0}, pack_bytes{0}, packs_rewritten{0};
  std::atomic<uint64_t> chunks_compacted{0}, compaction_bytes{0}, compactions_deferred{0};
  std::atomic<uint64_t> compaction_kept_bytes{0}, compactions_hot{0};
  std::atomic<uint64_t> deletions_done{0}, deletions_deferred{0}, inodes_freed{0};
  std::atomic<uint64_t> read_bytes{0}, write_bytes{0};

  static void Add(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
  static void Set(std::atomic<uint64_t>& c, uint64_t n) { c.store(n, std::memory_order_relaxed); }

  void SnapshotInto(FsStats* s) const {
    auto ld = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    s->commits = ld(commits);
    s->slices_committed = ld(slices_committed);
    s->atime_files = ld(atime_files);
    s->atime_commits = ld(atime_commits);
    s->packed_files = ld(packed_files);
    s->packs_written = ld(packs_written);
    s->pack_bytes = ld(pack_bytes);
    s->packs_rewritten = ld(packs_rewritten);
    s->chunks_compacted = ld(chunks_compacted);
    s->compaction_bytes = ld(compaction_bytes);
    s->compactions_deferred = ld(compactions_deferred);
    s->compaction_kept_bytes = ld(compaction_kept_bytes);
    s->compactions_hot = ld(compactions_hot);
    s->deletions_done = ld(deletions_done);
    s->deletions_deferred = ld(deletions_deferred);
    s->inodes_freed = ld(inodes_freed);
    s->read_bytes = ld(read_bytes);
    s->write_bytes = ld(write_bytes);
  }
};

}  // namespace folio::fs
