// SqliteTxn: the Txn of the SQLite engine, a thin layer of prepared statements over one
// connection inside a transaction the engine opened (BEGIN IMMEDIATE + SAVEPOINT for kWrite,
// BEGIN for kRead). Every record kind has its own typed table (sqlite_schema.cc). Writes in a
// kRead transaction are InvalidArgument; records that do not decode are Corruption.
//
// Methods are split over sqlite_txn.cc (inodes, entries, symlinks, xattrs, chunks, slice refs,
// counters) and sqlite_txn_locks.cc (sessions, locks, sustained inodes, deletions, format).
//
// Thread safety: as any Txn (one thread, during fn).
#pragma once

#include "meta/meta_engine.h"
#include "meta/record_checks.h"
#include "meta/sqlite_conn.h"

namespace folio::meta {

class SqliteTxn final : public Txn {
 public:
  SqliteTxn(SqliteConn& conn, TxnMode mode) : conn_(conn), mode_(mode) {}

  Result<std::optional<Inode>> GetInode(InodeId ino) override;
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
  // Runs a statement that returns no rows, after Writable(method).
  Result<SqliteStmt> PrepareWrite(std::string_view method, std::string_view sql);
  // A list of ids from a query whose first column is an id.
  Result<std::vector<InodeId>> InodeIds(SqliteStmt& stmt);

  SqliteConn& conn_;
  TxnMode mode_;
};

// Corruption "<url>: <what>" for a row whose column holds a value outside the record's range.
Status SqliteBadRow(const SqliteConn& conn, std::string_view what);

}  // namespace folio::meta
