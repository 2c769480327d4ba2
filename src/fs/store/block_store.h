// BlockStore: where Folio FS keeps its immutable objects (blocks of slices, packs of small
// files). Implementations: `dir:PATH` (a directory tree, dir_store.h), `dev:SPEC` (a
// log-structured store on a BlockDevice, dev_store.h); issue 11 adds `rados:POOL`.
//
// Model: asynchronous. A caller fills a StoreRequest it owns (put / ranged get / delete / list)
// and hands it to Submit(); many requests may be in flight at once (a store bounds its queue
// and Submit() waits for room). Each request completes exactly once: the store sets `status`,
// then runs `done(req)` if set, else sets `completed` (release) for a caller that polls.
//   - `done` runs on a thread the store owns (a worker, an I/O thread, librados's finisher),
//     with no store lock held and never inside an io_uring reaping loop. It may Submit() more
//     requests; it must not wait for one (no blocking wrapper inside `done`): the thread it runs
//     on may be the one that would complete it.
//   - After `done` returned (or, without `done`, once `completed` is true) the store does not
//     touch the request again: the caller may free or reuse it.
// Blocking wrappers (Put / Get / Delete / List) submit one request and wait for it.
//
// A put's bytes come as `data` (the logical bytes, which the store encodes into a buffer of its
// own) or as `encoding` (the object's sector encoding built in place by the caller,
// sector_codec.h: the store writes each sector's CRC slot with its own seed and may send the
// buffer as it is). The store reads them until the put completed. One that sends an encoding
// without copying it (rados:) may read it longer, after a put that failed without an answer
// (its message may still sit in a connection's queue), and does so only when the request
// carries a `data_owner` (a reference owning the buffer): it then holds a reference of its own
// while it may read the bytes. Such a caller drops the request's reference once the put
// completed and reuses the buffer only when its own is the last (use_count() == 1).
//
// Objects are immutable: a key is put once (a put over an existing key replaces it atomically;
// the fs layer never does that except when retrying a put whose outcome it does not know).
// Every object carries CRC32C (sector_codec.h) that every Get verifies, ranged or not: a
// mismatch completes the get with Corruption naming the object, is counted in
// checksum_failures and logged through StoreOptions::log. Stores with redundancy (dev: on a
// RAID volume) first try to heal: reconstruct from parity, verify, rewrite in place.
//
// Durability: a Put (or Delete) is durable once it completed OK; a crash leaves at most objects
// nobody references (a put in flight), never a torn object that verifies.
// Deferred durability (a store whose DefersSync() is true; dir: today): a put submitted with
// PutSync::kDeferred completes once the object is readable (gets and lists see it) but may not
// survive a power cut until a later kSync request naming its key completed OK. A power cut
// before that leaves the object missing, or torn (it then fails its checksum): never one that
// verifies with other bytes. So callers make a batch of objects durable with one kSync (one
// flush of the medium for all of them) just before they commit metadata naming them. Stores
// whose puts are always durable treat kDeferred as kNow and complete kSync at once.
//
// Thread safety: every method is thread-safe; requests may be submitted from any thread and
// completions arrive on store threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/histogram.h"
#include "folio/status.h"
#include "fs/store/object_key.h"

namespace folio::store {

enum class StoreOp : uint8_t { kPut, kGet, kDelete, kList, kSync };
inline constexpr int kStoreOpCount = 5;
std::string_view StoreOpName(StoreOp op);

// When a put is durable: at its completion, or at a later kSync (see the header comment).
enum class PutSync : uint8_t { kNow, kDeferred };

struct StoreRequest;
using StoreDoneFn = void (*)(StoreRequest* req);

// An object as List reports it.
struct ObjectInfo {
  ObjectKey key;
  uint64_t stored_bytes = 0;  // bytes it occupies in the store (encoding included)
};

// One store operation. The submitter owns the request and its buffers; both stay valid (not
// on an unwinding stack) until the request completed.
struct StoreRequest {
  StoreOp op = StoreOp::kGet;
  ObjectKey key;                 // kPut / kGet / kDelete
  const char* data = nullptr;    // kPut: key.bytes logical bytes, or null with `encoding`
  char* encoding = nullptr;      // kPut: EncodedBytes(key.bytes) bytes (see the header)
  std::shared_ptr<const void> data_owner;  // kPut with encoding, optional: owns it
  PutSync put_sync = PutSync::kNow;  // kPut: kDeferred only where the store DefersSync()
  std::span<const ObjectKey> sync_keys;  // kSync: the objects to make durable
  char* buf = nullptr;           // kGet: `length` bytes
  uint64_t offset = 0;           // kGet: logical offset in the object
  uint64_t length = 0;           // kGet: bytes; offset + length <= key.bytes
  ObjectKind list_kind = ObjectKind::kBlock;   // kList: which objects
  std::vector<ObjectInfo>* list_out = nullptr; // kList: appended to (any order)
  StoreDoneFn done = nullptr;    // runs once, on a store thread (see the header comment)
                                 // null: the store sets `completed` instead
  void* ctx = nullptr;           // for the submitter
  Status status;                 // set before done runs
  std::atomic<bool> completed{false};

  // Store-private.
  uint64_t submit_ns = 0;
  StoreRequest* next = nullptr;

  void ResetPut(const ObjectKey& k, const char* d) {
    Reset(StoreOp::kPut);
    key = k;
    data = d;
  }
  void ResetPutEncoding(const ObjectKey& k, char* enc, std::shared_ptr<const void> owner) {
    Reset(StoreOp::kPut);
    key = k;
    encoding = enc;
    data_owner = std::move(owner);
  }
  void ResetGet(const ObjectKey& k, uint64_t off, uint64_t len, char* b) {
    Reset(StoreOp::kGet);
    key = k;
    offset = off;
    length = len;
    buf = b;
  }
  void ResetDelete(const ObjectKey& k) {
    Reset(StoreOp::kDelete);
    key = k;
  }
  void ResetList(ObjectKind kind, std::vector<ObjectInfo>* out) {
    Reset(StoreOp::kList);
    list_kind = kind;
    list_out = out;
  }
  void ResetSync(std::span<const ObjectKey> keys) {
    Reset(StoreOp::kSync);
    sync_keys = keys;
  }

 private:
  void Reset(StoreOp o) {
    op = o;
    data = nullptr;
    encoding = nullptr;
    data_owner.reset();
    put_sync = PutSync::kNow;
    sync_keys = {};
    buf = nullptr;
    offset = length = 0;
    list_out = nullptr;
    status = Status::OK();
    completed.store(false, std::memory_order_relaxed);
    next = nullptr;
  }
};

// Counters of one operation type.
struct StoreOpStats {
  uint64_t requests = 0;
  uint64_t errors = 0;
  uint64_t bytes = 0;           // logical bytes put / got (what callers asked for)
  HistogramSnapshot latency_ns; // submit -> completion
};

struct StoreStatsSnapshot {
  StoreOpStats put, get, del, list, sync;
  uint64_t stored_bytes_read = 0;     // encoded bytes read from the medium (gets + heals)
  uint64_t stored_bytes_written = 0;  // encoded bytes written (puts, copies, repairs)
  uint64_t checksum_failures = 0;     // gets (and internal reads) that found a mismatch
  uint64_t healed = 0;                // of those, repaired from redundancy
  uint64_t fsyncs = 0;                // fsync(2) calls on files and directories (dir:)
  uint64_t direct_bytes_written = 0;  // of stored_bytes_written, written with O_DIRECT (dir:)
  uint64_t in_flight = 0;
  uint64_t in_flight_max = 0;
};

// Counters every store keeps (lock-free; Record* may run from any thread).
class StoreStats {
 public:
  void RecordStart();
  void RecordDone(StoreOp op, bool ok, uint64_t bytes, uint64_t latency_ns);
  void RecordStoredRead(uint64_t bytes) { stored_read_.fetch_add(bytes, kRelaxed); }
  void RecordStoredWrite(uint64_t bytes) { stored_written_.fetch_add(bytes, kRelaxed); }
  void RecordChecksumFailure() { checksum_failures_.fetch_add(1, kRelaxed); }
  void RecordHealed() { healed_.fetch_add(1, kRelaxed); }
  void RecordFsync() { fsyncs_.fetch_add(1, kRelaxed); }
  void RecordDirectWrite(uint64_t bytes) { direct_written_.fetch_add(bytes, kRelaxed); }
  StoreStatsSnapshot Snapshot() const;

 private:
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  struct Op {
    std::atomic<uint64_t> requests{0}, errors{0}, bytes{0};
    Histogram latency_ns;
  };
  Op ops_[kStoreOpCount];
  std::atomic<uint64_t> stored_read_{0}, stored_written_{0}, checksum_failures_{0}, healed_{0};
  std::atomic<uint64_t> fsyncs_{0}, direct_written_{0};
  std::atomic<uint64_t> in_flight_{0}, in_flight_max_{0};
};

// Where a store logs what a user must know about (checksum mismatches with the object's
// name, heals). One line per call, no trailing newline. Default: stderr.
using StoreLogFn = std::function<void(std::string_view line)>;

class BlockStore {
 public:
  virtual ~BlockStore() = default;

  // The store's URL ("dir:/data/folio", "dev:raid:/d/m1,/d/m2,/d/m3").
  virtual std::string url() const = 0;
  // The volume prefix objects are named under.
  virtual std::string prefix() const = 0;
  // The name an object has in this store (for messages, fsck): the path of its file (dir:),
  // its object name (rados:, dev:).
  virtual std::string ObjectPath(const ObjectKey& key) const = 0;

  // Queues requests. An invalid request (bad key, a get past the object's end, a put without
  // data) completes with InvalidArgument through the normal completion path.
  // Context: may block while the store's queue is full (never while holding a caller's lock
  // the completion path needs: completions do not wait for submitters).
  virtual void Submit(std::span<StoreRequest* const> batch) = 0;
  void Submit(StoreRequest* req) { Submit(std::span<StoreRequest* const>(&req, 1)); }

  // Completes every request in flight (waits), then refuses new ones (they complete with
  // IOError). Called by the destructor when not called before.
  virtual void Close() = 0;

  virtual StoreStatsSnapshot stats() const = 0;

  // Whether a PutSync::kDeferred put may complete before it is durable (then a kSync makes
  // it so); false: every put is durable at completion and kSync completes at once.
  virtual bool DefersSync() const { return false; }

  // ---- Blocking wrappers (Context: block; never call them from a `done` callback) ----
  // Stores data[0..key.bytes).
  Status Put(const ObjectKey& key, const char* data);
  // Reads logical [offset, offset + length) of the object into buf. NotFound when the object
  // does not exist; Corruption on a checksum mismatch that could not be healed.
  Status Get(const ObjectKey& key, uint64_t offset, uint64_t length, char* buf);
  // Removes the object. NotFound when it did not exist (a retried deletion may treat that as
  // done).
  Status Delete(const ObjectKey& key);
  // Every object of a kind.
  Result<std::vector<ObjectInfo>> List(ObjectKind kind);
  // Makes the objects (put with PutSync::kDeferred) durable.
  Status Sync(std::span<const ObjectKey> keys);
  // Submits req and waits until it completed; returns its status. req->done must be null.
  Status SubmitAndWait(StoreRequest* req);
};

// Runtime options common to every store.
struct StoreOptions {
  std::string prefix;          // volume prefix (ValidatePrefix)
  uint32_t workers = 8;        // dir: worker threads
  uint32_t queue_depth_max = 256;  // requests queued or in flight before Submit() waits
  StoreLogFn log;              // null: stderr
};

// Completes req: records stats, sets status, runs done (or sets completed). For store
// implementations. Context: call without store locks held.
void CompleteRequest(StoreStats* stats, StoreRequest* req, Status status, uint64_t now_ns);

// Checks what every store checks before it queues a request; OK or InvalidArgument.
Status ValidateRequest(const StoreRequest& req);

// A put's encoding with `seed` into out[0..EncodedBytes(req.key.bytes)): from its data or a
// copy of its encoding with the CRCs of this seed (the request's buffer is not written).
void EncodePut(uint32_t seed, const StoreRequest& req, char* out);

// Writes a line through log (or to stderr when log is null).
void StoreLog(const StoreLogFn& log, std::string_view line);

}  // namespace folio::store
