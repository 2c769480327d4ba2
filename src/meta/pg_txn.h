// PgTxn: the Txn of the PostgreSQL engine, prepared statements over one connection inside a
// SERIALIZABLE transaction the engine opened (READ ONLY for kRead). The tables are the SQLite
// engine's (pg_schema.cc, docs/format/meta.md). Writes in a kRead transaction are
// InvalidArgument; rows holding values outside a record's range are Corruption. A statement
// that hits a serialization failure, deadlock or unique-violation race fails (Busy) and marks
// the connection's conflict(): the engine then re-runs fn, whatever fn returned. Writes are
// queued and sent with the next read or the commit (PgConn::Queue): a create is three round
// trips (BEGIN with the first read, the reads, the writes with the commit), not nine.
//
// Methods are split over pg_txn.cc (inodes, entries, symlinks, xattrs, chunks, slice refs,
// counters) and pg_txn_locks.cc (sessions, locks, sustained inodes, deletions, format).
//
// Thread safety: as any Txn (one thread, during fn).
#pragma once

#include "meta/meta_engine.h"
#include "meta/pg_conn.h"
#include "meta/record_checks.h"

namespace folio::meta {

class PgTxn final : public Txn {
 public:
  PgTxn(PgConn& conn, TxnMode mode) : conn_(conn), mode_(mode) {}

  Result<std::optional<Inode>> GetInode(InodeId ino) override;
  Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override;
  Status PutInode(const Inode& inode) override;
  Status DeleteInode(InodeId ino) override;
  Result<std::vector<Inode>> ListInodes(InodeId after, size_t limit) override;

  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override;
  Status PutEntry(const Entry& entry) override;
  Status DeleteEntry(InodeId parent, std::string_view name) override;
  Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after,
                                         size_t limit) override;

  Result<std::optional<std::string>> GetSymlink(InodeId ino) override;
  Status PutSymlink(InodeId ino, std::string_view target) override;
  Status DeleteSymlink(InodeId ino) override;

  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override;
  Result<std::vector<Xattr>> ListXattrs(InodeId ino) override;
  Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override;
  Status DeleteXattr(InodeId ino, std::string_view name) override;

  Result<std::vector<Slice>> GetChunk(InodeId ino, uint32_t index) override;
  Status AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) override;
  Status PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) override;
  Result<std::vector<uint32_t>> ListChunks(InodeId ino) override;

  Result<std::optional<SliceRef>> GetSliceRef(SliceId id) override;
  Status PutSliceRef(const SliceRef& ref) override;
  Status DeleteSliceRef(SliceId id) override;
  Result<std::vector<SliceRef>> ListSliceRefs(SliceId after, size_t limit) override;

  Result<int64_t> GetCounter(Counter c) override;
  Status AddToCounter(Counter c, int64_t delta) override;

  Result<std::optional<Session>> GetSession(SessionId id) override;
  Status PutSession(const Session& session) override;
  Status DeleteSession(SessionId id) override;
  Result<std::vector<Session>> ListSessions() override;

  Result<std::vector<FlockRecord>> GetFlocks(InodeId ino) override;
  Status PutFlock(const FlockRecord& lock) override;
  Status DeleteFlock(InodeId ino, SessionId session, uint64_t owner) override;
  Result<std::vector<PlockRecord>> GetPlocks(InodeId ino) override;
  Status PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                   const std::vector<PlockRecord>& ranges) override;
  Result<std::vector<InodeId>> ListLockedInodes(SessionId session) override;

  Status AddSustained(SessionId session, InodeId ino) override;
  Status RemoveSustained(SessionId session, InodeId ino) override;
  Result<std::vector<InodeId>> ListSustained(SessionId session) override;
  Result<bool> IsSustained(InodeId ino) override;

  Result<uint64_t> QueueDeletion(const Deletion& item) override;
  Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t due_ns,
                                                                   size_t limit) override;
  Status RemoveDeletion(uint64_t key) override;

  Result<std::optional<FormatRecord>> GetFormat() override;
  Status PutFormat(const FormatRecord& format) override;

 private:
  // InvalidArgument for a write in a kRead transaction, naming the method.
  Status Writable(std::string_view method) const;
  // Queues a statement that returns no rows, after Writable(method): it goes out with the
  // transaction's next read or its commit, in one round trip (PgConn::Queue); its error, if
  // any, is that call's.
  Status Write(std::string_view method, std::string_view sql, const std::vector<PgParam>& params);
  // The ids of a query whose first column is an id.
  Result<std::vector<InodeId>> InodeIds(std::string_view sql, const std::vector<PgParam>& params);
  // Corruption "<url>: <what>" for a row holding a value outside the record's range.
  Status BadRow(std::string_view what) const;

  PgConn& conn_;
  TxnMode mode_;
};

}  // namespace folio::meta
