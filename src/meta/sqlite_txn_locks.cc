// SqliteTxn, part 2: sessions, flock and POSIX locks, sustained inodes, the deletion queue and
// the format record.
#include <fmt/format.h>

#include <limits>

#include "meta/sqlite_txn.h"

namespace folio::meta {
namespace {

Session ReadSession(const SqliteStmt& s) {
  Session r;
  r.id = SessionId{s.U64(0)};
  r.host = std::string(s.Blob(1));
  r.pid = static_cast<uint32_t>(s.Int(2));
  r.mountpoint = std::string(s.Blob(3));
  r.version = std::string(s.Blob(4));
  SetSessionFlags(&r, s.Int(5));
  r.start_ns = s.Int(6);
  r.heartbeat_ns = s.Int(7);
  return r;
}

#define FOLIO_SESSION_SELECT \
  "SELECT id, host, pid, mountpoint, version, read_only, start_ns, heartbeat_ns FROM sessions"

}  // namespace

// ---- sessions -------------------------------------------------------------------------------

Result<std::optional<Session>> SqliteTxn::GetSession(SessionId id) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare(FOLIO_SESSION_SELECT " WHERE id = ?"));
  s.BindU64(1, Raw(id));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<Session>();
  return std::optional<Session>(ReadSession(s));
}

Status SqliteTxn::PutSession(const Session& r) {
  if (Raw(r.id) == 0) {
    return Status::InvalidArgument(fmt::format("{}: PutSession: session id 0", conn_.url()));
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutSession", "INSERT OR REPLACE INTO sessions(id, host, pid, mountpoint, "
                                 "version, read_only, start_ns, heartbeat_ns) "
                                 "VALUES(?, ?, ?, ?, ?, ?, ?, ?)"));
  s.BindU64(1, Raw(r.id)).BindText(2, r.host).Bind(3, r.pid).BindText(4, r.mountpoint);
  s.BindText(5, r.version).Bind(6, SessionFlags(r)).Bind(7, r.start_ns);
  s.Bind(8, r.heartbeat_ns);
  return s.Run();
}

Status SqliteTxn::DeleteSession(SessionId id) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         PrepareWrite("DeleteSession", "DELETE FROM sessions WHERE id = ?"));
  s.BindU64(1, Raw(id));
  return s.Run();
}

Result<std::vector<Session>> SqliteTxn::ListSessions() {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare(FOLIO_SESSION_SELECT " ORDER BY id"));
  std::vector<Session> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    out.push_back(ReadSession(s));
  }
}

// ---- locks ----------------------------------------------------------------------------------

Result<std::vector<FlockRecord>> SqliteTxn::GetFlocks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT session, owner, type FROM flocks WHERE ino = ? "
                                       "ORDER BY session, owner"));
  s.BindU64(1, Raw(ino));
  std::vector<FlockRecord> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    if (!ValidLockType(s.Int(2))) {
      return SqliteBadRow(conn_, fmt::format("flock on inode {}: type {}", Raw(ino), s.Int(2)));
    }
    out.push_back(FlockRecord{ino, SessionId{s.U64(0)}, s.U64(1),
                              static_cast<LockType>(s.Int(2))});
  }
}

Status SqliteTxn::PutFlock(const FlockRecord& l) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutFlock",
                   "INSERT OR REPLACE INTO flocks(ino, session, owner, type) VALUES(?, ?, ?, ?)"));
  s.BindU64(1, Raw(l.ino)).BindU64(2, Raw(l.session)).BindU64(3, l.owner);
  s.Bind(4, static_cast<int64_t>(l.type));
  return s.Run();
}

Status SqliteTxn::DeleteFlock(InodeId ino, SessionId session, uint64_t owner) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("DeleteFlock", "DELETE FROM flocks WHERE ino = ? AND session = ? AND owner = ?"));
  s.BindU64(1, Raw(ino)).BindU64(2, Raw(session)).BindU64(3, owner);
  return s.Run();
}

Result<std::vector<PlockRecord>> SqliteTxn::GetPlocks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      conn_.Prepare("SELECT session, owner, pid, type, range_start, range_end FROM plocks "
                    "WHERE ino = ? ORDER BY session, owner, seq"));
  s.BindU64(1, Raw(ino));
  std::vector<PlockRecord> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    if (!ValidLockType(s.Int(3)) || !FitsU32(s.Int(2))) {
      return SqliteBadRow(conn_, fmt::format("POSIX lock on inode {}: pid {} type {}", Raw(ino),
                                             s.Int(2), s.Int(3)));
    }
    out.push_back(PlockRecord{ino, SessionId{s.U64(0)}, s.U64(1),
                              static_cast<uint32_t>(s.Int(2)), static_cast<LockType>(s.Int(3)),
                              s.U64(4), s.U64(5)});
  }
}

Status SqliteTxn::PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                            const std::vector<PlockRecord>& ranges) {
  {
    FOLIO_ASSIGN_OR_RETURN(
        SqliteStmt s,
        PrepareWrite("PutPlocks",
                     "DELETE FROM plocks WHERE ino = ? AND session = ? AND owner = ?"));
    s.BindU64(1, Raw(ino)).BindU64(2, Raw(session)).BindU64(3, owner);
    FOLIO_RETURN_IF_ERROR(s.Run());
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    const PlockRecord& r = ranges[i];
    FOLIO_ASSIGN_OR_RETURN(
        SqliteStmt s,
        conn_.Prepare("INSERT INTO plocks(ino, session, owner, seq, pid, type, range_start, "
                      "range_end) VALUES(?, ?, ?, ?, ?, ?, ?, ?)"));
    // The record's own ino / session / owner are those of the call: one owner's ranges.
    s.BindU64(1, Raw(ino)).BindU64(2, Raw(session)).BindU64(3, owner);
    s.Bind(4, static_cast<int64_t>(i)).Bind(5, r.pid).Bind(6, static_cast<int64_t>(r.type));
    s.BindU64(7, r.start).BindU64(8, r.end);
    FOLIO_RETURN_IF_ERROR(s.Run());
  }
  return Status::OK();
}

Result<std::vector<InodeId>> SqliteTxn::ListLockedInodes(SessionId session) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT ino FROM flocks WHERE session = ?1 UNION "
                                       "SELECT ino FROM plocks WHERE session = ?1 ORDER BY 1"));
  s.BindU64(1, Raw(session));
  return InodeIds(s);
}

// ---- sustained inodes -----------------------------------------------------------------------

Status SqliteTxn::AddSustained(SessionId session, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("AddSustained", "INSERT OR IGNORE INTO sustained(session, ino) VALUES(?, ?)"));
  s.BindU64(1, Raw(session)).BindU64(2, Raw(ino));
  return s.Run();
}

Status SqliteTxn::RemoveSustained(SessionId session, InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("RemoveSustained", "DELETE FROM sustained WHERE session = ? AND ino = ?"));
  s.BindU64(1, Raw(session)).BindU64(2, Raw(ino));
  return s.Run();
}

Result<std::vector<InodeId>> SqliteTxn::ListSustained(SessionId session) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s, conn_.Prepare("SELECT ino FROM sustained WHERE session = ? "
                                                     "ORDER BY ino"));
  s.BindU64(1, Raw(session));
  return InodeIds(s);
}

Result<bool> SqliteTxn::IsSustained(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT 1 FROM sustained WHERE ino = ? LIMIT 1"));
  s.BindU64(1, Raw(ino));
  return s.Step();
}

// ---- deletion queue -------------------------------------------------------------------------

Result<uint64_t> SqliteTxn::QueueDeletion(const Deletion& d) {
  const auto kind = static_cast<uint8_t>(d.kind);
  if (kind < 1 || kind > 2) {
    return Status::InvalidArgument(
        fmt::format("{}: QueueDeletion: kind {} (must be 1 slice or 2 inode)", conn_.url(), kind));
  }
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("QueueDeletion", "INSERT INTO deletions(kind, id, slice_kind, bytes, "
                                    "not_before_ns) VALUES(?, ?, ?, ?, ?) RETURNING seq"));
  s.Bind(1, kind).BindU64(2, d.id).Bind(3, static_cast<int64_t>(d.slice_kind));
  s.BindU64(4, d.bytes).Bind(5, d.not_before_ns);
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Status::IOError(fmt::format("{}: QueueDeletion returned no key", conn_.url()));
  const uint64_t key = s.U64(0);
  FOLIO_ASSIGN_OR_RETURN(bool more, s.Step());
  (void)more;
  return key;
}

Result<std::vector<std::pair<uint64_t, Deletion>>> SqliteTxn::ListDeletions(int64_t due_ns,
                                                                            size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      conn_.Prepare("SELECT seq, kind, id, slice_kind, bytes, not_before_ns FROM deletions "
                    "WHERE not_before_ns <= ? ORDER BY seq LIMIT ?"));
  s.Bind(1, due_ns).Bind(2, static_cast<int64_t>(
                                std::min<size_t>(limit, std::numeric_limits<int64_t>::max())));
  std::vector<std::pair<uint64_t, Deletion>> out;
  for (;;) {
    FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return out;
    if (s.Int(1) < 1 || s.Int(1) > 2 || s.Int(3) < 0 || s.Int(3) > 3) {
      return SqliteBadRow(conn_, fmt::format("deletion {}: kind {} slice_kind {}", s.Int(0),
                                             s.Int(1), s.Int(3)));
    }
    Deletion d;
    d.kind = static_cast<DeletionKind>(s.Int(1));
    d.id = s.U64(2);
    d.slice_kind = static_cast<SliceKind>(s.Int(3));
    d.bytes = s.U64(4);
    d.not_before_ns = s.Int(5);
    out.emplace_back(s.U64(0), d);
  }
}

Status SqliteTxn::RemoveDeletion(uint64_t key) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         PrepareWrite("RemoveDeletion", "DELETE FROM deletions WHERE seq = ?"));
  s.BindU64(1, key);
  return s.Run();
}

// ---- format record --------------------------------------------------------------------------

Result<std::optional<FormatRecord>> SqliteTxn::GetFormat() {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s,
                         conn_.Prepare("SELECT value FROM folio_meta WHERE name = 'format'"));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<FormatRecord>();
  auto f = DecodeFormat(s.Blob(0));
  if (!f.ok()) return f.status().WithContext(conn_.url());
  return std::optional<FormatRecord>(std::move(*f));
}

Status SqliteTxn::PutFormat(const FormatRecord& f) {
  FOLIO_RETURN_IF_ERROR(ValidateFormat(f).WithContext(conn_.url()));
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt s,
      PrepareWrite("PutFormat",
                   "INSERT OR REPLACE INTO folio_meta(name, value) VALUES('format', ?)"));
  s.BindText(1, EncodeFormat(f));
  return s.Run();
}

}  // namespace folio::meta
