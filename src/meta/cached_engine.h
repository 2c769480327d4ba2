// CachedEngine: a MetaEngine that answers read transactions from a cache of inode and entry
// records when it can, for a mount that is the volume's only writer (a read-write mount without
// -o shared: the session table refuses every other read-write mount, and `fsck --repair`
// refuses a mounted volume). Every other process only reads, so the only writes that can make
// a cached record stale are this process's own, and they all pass through here.
//
// What it caches: GetInode / GetInodes, GetEntry and GetXattr results (absent records too: a
// lookup of a missing name is a hit). Nothing else; a read transaction that asks for anything
// else, or for a record not cached, is run on the engine as if the cache were not there.
// It also knows that an inode id this process was handed (AllocateIds of kNextInode) has no
// xattr it did not write itself: the kernel asks for security.capability before every
// write(2) (file_remove_privs), so a new file's writes ask the engine nothing. Every xattr
// write notes its inode (xattr_written_) before the engine sees it; those inodes are answered
// from xattrs_ or the engine only. Likewise a directory with such an id holds only the entries
// this process wrote: a name in it that is neither cached nor lost (written by a writer that
// could not install it: lost_entries_) is absent, so the lookup of a new name before a create
// asks the engine nothing. When entries_ is emptied (full) that knowledge goes for every
// directory handed out so far (complete_floor_).
//
// How a read transaction runs: first on a cache-only Txn, while no writer is in flight (below);
// if every record fn asked for was cached, that is the answer and the engine is never asked.
// Otherwise (a miss, or a writer started meanwhile) fn runs again in a real kRead transaction
// of the engine (fn may run more than once: meta_engine.h point 4), whose results fill the cache.
//
// Why a cached record is never stale. Writes: a kWrite transaction that puts or deletes an
// inode or an entry registers as a writer at its first such call (before it can commit) and,
// after the engine's Transact returned (committed, or failed, or could not tell), under mu_:
//   - installs the values its last attempt wrote when it committed and no other writer was in
//     flight at any moment of its life (so no other commit can have overtaken it on those
//     records), else erases every record any attempt touched;
//   - bumps epoch_ and unregisters.
// Reads: a cache-only read uses a record only while no writer is registered and epoch_ has not
// moved since the read began; a filling read (from the engine) stores what it read only when no
// writer was registered when it began and none has registered or ended since (epoch_ and
// active_ unchanged). So a value read from the engine before some write committed can never be
// stored after that write's invalidation, and a cache-only read never mixes records from before
// and after a commit. When active_ is 0 every cached record equals the engine's
// (CheckAgainstEngine, which the tests call after concurrent random runs).
//
// Disable() empties the cache for good: the mount learned that another writer may exist (its
// session was cleaned while it was paused, so another mount may have taken the volume).
//
// Bounded: at most max_records inodes and as many entries; a full map is emptied and refilled.
//
// Thread safety: thread-safe, as MetaEngine; one mutex guards the maps and the writer counts
// (held for a map operation, never across an engine call).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "meta/meta_engine.h"

namespace folio::meta {

struct MetaCacheStats {
  uint64_t reads = 0;      // kRead transactions answered from the cache alone
  uint64_t misses = 0;     // kRead transactions that had to ask the engine
  uint64_t fills = 0;      // records stored from the engine's answers
  uint64_t installs = 0;   // records stored from a committed write
  uint64_t erases = 0;     // records dropped after a write that could not install them
  uint64_t records = 0;    // cached now (inodes + entries)
  bool enabled = false;
};

class CachedEngine final : public MetaEngine {
 public:
  // REQUIRES: inner outlives this engine; this process is the volume's only writer (above).
  explicit CachedEngine(MetaEngine* inner, size_t max_records = size_t{1} << 17);
  ~CachedEngine() override;

  Status Transact(std::string_view op, TxnMode mode,
                  const std::function<Status(Txn&)>& fn) override;
  Result<uint64_t> AllocateIds(Counter c, uint64_t n) override;
  Status Init(InitMode mode) override;
  Status Sync() override { return inner_->Sync(); }
  MetaStats Stats() const override { return inner_->Stats(); }
  std::string url() const override { return inner_->url(); }

  // Empties the cache and stops using it (every later transaction goes to the engine).
  void Disable();
  MetaCacheStats CacheStats() const;
  // Compares every cached record with the engine's (one kRead transaction of the engine).
  // Corruption naming the first record that differs. REQUIRES: no transaction in flight.
  Status CheckAgainstEngine();

 private:
  class CacheTxn;
  class FillTxn;
  class WriteTxn;
  friend class CacheTxn;
  friend class FillTxn;
  friend class WriteTxn;

  static std::string EntryKey(InodeId parent, std::string_view name);
  Status ReadFromCache(const std::function<Status(Txn&)>& fn, bool* answered);
  // Writer bookkeeping (WriteTxn).
  struct Writer {
    bool registered = false;
    bool overlapped = false;   // another writer was in flight at some moment of its life
    uint64_t start = 0;        // starts_ right after it registered
  };
  void Register(Writer* w);
  // What one writer put or deleted (the values of its last attempt) and every record any of
  // its attempts touched.
  struct Written {
    std::unordered_map<uint64_t, std::optional<Inode>> inodes;
    std::unordered_map<std::string, std::optional<Entry>> entries;
    std::unordered_map<std::string, std::optional<std::string>> xattrs;
    std::unordered_set<uint64_t> touched_inodes;
    std::unordered_set<std::string> touched_entries;
    std::unordered_set<std::string> touched_xattrs;
  };
  void FinishWrite(const Writer& w, bool committed, const Written& written);
  // REQUIRES: mu_ held. Whether ino was handed out here (new_inodes_).
  bool HandedOutLocked(uint64_t ino) const;
  // REQUIRES: mu_ held. Whether ino was handed out here and no xattr of it was ever written.
  bool XattrFreeLocked(uint64_t ino) const;
  // REQUIRES: mu_ held. Whether every entry of directory `parent` is in entries_ or
  // lost_entries_ (it was handed out here, after the last time entries_ was emptied).
  bool CompleteDirLocked(uint64_t parent) const;
  // REQUIRES: mu_ held. entries_ was emptied / the entry `key` left it after a write.
  void EntriesEmptiedLocked();
  void EntryLostLocked(const std::string& key);
  // REQUIRES: mu_ held. Before the engine sees an xattr write of ino.
  void NoteXattrWriteLocked(uint64_t ino);

  MetaEngine* const inner_;
  const size_t max_records_;

  mutable std::mutex mu_;
  bool enabled_ = true;     // GUARDED_BY(mu_)
  uint64_t active_ = 0;     // GUARDED_BY(mu_) registered writers in flight
  uint64_t epoch_ = 0;      // GUARDED_BY(mu_) bumped when a registered writer ends
  uint64_t starts_ = 0;     // GUARDED_BY(mu_) registrations so far
  std::unordered_map<uint64_t, std::optional<Inode>> inodes_;       // GUARDED_BY(mu_)
  std::unordered_map<std::string, std::optional<Entry>> entries_;   // GUARDED_BY(mu_)
  std::unordered_map<std::string, std::optional<std::string>> xattrs_;  // GUARDED_BY(mu_)
  // Inode ids handed out by AllocateIds(kNextInode) here, as [first, end) (consecutive
  // batches merged; at most kMaxNewInodeRanges, oldest dropped), and the inodes whose xattrs
  // were written since.
  std::vector<std::pair<uint64_t, uint64_t>> new_inodes_;  // GUARDED_BY(mu_)
  std::unordered_set<uint64_t> xattr_written_;              // GUARDED_BY(mu_)
  uint64_t new_end_ = 0;          // GUARDED_BY(mu_): the highest end of a range handed out
  uint64_t complete_floor_ = 0;   // GUARDED_BY(mu_): CompleteDirLocked needs parent >= it
  std::unordered_set<std::string> lost_entries_;  // GUARDED_BY(mu_): keys of complete dirs

  std::atomic<uint64_t> reads_{0}, misses_{0}, fills_{0}, installs_{0}, erases_{0};
};

}  // namespace folio::meta
