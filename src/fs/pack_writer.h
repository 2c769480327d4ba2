// PackCommitter: small files written as entries of shared packs (seed 2's small-file packing),
// the fs side of store::PackWriter (fs/store/pack.h, which builds and puts the packs).
//
// Trigger: a file whose whole content is below the volume's pack_below_bytes when its device
// is flushed (the background sync after its last close, the periodic commit of a file with no
// handle open, an fsync; FileData::PackSize) is not
// written as a slice of its own: its content is frozen in its device (readers keep seeing it)
// and handed to the store's pack writer as one entry. That writer puts the open pack when it
// reaches the block size, a delay after its first entry, or on Flush. Once a pack is durable,
// its entries come back here and ONE metadata transaction (per batch of completed entries,
// usually a whole pack) makes each entry's file point at it: chunk 0 becomes one kPacked
// slice, the old slices lose their references, and the attributes the file had at the hand-
// over are committed. Reading a packed file is one ranged get of its entry.
//
// A file changed after its hand-over keeps the newer data pending in its device, committed
// after the pack (so it wins: its flush waits for the entry first). A file freed meanwhile is
// skipped; its bytes are dead space in the pack, reclaimed by pack rewriting.
//
// Thread safety: every method is thread-safe; one committer thread (or Flush's caller).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fs/file_data.h"
#include "fs/store/pack.h"
#include "folio/status.h"

namespace folio::fs {

class DataPath;

// Completed once the entry's pack is committed (or failed).
struct PackTicket {
  void Finish(const Status& s);
  Status Wait();
  bool done();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // GUARDED_BY(mu_)
  Status status_;      // GUARDED_BY(mu_)
};

class PackCommitter {
 public:
  PackCommitter(DataPath* dp, uint64_t flush_after_ms);
  ~PackCommitter();

  // Starts the committer thread.
  void Start();
  void Stop();

  // Hands `content` over as an entry for `file` (its attributes taken now).
  std::shared_ptr<PackTicket> Add(const std::shared_ptr<FileData>& file,
                                  const std::vector<char>& content);
  // Pack rewriting: copies the entry `packed` of closed file ino (its `content`) into the
  // open pack; the commit re-points the file only if chunk 0 still is exactly [packed], and
  // changes none of its attributes.
  void AddRewrite(InodeId ino, const meta::Slice& packed, const std::vector<char>& content);
  // Puts the open pack and commits every entry handed over so far. Returns the first error.
  Status Flush();
  store::PackWriterStats stats() const { return writer_.stats(); }

 private:
  struct Entry {
    std::weak_ptr<FileData> file;
    InodeId ino{0};
    FileData::PackedAttrs attrs;
    meta::Inode committed;  // the inode as the commit wrote it
    bool freed = false;     // the commit found no inode (freed meanwhile): nothing was written
    bool elsewhere = false;  // the commit found another mount's change (FileData::PackCommitted)
    std::shared_ptr<PackTicket> ticket;
    Status status;
    store::PackedLocation loc;
    bool rewrite = false;
    meta::Slice expect;  // rewrite: what chunk 0 must still hold
  };
  // Commits the completed entries queued now. Returns the first error.
  Status CommitDone();
  Status CommitBatch(const std::vector<std::shared_ptr<Entry>>& batch);
  void Submit(const std::shared_ptr<Entry>& e, const std::vector<char>& content);
  void Run();

  // A pack's entries seen by the commits so far, and how many of them were committed. A pack
  // none of whose entries was committed (each file freed meanwhile, or each rewrite stale) has
  // no reference: it goes on the deletion queue once its last entry is seen, else it leaks.
  // A pack's entries complete together but may land in two batches.
  struct PackTally {
    uint32_t seen = 0;
    uint32_t committed = 0;
  };

  DataPath* const dp_;
  store::PackWriter writer_;
  std::mutex commit_mu_;  // one commit batch at a time (before mu_)
  std::map<uint64_t, PackTally> tally_;  // GUARDED_BY(commit_mu_): packs seen in part
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Entry>> done_;  // GUARDED_BY(mu_): put, waiting for the commit
  uint64_t handed_ = 0;                      // GUARDED_BY(mu_): entries added
  uint64_t finished_ = 0;                    // GUARDED_BY(mu_): entries committed or failed
  bool stop_ = false;                        // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace folio::fs
