// SqliteTxn, part 1: inodes, entries, symlinks, xattrs, chunks, slice refs, counters.
#include <fmt/format.h>

#include "meta/sqlite_txn.h"

namespace folio::meta {
namespace {

#define FOLIO_INODE_COLUMNS \
  "ino, type, mode, uid, gid, nlink, size, rdev, atime_ns, mtime_ns, ctime_ns, flags, parent"

Result<Inode> ReadInode(const SqliteConn& conn, const SqliteStmt& s) {
  Inode n;
  n.ino = InodeId{s.U64(0)};
  const int64_t type = s.Int(1);
  if (!ValidFileType(type) || !FitsU32(s.Int(2)) || !FitsU32(s.Int(3)) || !FitsU32(s.Int(4)) ||
      !FitsU32(s.Int(5)) || !FitsU32(s.Int(11))) {
    return SqliteBadRow(conn, fmt::format("inode {}: a column is out of range", Raw(n.ino)));
  }
  n.type = static_cast<FileType>(type);
  n.mode = static_cast<uint32_t>(s.Int(2));
  n.uid = static_cast<uint32_t>(s.Int(3));
  n.gid = static_cast<uint32_t>(s.Int(4));
  n.nlink = static_cast<uint32_t>(s.Int(5));
  n.size_bytes = s.U64(6);
  n.rdev = s.U64(7);
  n.atime_ns = s.Int(8);
  n.mtime_ns = s.Int(9);
  n.ctime_ns = s.Int(10);
  n.flags = static_cast<uint32_t>(s.Int(11));
  n.parent = InodeId{s.U64(12)};
  return n;
}

Result<Entry> ReadEntry(const SqliteConn& conn, InodeId parent, const SqliteStmt& s) {
  Entry e;
  e.parent = parent;
  e.name = std::string(s.Blob(0));
  e.ino = InodeId{s.U64(1)};
  if (!ValidFileType(s.Int(2))) {
    return SqliteBadRow(conn, fmt::format("entry {} in directory {}: type {}", e.name,
                                          Raw(parent), s.Int(2)));
  }
  e.type = static_cast<FileType>(s.Int(2));
  return e;
}

Result<SliceRef> ReadSliceRef(const SqliteConn& conn, const SqliteStmt& s) {
  SliceRef r;
  r.id = SliceId{s.U64(0)};
  if (s.Int(1) < 1 || s.Int(1) > 3 || !FitsU32(s.Int(2))) {
    return SqliteBadRow(conn, fmt::format("slice ref {}: a column is out of range", Raw(r.id)));
  }
  r.kind = static_cast<SliceKind>(s.Int(1));
  r.object_bytes = static_cast<uint32_t>(s.Int(2));
  r.refs = s.Int(3);
  return r;
}

}  // namespace

Status SqliteBadRow(const SqliteConn& conn, std::string_view what) {
  return Status::Corruption(fmt::format("{}: {}", conn.url(), what));
}

Status SqliteTxn::Writable(std::string_view method) const {
  if (mode_ == TxnMode::kWrite) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("{}: {} in a read-only (kRead) transaction", conn_.url(), method));
}

Result<SqliteStmt> SqliteTxn::PrepareWrite(std::string_view method, std::string_view sql) {
  FOLIO_RETURN_IF_ERROR(Writable(method));
  return conn_.Prepare(sql);
}

Result<std::vector<InodeId>> SqliteTxn::InodeIds(SqliteStmt& stmt) {
  std::vector<InodeId> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return out;
    out.push_back(InodeId{stmt.U64(0)});
  }
}

// ---- inodes ---------------------------------------------------------------------------------

Result<std::optional<Inode>> SqliteTxn::GetInode(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s, conn_.Prepare("SELECT " FOLIO_INODE_COLUMNS
                                                       " FROM inodes WHERE ino = ?"));
  s.BindU64(1, Raw(ino));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<Inode>();
  FOLIO_ASSIGN_OR_RETURN(Inode n, ReadInode(conn_, s));
  return std::optional<Inode>(n);
}

Status SqliteTxn::PutInode(const Inode& n) {
  if (Raw(n.ino) == 0 || !ValidFileType(static_cast<int64_t>(n.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutInode: inode {} of type {}", conn_.url(),
                                               Raw(n.ino), static_cast<int>(n.type)));
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutInode", "INSERT OR REPLACE INTO inodes(" FOLIO_INODE_COLUMNS
                               ") VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  s.BindU64(1, Raw(n.ino)).Bind(2, static_cast<int64_t>(n.type)).Bind(3, n.mode).Bind(4, n.uid);
  s.Bind(5, n.gid).Bind(6, n.nlink).BindU64(7, n.size_bytes).BindU64(8, n.rdev);
  s.Bind(9, n.atime_ns).Bind(10, n.mtime_ns).Bind(11, n.ctime_ns).Bind(12, n.flags);
  s.BindU64(13, Raw(n.parent));
  return s.Run();
}

Status SqliteTxn::DeleteInode(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         PrepareWrite("DeleteInode", "DELETE FROM inodes WHERE ino = ?"));
  s.BindU64(1, Raw(ino));
  return s.Run();
}

Result<std::vector<Inode>> SqliteTxn::ListInodes(InodeId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      conn_.Prepare("SELECT " FOLIO_INODE_COLUMNS
                    " FROM inodes WHERE ino > ? ORDER BY ino LIMIT ?"));
  s.BindU64(1, Raw(after)).Bind(2, SqlLimit(limit));
  std::vector<Inode> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    FOLIO_ASSIGN_OR_RETURN(Inode n, ReadInode(conn_, s));
    out.push_back(n);
  }
}

// ---- entries --------------------------------------------------------------------------------

Result<std::optional<Entry>> SqliteTxn::GetEntry(InodeId parent, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      conn_.Prepare("SELECT name, ino, type FROM entries WHERE parent = ? AND name = ?"));
  s.BindU64(1, Raw(parent)).BindBlob(2, name);
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<Entry>();
  FOLIO_ASSIGN_OR_RETURN(Entry e, ReadEntry(conn_, parent, s));
  return std::optional<Entry>(std::move(e));
}

Status SqliteTxn::PutEntry(const Entry& e) {
  if (e.name.empty() || !ValidFileType(static_cast<int64_t>(e.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutEntry: name '{}' of type {} in {}",
                                               conn_.url(), e.name, static_cast<int>(e.type),
                                               Raw(e.parent)));
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutEntry",
                   "INSERT OR REPLACE INTO entries(parent, name, ino, type) VALUES(?, ?, ?, ?)"));
  s.BindU64(1, Raw(e.parent)).BindBlob(2, e.name).BindU64(3, Raw(e.ino));
  s.Bind(4, static_cast<int64_t>(e.type));
  return s.Run();
}

Status SqliteTxn::DeleteEntry(InodeId parent, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("DeleteEntry", "DELETE FROM entries WHERE parent = ? AND name = ?"));
  s.BindU64(1, Raw(parent)).BindBlob(2, name);
  return s.Run();
}

Result<std::vector<Entry>> SqliteTxn::ListEntries(InodeId parent, std::string_view after,
                                                  size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT name, ino, type FROM entries WHERE parent = ? "
                                       "AND name > ? ORDER BY name LIMIT ?"));
  s.BindU64(1, Raw(parent)).BindBlob(2, after).Bind(3, SqlLimit(limit));
  std::vector<Entry> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    FOLIO_ASSIGN_OR_RETURN(Entry e, ReadEntry(conn_, parent, s));
    out.push_back(std::move(e));
  }
}

// ---- symlinks and xattrs --------------------------------------------------------------------

Result<std::optional<std::string>> SqliteTxn::GetSymlink(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT target FROM symlinks WHERE ino = ?"));
  s.BindU64(1, Raw(ino));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(std::string(s.Blob(0)));
}

Status SqliteTxn::PutSymlink(InodeId ino, std::string_view target) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutSymlink", "INSERT OR REPLACE INTO symlinks(ino, target) VALUES(?, ?)"));
  s.BindU64(1, Raw(ino)).BindBlob(2, target);
  return s.Run();
}

Status SqliteTxn::DeleteSymlink(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         PrepareWrite("DeleteSymlink", "DELETE FROM symlinks WHERE ino = ?"));
  s.BindU64(1, Raw(ino));
  return s.Run();
}

Result<std::optional<std::string>> SqliteTxn::GetXattr(InodeId ino, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT value FROM xattrs WHERE ino = ? AND name = ?"));
  s.BindU64(1, Raw(ino)).BindBlob(2, name);
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(std::string(s.Blob(0)));
}

Result<std::vector<Xattr>> SqliteTxn::ListXattrs(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s, conn_.Prepare("SELECT name, value FROM xattrs WHERE ino = ? ORDER BY name"));
  s.BindU64(1, Raw(ino));
  std::vector<Xattr> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    out.push_back(Xattr{std::string(s.Blob(0)), std::string(s.Blob(1))});
  }
}

Status SqliteTxn::PutXattr(InodeId ino, std::string_view name, std::string_view value) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutXattr", "INSERT OR REPLACE INTO xattrs(ino, name, value) VALUES(?, ?, ?)"));
  s.BindU64(1, Raw(ino)).BindBlob(2, name).BindBlob(3, value);
  return s.Run();
}

Status SqliteTxn::DeleteXattr(InodeId ino, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s, PrepareWrite("DeleteXattr", "DELETE FROM xattrs WHERE ino = ? AND name = ?"));
  s.BindU64(1, Raw(ino)).BindBlob(2, name);
  return s.Run();
}

// ---- chunks and slice refs ------------------------------------------------------------------

Result<std::vector<Slice>> SqliteTxn::GetChunk(InodeId ino, uint32_t index) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT slices FROM chunks WHERE ino = ? AND idx = ?"));
  s.BindU64(1, Raw(ino)).Bind(2, index);
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::vector<Slice>();
  return DecodeSlices(s.Blob(0), fmt::format("{}: inode {} chunk {}", conn_.url(), Raw(ino), index));
}

Status SqliteTxn::AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: AppendSlices inode {} chunk {}", conn_.url(), Raw(ino), index)));
  }
  if (slices.empty()) return Status::OK();
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("AppendSlices",
                   "INSERT INTO chunks(ino, idx, slices) VALUES(?, ?, ?) ON CONFLICT(ino, idx) "
                   "DO UPDATE SET slices = CAST(slices || excluded.slices AS BLOB)"));
  s.BindU64(1, Raw(ino)).Bind(2, index).BindBlob(3, EncodeSlices(slices));
  return s.Run();
}

Status SqliteTxn::PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: PutChunk inode {} chunk {}", conn_.url(), Raw(ino), index)));
  }
  if (slices.empty()) {
    FOLIO_ASSIGN_OR_RETURN(
        SqliteStmt s, PrepareWrite("PutChunk", "DELETE FROM chunks WHERE ino = ? AND idx = ?"));
    s.BindU64(1, Raw(ino)).Bind(2, index);
    return s.Run();
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutChunk", "INSERT OR REPLACE INTO chunks(ino, idx, slices) VALUES(?, ?, ?)"));
  s.BindU64(1, Raw(ino)).Bind(2, index).BindBlob(3, EncodeSlices(slices));
  return s.Run();
}

Result<std::vector<uint32_t>> SqliteTxn::ListChunks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT idx FROM chunks WHERE ino = ? ORDER BY idx"));
  s.BindU64(1, Raw(ino));
  std::vector<uint32_t> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    if (!FitsU32(s.Int(0))) {
      return SqliteBadRow(conn_, fmt::format("inode {}: chunk index {}", Raw(ino), s.Int(0)));
    }
    out.push_back(static_cast<uint32_t>(s.Int(0)));
  }
}

Result<std::optional<SliceRef>> SqliteTxn::GetSliceRef(SliceId id) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      conn_.Prepare("SELECT id, kind, object_bytes, refs FROM slice_refs WHERE id = ?"));
  s.BindU64(1, Raw(id));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<SliceRef>();
  FOLIO_ASSIGN_OR_RETURN(SliceRef r, ReadSliceRef(conn_, s));
  return std::optional<SliceRef>(r);
}

Status SqliteTxn::PutSliceRef(const SliceRef& r) {
  const auto kind = static_cast<uint8_t>(r.kind);
  if (Raw(r.id) == 0 || kind < 1 || kind > 3) {
    return Status::InvalidArgument(fmt::format("{}: PutSliceRef: slice {} of kind {}",
                                               conn_.url(), Raw(r.id), kind));
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutSliceRef", "INSERT OR REPLACE INTO slice_refs(id, kind, object_bytes, "
                                  "refs) VALUES(?, ?, ?, ?)"));
  s.BindU64(1, Raw(r.id)).Bind(2, kind).Bind(3, r.object_bytes).Bind(4, r.refs);
  return s.Run();
}

Status SqliteTxn::DeleteSliceRef(SliceId id) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         PrepareWrite("DeleteSliceRef", "DELETE FROM slice_refs WHERE id = ?"));
  s.BindU64(1, Raw(id));
  return s.Run();
}

Result<std::vector<SliceRef>> SqliteTxn::ListSliceRefs(SliceId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT id, kind, object_bytes, refs FROM slice_refs "
                                       "WHERE id > ? ORDER BY id LIMIT ?"));
  s.BindU64(1, Raw(after)).Bind(2, SqlLimit(limit));
  std::vector<SliceRef> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    FOLIO_ASSIGN_OR_RETURN(SliceRef r, ReadSliceRef(conn_, s));
    out.push_back(r);
  }
}

// ---- counters -------------------------------------------------------------------------------

Result<int64_t> SqliteTxn::GetCounter(Counter c) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT value FROM counters WHERE name = ?"));
  s.BindText(1, CounterName(c));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  return row ? s.Int(0) : int64_t{0};
}

Status SqliteTxn::AddToCounter(Counter c, int64_t delta) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("AddToCounter", "INSERT INTO counters(name, value) VALUES(?, ?) "
                                   "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value"));
  s.BindText(1, CounterName(c)).Bind(2, delta);
  return s.Run();
}

}  // namespace folio::meta
