// DevStoreImpl: the DevStore behind dev_store.h. Its methods are spread over
//   dev_store.cc     the I/O thread: the submit queue, gets, write batches, completion
//   dev_log.cc       segment switching, the segment table, synchronous appends, cleaning
//   dev_open.cc      format, open, recovery scan, healing
//
// Invariants (all state below the queue lock is owned by the I/O thread; no lock guards it):
//   1. index_[key] lists every valid record of key in a non-free segment, oldest first by
//      (generation, position); the key's state is its newest record (a put: live; a delete:
//      deleted). A key whose records are all gone, or only a delete, is not in index_.
//   2. seg_live_[s] = device bytes of the records of segment s that must be kept: the newest
//      record of a key when it is a put, or when it is a delete that still shadows an older
//      put in another segment.
//   3. Records of the open segment [kUnitBytes, open_pos_) are durable (their batch was
//      flushed) except those of the batch in flight; at most one batch is in flight.
//   4. A segment is handed out again only when seg_reads_[s] == 0 (no get reads it).
//
// Thread safety: see dev_store.h.
#pragma once

#include <condition_variable>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "folio/raid.h"
#include "fs/store/dev_format.h"
#include "fs/store/dev_store.h"

namespace folio::store {

class DevStoreImpl final : public DevStore {
 public:
  DevStoreImpl(std::unique_ptr<BlockDevice> device, std::string url, StoreOptions options,
               dev::Superblock sb, dev::SegmentTable table, uint32_t table_slot);
  ~DevStoreImpl() override;

  // Scans the segments (dev_open.cc). Called once before Start().
  Status Recover();
  void Start();

  std::string url() const override { return url_; }
  std::string prefix() const override { return options_.prefix; }
  std::string ObjectPath(const ObjectKey& key) const override;
  void Submit(std::span<StoreRequest* const> batch) override;
  void Close() override;
  StoreStatsSnapshot stats() const override { return stats_.Snapshot(); }
  Status Clean(double live_fraction_max) override;
  DevStoreStats dev_stats() const override;
  BlockDevice* device() const override { return device_.get(); }

 private:
  struct Rec {
    uint32_t segment = 0;
    uint32_t position = 0;  // of the record header in the segment
    uint64_t generation = 0;
    dev::RecordType type = dev::RecordType::kPut;
  };
  struct GetOp;
  struct WriteBatch;
  struct Control;  // a Clean() request

  // ---- dev_store.cc
  void IoLoop();
  void Dispatch(StoreRequest* req);
  void StartGet(StoreRequest* req);
  void FinishGet(GetOp* op);
  void DoList(StoreRequest* req);
  void StartWriteBatch();
  void FinishWriteBatch();
  void CompleteLater(StoreRequest* req, Status status);
  void RunCompletions();
  static void IoDone(IoRequest* io);

  // ---- dev_log.cc
  uint64_t SegmentOffset(uint32_t segment) const;
  uint64_t SegmentCapacity() const { return sb_.segment_bytes; }
  // Makes room for a record of record_bytes in the open segment, sealing it and opening
  // another (cleaning if needed; the cleaner may take the reserve segment).
  Status EnsureRoom(uint64_t record_bytes, bool for_cleaning);
  Status WriteTable();  // the next slot, then flush
  uint32_t FreeSegments() const;
  // Frees segment s: drops its records from index_, marks it free in the table (not written).
  void ReleaseSegment(uint32_t s);
  // Cleans one segment: the sealed one with the least live bytes, if its live fraction is
  // below live_fraction_max (need_bytes == 0), or (need_bytes > 0) if cleaning it leaves room
  // for a record of need_bytes. Returns true when a segment was freed.
  Result<bool> CleanOne(double live_fraction_max, uint64_t need_bytes);
  Status CopyForward(uint32_t victim);
  // Reads and verifies one put record's object (whole). Heals on RAID.
  Status ReadRecord(const ObjectKey& key, const Rec& rec, std::string* out);
  // Synchronously appends one record at the open segment (cleaning's copies; not flushed).
  Result<Rec> AppendSync(const ObjectKey& key, dev::RecordType type, const std::string& data);

  // ---- accounting (dev_log.cc)
  // Adds (sign +1) or removes (-1) key's contribution to seg_live_ (invariant 2).
  void Account(const ObjectKey& key, const std::vector<Rec>& recs, int sign);
  void AddRecord(const ObjectKey& key, const Rec& rec);
  static uint64_t RecBytes(const ObjectKey& key, const Rec& rec);

  // ---- dev_open.cc
  Status ScanSegment(uint32_t s, bool verify_data, uint32_t* valid_end);
  // On a mismatch in device range [off, off + len) whose verify() fails: tries each RAID
  // member as missing; rewrites the range when a variant verifies. Returns true if healed
  // (buf then holds the good bytes).
  bool TryHeal(uint64_t off, uint64_t len, char* buf, const std::function<bool()>& verify,
               const std::string& what);

  std::unique_ptr<BlockDevice> device_;
  RaidDevice* raid_ = nullptr;
  const std::string url_;
  const StoreOptions options_;
  dev::Superblock sb_;
  uint32_t store_seed_ = 0;
  dev::SegmentTable table_;
  uint32_t table_slot_ = 0;  // slot the next WriteTable() writes
  StoreStats stats_;

  // I/O thread state (invariants above).
  std::unordered_map<ObjectKey, std::vector<Rec>, ObjectKeyHash> index_;
  std::vector<uint64_t> seg_live_;
  std::vector<uint32_t> seg_reads_;
  int64_t open_seg_ = -1;
  uint64_t open_pos_ = 0;
  bool seal_open_ = false;  // a batch failed: the open segment takes no more records
  std::unique_ptr<WriteBatch> batch_;
  std::deque<StoreRequest*> pending_writes_;
  std::vector<IoRequest*> finished_io_;
  std::vector<std::pair<StoreRequest*, Status>> completions_;
  uint32_t gets_in_flight_ = 0;

  // Counters (written by the I/O thread, read by dev_stats()).
  std::atomic<uint64_t> batches_{0}, segments_cleaned_{0}, records_copied_{0};
  std::atomic<uint64_t> heal_attempts_{0}, recovered_records_{0}, dropped_records_{0};
  std::atomic<uint64_t> live_bytes_{0}, objects_{0};
  std::atomic<uint32_t> free_segments_{0};

  // Submission queue.
  std::mutex mu_;
  std::condition_variable cv_;       // I/O thread: work; submitters: room
  std::deque<StoreRequest*> queue_;  // GUARDED_BY(mu_)
  std::deque<Control*> controls_;    // GUARDED_BY(mu_)
  uint32_t queued_or_running_ = 0;   // GUARDED_BY(mu_)
  bool closing_ = false;             // GUARDED_BY(mu_)
  bool started_ = false;
  std::thread io_thread_;
};

}  // namespace folio::store
