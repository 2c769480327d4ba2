// MetaEngine: where Folio FS keeps its metadata, behind one engine-neutral interface.
//
// An engine is a transactional store of the records in meta_types.h. All POSIX logic
// (permissions, link counts, rename cycle checks, slice bookkeeping) lives once, in fs/, and
// runs inside Transact(): one metadata operation is one call, one transaction. Engines only
// get, put, delete and scan records and commit or retry; so SQLite (embedded, WAL), Redis
// (WATCH / MULTI / EXEC; Lua where an operation is hot) and PostgreSQL (row locks,
// serialization retries) all fit, and none of them repeats the file system's rules.
//
// Transaction contract (every engine; the conformance suite in meta_conformance_test.cc checks
// each point):
//   1. Atomic: every write of fn is applied, or none is (fn returned an error, a conflict was
//      not resolved by retries, the server went away before commit).
//   2. Serializable for the records fn touched: reads (point reads and the List* scans) and
//      writes of concurrent transactions, from this process or another process or mount,
//      behave as if run one after the other. (Redis: WATCH every key read, including a
//      directory's entry hash for ListEntries; PostgreSQL: SERIALIZABLE, or row locks on every
//      record read for update, with retry on 40001 / 40P01.)
//   3. Read-your-writes: inside fn, a read sees fn's own earlier writes (and deletes).
//   4. fn may run more than once (conflict retries with backoff): it must not have effects
//      outside the Txn except assigning its outputs, which a retry overwrites. An engine that
//      validates reads at the end (Redis: WATCH, then EXEC) may run fn on a view whose records
//      come from different moments; such a run's outputs and Status are never returned (it
//      re-runs), but fn must not loop forever or crash on such a view (bound walks over records,
//      e.g. a rename's ancestor check, by a depth limit and return an error past it).
//   5. Durable when Transact returns OK for a kWrite transaction, to the engine's durability
//      (SQLite synchronous=FULL by default; the server's fsync policy for Redis / PostgreSQL),
//      or, on an engine whose commits are not synced one by one (SQLite synchronous=NORMAL),
//      when a later Sync() returns OK. Either way a later transaction is never durable
//      without the earlier ones of the same engine (commits are durable in commit order).
//   6. kRead transactions make no writes (a write is InvalidArgument) and may run concurrently
//      with each other and with a writer.
//   7. An engine may commit several concurrent kWrite transactions together (group commit: one
//      fsync shared), provided 1-3 hold for each one as if alone.
//   8. Errors: fn's own Status is returned unchanged (after rollback). Engine failures are
//      IOError (connection lost, disk error: nothing was applied, or the engine could not tell;
//      the message says which), Busy only when retries are exhausted, Corruption for records
//      that do not decode.
//
// Record scans (List*) return records in a stable order (names in byte order, ids ascending)
// and page with an `after` cursor and a limit, so a million-entry directory is listed in
// bounded memory.
//
// Thread safety: a MetaEngine is thread-safe; Transact may be called from any number of
// threads. A Txn is used only by the thread running fn, only during fn.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "folio/histogram.h"
#include "folio/status.h"
#include "meta/meta_types.h"

namespace folio::meta {

// A record a transaction is about to read, named for Txn::Prefetch.
struct RecordKey {
  enum class Kind : uint8_t { kInode, kEntry, kXattr, kSliceRef };
  Kind kind = Kind::kInode;
  uint64_t id = 0;        // the inode (kInode), the parent (kEntry), the inode (kXattr), the slice
  std::string_view name;  // kEntry, kXattr: the name (its bytes outlive the Prefetch call)

  static RecordKey OfInode(InodeId ino) { return {Kind::kInode, Raw(ino), {}}; }
  static RecordKey OfEntry(InodeId parent, std::string_view name) {
    return {Kind::kEntry, Raw(parent), name};
  }
  static RecordKey OfXattr(InodeId ino, std::string_view name) {
    return {Kind::kXattr, Raw(ino), name};
  }
  static RecordKey OfSliceRef(SliceId id) { return {Kind::kSliceRef, Raw(id), {}}; }
};

class Txn {
 public:
  virtual ~Txn() = default;

  // Reads the records named, together, so that the GetInode / GetEntry / GetXattr /
  // GetSliceRef calls for them that follow in this transaction ask the engine nothing: an
  // operation that knows its first reads up front makes them one round trip instead of one each
  // (Redis: WATCHes and reads of the keys, sent in the pipeline of the transaction's next read
  // of any kind, or on their own when that read is of one of them). A hint: what the Get* calls
  // return, and the transaction's isolation (point 2), are the same with or without it; records
  // this transaction wrote before are answered from its writes, as any read. Engines whose
  // reads are local (SQLite) or already cheap enough ignore it (the default). Errors: IOError
  // as a read's (nothing was applied); a record that does not decode is reported by its Get*.
  virtual Status Prefetch(std::span<const RecordKey> keys) {
    (void)keys;
    return Status::OK();
  }

  // Inodes.
  virtual Result<std::optional<Inode>> GetInode(InodeId ino) = 0;
  // Several inodes, in the order asked (nullopt where absent): one round trip on the server
  // engines (readdir with attributes); by default one GetInode each. In a kRead transaction of
  // more than 64 inodes on Redis, each inode is read whole as it was at some moment during the
  // transaction, but not as part of its snapshot (watching that many keys costs the server
  // O(n^2)); everywhere else they are in the transaction's snapshot.
  virtual Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) {
    std::vector<std::optional<Inode>> out;
    out.reserve(inos.size());
    for (InodeId ino : inos) {
      FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> n, GetInode(ino));
      out.push_back(std::move(n));
    }
    return out;
  }
  virtual Status PutInode(const Inode& inode) = 0;  // insert or replace
  virtual Status DeleteInode(InodeId ino) = 0;      // no-op when absent
  // Inodes with id > after, ascending, at most limit (fsck / gc scans).
  virtual Result<std::vector<Inode>> ListInodes(InodeId after, size_t limit) = 0;

  // Directory entries.
  virtual Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) = 0;
  virtual Status PutEntry(const Entry& entry) = 0;  // insert or replace (parent, name)
  virtual Status DeleteEntry(InodeId parent, std::string_view name) = 0;
  // Entries of `parent` with name > after (byte order), ascending, at most limit.
  virtual Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after,
                                                 size_t limit) = 0;

  // Symlink targets.
  virtual Result<std::optional<std::string>> GetSymlink(InodeId ino) = 0;
  virtual Status PutSymlink(InodeId ino, std::string_view target) = 0;
  virtual Status DeleteSymlink(InodeId ino) = 0;

  // Extended attributes.
  virtual Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) = 0;
  virtual Result<std::vector<Xattr>> ListXattrs(InodeId ino) = 0;  // names and values
  virtual Status PutXattr(InodeId ino, std::string_view name, std::string_view value) = 0;
  virtual Status DeleteXattr(InodeId ino, std::string_view name) = 0;  // no-op when absent

  // Chunks: a file's chunk `index` covers bytes [index * kChunkBytes, (index + 1) * kChunkBytes).
  // The slice list, oldest first; empty when the chunk has none.
  virtual Result<std::vector<Slice>> GetChunk(InodeId ino, uint32_t index) = 0;
  // Appends slices (oldest first) to the list in one step: an engine writes the list once per
  // call, so a commit of n records to a chunk of m costs O(n + m), not O(n * m).
  virtual Status AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) = 0;
  Status AppendSlice(InodeId ino, uint32_t index, const Slice& slice) {
    return AppendSlices(ino, index, std::span<const Slice>(&slice, 1));
  }
  // Replaces the whole list (compaction, truncate); an empty list deletes the chunk.
  virtual Status PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) = 0;
  // Indexes of the inode's non-empty chunks, ascending.
  virtual Result<std::vector<uint32_t>> ListChunks(InodeId ino) = 0;

  // Slice references (see SliceRef). Get returns nullopt for an unknown id.
  virtual Result<std::optional<SliceRef>> GetSliceRef(SliceId id) = 0;
  virtual Status PutSliceRef(const SliceRef& ref) = 0;
  virtual Status DeleteSliceRef(SliceId id) = 0;
  virtual Result<std::vector<SliceRef>> ListSliceRefs(SliceId after, size_t limit) = 0;

  // Counters: the value, and blind increments (no read, so no conflict on hot counters).
  virtual Result<int64_t> GetCounter(Counter c) = 0;
  virtual Status AddToCounter(Counter c, int64_t delta) = 0;

  // Sessions.
  virtual Result<std::optional<Session>> GetSession(SessionId id) = 0;
  virtual Status PutSession(const Session& session) = 0;
  virtual Status DeleteSession(SessionId id) = 0;
  virtual Result<std::vector<Session>> ListSessions() = 0;

  // Locks. flock: one record per (ino, session, owner). POSIX locks: the ranges of one
  // (ino, session, owner), replaced as a whole (an empty list removes them).
  virtual Result<std::vector<FlockRecord>> GetFlocks(InodeId ino) = 0;
  virtual Status PutFlock(const FlockRecord& lock) = 0;
  virtual Status DeleteFlock(InodeId ino, SessionId session, uint64_t owner) = 0;
  virtual Result<std::vector<PlockRecord>> GetPlocks(InodeId ino) = 0;
  virtual Status PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                           const std::vector<PlockRecord>& ranges) = 0;
  // Every inode on which the session holds a flock or POSIX lock (cleanup of dead sessions).
  virtual Result<std::vector<InodeId>> ListLockedInodes(SessionId session) = 0;

  // Files unlinked while open: kept (nlink 0) until the last session holding them closes.
  virtual Status AddSustained(SessionId session, InodeId ino) = 0;
  virtual Status RemoveSustained(SessionId session, InodeId ino) = 0;
  virtual Result<std::vector<InodeId>> ListSustained(SessionId session) = 0;
  // Whether any session still holds ino.
  virtual Result<bool> IsSustained(InodeId ino) = 0;

  // The deletion queue. Queue assigns each item a key (unique, increasing); List returns items
  // with not_before_ns <= due_ns, by key, at most limit.
  virtual Result<uint64_t> QueueDeletion(const Deletion& item) = 0;
  virtual Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t due_ns,
                                                                           size_t limit) = 0;
  virtual Status RemoveDeletion(uint64_t key) = 0;

  // The format record (nullopt before `folio fs format`).
  virtual Result<std::optional<FormatRecord>> GetFormat() = 0;
  virtual Status PutFormat(const FormatRecord& format) = 0;
};

enum class TxnMode { kRead, kWrite };

// Per-operation statistics (operation = the `op` name given to Transact).
struct MetaOpStats {
  std::string op;
  uint64_t count = 0;
  uint64_t errors = 0;           // calls that returned non-OK (fn's own errors included)
  uint64_t retries = 0;         // conflict retries
  HistogramSnapshot latency_ns;
};
struct MetaStats {
  std::vector<MetaOpStats> ops;  // sorted by op
  uint64_t commits = 0;          // physical commits (< write transactions with group commit)
  uint64_t fsyncs = 0;           // where the engine knows (SQLite); 0 otherwise
  // SQLite: kRead transactions run on the idle writer connection (its page cache warm).
  uint64_t reads_on_writer = 0;
  uint64_t checkpoints = 0;      // SQLite: WAL checkpoints run
  // SQLite: times the WAL was written from its start again; its frames at the last commit.
  uint64_t wal_restarts = 0;
  uint64_t wal_frames = 0;
  // Redis: pipelines sent to the server (each one round trip); 0 for other engines.
  uint64_t round_trips = 0;

  // Transactions of `op` so far (0 when it never ran).
  uint64_t Count(std::string_view op) const {
    for (const MetaOpStats& o : ops) {
      if (o.op == op) return o.count;
    }
    return 0;
  }
};

struct MetaOpenOptions {
  // SQLite: "full" (default; a committed transaction survives power loss) or "normal"
  // (WAL: a commit is written to the WAL but not fsynced; Sync() fsyncs it. A crash of the
  // process loses nothing committed; a power loss may drop the transactions committed since
  // the last Sync or checkpoint, never corrupts; see docs/format/meta.md).
  std::string sqlite_synchronous = "full";
  // SQLite, testing: the name of a registered SQLite VFS to open the database with (empty:
  // the default VFS). meta/sqlite_power_loss_vfs.h simulates power cuts with one.
  std::string sqlite_vfs;
  int max_retries = 50;            // conflict retries before Busy
  int64_t busy_timeout_ms = 30000; // waiting for another process's lock before Busy
  bool read_only = false;          // the engine refuses kWrite transactions
  // Server engines (Redis, PostgreSQL): how long an operation keeps reconnecting, with backoff,
  // while the server is unreachable, before it fails with IOError (nothing applied, or, for a
  // commit whose outcome could not be learned, saying so).
  int64_t reconnect_timeout_ms = 30000;
  // Where an engine reports what a user should know at open (e.g. Redis persistence settings
  // that lose committed metadata in a crash): one line per call, at every open. Null: stderr,
  // once per process and server.
  std::function<void(std::string_view line)> log;
  // Testing: when > 0, every Nth physical commit of kWrite transactions fails as a conflict
  // would (rolled back; each transaction in it re-runs fn and counts a retry). Lets the
  // conformance suite check contract point 4 on engines where conflicts are rare (SQLite).
  int inject_conflict_every = 0;
};

class MetaEngine {
 public:
  virtual ~MetaEngine() = default;

  // Runs fn in one transaction (see the contract above). `op` names the operation for stats
  // ("lookup", "create", "rename", "write_slice", ...): a string literal or other string that
  // outlives the engine.
  // REQUIRES: not called from inside fn of this engine (a transaction does not nest; the
  // SQLite engine aborts with a message, as it would otherwise wait for itself); fn does not
  // throw. Before Init, kRead transactions see an empty database (GetFormat returns nullopt)
  // and kWrite transactions fail with InvalidArgument.
  virtual Status Transact(std::string_view op, TxnMode mode,
                          const std::function<Status(Txn&)>& fn) = 0;

  // Hands out n consecutive ids of counter c (kNextInode, kNextSlice, kNextSession), outside
  // any transaction, atomically across processes; returns the first. Ids are never reused,
  // even when the caller's transaction later fails (a gap is harmless).
  // REQUIRES: not called from inside fn (allocate before Transact, or keep a batch).
  // Errors: InvalidArgument for a counter that is not an id counter or n outside 1..2^32.
  virtual Result<uint64_t> AllocateIds(Counter c, uint64_t n) = 0;

  // Creates the engine's schema in an empty database; with wipe, first removes every Folio
  // record (format --force). A database holding something that is not Folio metadata is
  // refused (InvalidArgument naming the URL), even with wipe.
  enum class InitMode { kCreate, kWipe };
  // kCreate on a database that already holds a formatted volume is Exists; on a schema without
  // a format record (Init ran, format did not finish) it succeeds. Init resets the counters
  // (kNextInode to 1: kRootInode is never handed out).
  virtual Status Init(InitMode mode) = 0;

  // Makes every transaction this engine committed before the call durable (point 5): one
  // fsync of SQLite's WAL when the engine runs with sqlite_synchronous = "normal" and committed
  // something since the last Sync; nothing where every commit is durable already (SQLite
  // "full"; Redis and PostgreSQL, whose durability is the server's own policy).
  // Errors: IOError when the fsync failed (what was committed may not survive a power loss).
  virtual Status Sync() = 0;

  virtual MetaStats Stats() const = 0;
  // "sqlite:/path/meta.db", with any password removed.
  virtual std::string url() const = 0;
};

// Opens the engine a URL names: sqlite:PATH (each scheme is a row of the table in meta_url.cc).
// Errors: InvalidArgument for a malformed URL or an unknown scheme (naming the URL and the
// schemes known), IOError when the database cannot be reached (naming it, with the reason).
// Opening does not require a formatted volume; GetFormat tells.
Result<std::unique_ptr<MetaEngine>> OpenMetaEngine(std::string_view url,
                                                   const MetaOpenOptions& options);

}  // namespace folio::meta
