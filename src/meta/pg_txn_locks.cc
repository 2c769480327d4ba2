// PgTxn, part 2: sessions, flock and POSIX locks, sustained inodes, the deletion queue and the
// format record.
#include <fmt/format.h>

#include <limits>

#include "meta/pg_txn.h"

namespace folio::meta {
namespace {

using P = PgParam;

constexpr const char* kSessionSelect =
    "SELECT id, host, pid, mountpoint, version, read_only, start_ns, heartbeat_ns FROM sessions";

Session ReadSession(const PgRows& s, int row) {
  Session r;
  r.id = SessionId{s.U64(row, 0)};
  r.host = std::string(s.Bytes(row, 1));
  r.pid = static_cast<uint32_t>(s.Int(row, 2));
  r.mountpoint = std::string(s.Bytes(row, 3));
  r.version = std::string(s.Bytes(row, 4));
  SetSessionFlags(&r, s.Int(row, 5));
  r.start_ns = s.Int(row, 6);
  r.heartbeat_ns = s.Int(row, 7);
  return r;
}

}  // namespace

// ---- sessions -------------------------------------------------------------------------------

Result<std::optional<Session>> PgTxn::GetSession(SessionId id) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec(fmt::format("{} WHERE id = $1", kSessionSelect),
                                              {P::U(Raw(id))}));
  if (r.size() == 0) return std::optional<Session>();
  return std::optional<Session>(ReadSession(r, 0));
}

Status PgTxn::PutSession(const Session& s) {
  if (Raw(s.id) == 0) {
    return Status::InvalidArgument(fmt::format("{}: PutSession: session id 0", conn_.display()));
  }
  return Write("PutSession",
               "INSERT INTO sessions(id, host, pid, mountpoint, version, read_only, start_ns, "
               "heartbeat_ns) VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT(id) DO UPDATE "
               "SET host = excluded.host, pid = excluded.pid, mountpoint = excluded.mountpoint, "
               "version = excluded.version, read_only = excluded.read_only, start_ns = "
               "excluded.start_ns, heartbeat_ns = excluded.heartbeat_ns",
               {P::U(Raw(s.id)), P::B(s.host), P::I(s.pid), P::B(s.mountpoint), P::B(s.version),
                P::I(SessionFlags(s)), P::I(s.start_ns), P::I(s.heartbeat_ns)});
}

Status PgTxn::DeleteSession(SessionId id) {
  return Write("DeleteSession", "DELETE FROM sessions WHERE id = $1", {P::U(Raw(id))});
}

Result<std::vector<Session>> PgTxn::ListSessions() {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec(fmt::format("{} ORDER BY id", kSessionSelect)));
  std::vector<Session> out;
  for (int i = 0; i < r.size(); ++i) out.push_back(ReadSession(r, i));
  return out;
}

// ---- locks ----------------------------------------------------------------------------------

Result<std::vector<FlockRecord>> PgTxn::GetFlocks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT session, owner, type FROM flocks WHERE ino "
                                              "= $1 ORDER BY session, owner",
                                              {P::U(Raw(ino))}));
  std::vector<FlockRecord> out;
  for (int i = 0; i < r.size(); ++i) {
    if (!ValidLockType(r.Int(i, 2))) {
      return BadRow(fmt::format("flock on inode {}: type {}", Raw(ino), r.Int(i, 2)));
    }
    out.push_back(FlockRecord{ino, SessionId{r.U64(i, 0)}, r.U64(i, 1),
                              static_cast<LockType>(r.Int(i, 2))});
  }
  return out;
}

Status PgTxn::PutFlock(const FlockRecord& l) {
  return Write("PutFlock",
               "INSERT INTO flocks(ino, session, owner, type) VALUES($1, $2, $3, $4) "
               "ON CONFLICT(ino, session, owner) DO UPDATE SET type = excluded.type",
               {P::U(Raw(l.ino)), P::U(Raw(l.session)), P::U(l.owner),
                P::I(static_cast<int64_t>(l.type))});
}

Status PgTxn::DeleteFlock(InodeId ino, SessionId session, uint64_t owner) {
  return Write("DeleteFlock", "DELETE FROM flocks WHERE ino = $1 AND session = $2 AND owner = $3",
               {P::U(Raw(ino)), P::U(Raw(session)), P::U(owner)});
}

Result<std::vector<PlockRecord>> PgTxn::GetPlocks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT session, owner, pid, type, range_start, range_end FROM plocks "
                           "WHERE ino = $1 ORDER BY session, owner, seq",
                           {P::U(Raw(ino))}));
  std::vector<PlockRecord> out;
  for (int i = 0; i < r.size(); ++i) {
    if (!ValidLockType(r.Int(i, 3)) || r.Int(i, 2) < 0 || r.Int(i, 2) > int64_t{UINT32_MAX}) {
      return BadRow(fmt::format("POSIX lock on inode {}: pid {} type {}", Raw(ino), r.Int(i, 2),
                                r.Int(i, 3)));
    }
    out.push_back(PlockRecord{ino, SessionId{r.U64(i, 0)}, r.U64(i, 1),
                              static_cast<uint32_t>(r.Int(i, 2)),
                              static_cast<LockType>(r.Int(i, 3)), r.U64(i, 4), r.U64(i, 5)});
  }
  return out;
}

Status PgTxn::PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                        const std::vector<PlockRecord>& ranges) {
  FOLIO_RETURN_IF_ERROR(Write("PutPlocks",
                              "DELETE FROM plocks WHERE ino = $1 AND session = $2 AND owner = $3",
                              {P::U(Raw(ino)), P::U(Raw(session)), P::U(owner)}));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const PlockRecord& r = ranges[i];
    // The record's own ino / session / owner are those of the call: one owner's ranges.
    FOLIO_RETURN_IF_ERROR(
        conn_
            .Exec("INSERT INTO plocks(ino, session, owner, seq, pid, type, range_start, "
                  "range_end) VALUES($1, $2, $3, $4, $5, $6, $7, $8)",
                  {P::U(Raw(ino)), P::U(Raw(session)), P::U(owner),
                   P::I(static_cast<int64_t>(i)), P::I(r.pid),
                   P::I(static_cast<int64_t>(r.type)), P::U(r.start), P::U(r.end)})
            .status());
  }
  return Status::OK();
}

Result<std::vector<InodeId>> PgTxn::ListLockedInodes(SessionId session) {
  return InodeIds("SELECT ino FROM flocks WHERE session = $1 UNION SELECT ino FROM plocks WHERE "
                  "session = $1 ORDER BY 1",
                  {P::U(Raw(session))});
}

// ---- sustained inodes -----------------------------------------------------------------------

Status PgTxn::AddSustained(SessionId session, InodeId ino) {
  return Write("AddSustained",
               "INSERT INTO sustained(session, ino) VALUES($1, $2) ON CONFLICT DO NOTHING",
               {P::U(Raw(session)), P::U(Raw(ino))});
}

Status PgTxn::RemoveSustained(SessionId session, InodeId ino) {
  return Write("RemoveSustained", "DELETE FROM sustained WHERE session = $1 AND ino = $2",
               {P::U(Raw(session)), P::U(Raw(ino))});
}

Result<std::vector<InodeId>> PgTxn::ListSustained(SessionId session) {
  return InodeIds("SELECT ino FROM sustained WHERE session = $1 ORDER BY ino",
                  {P::U(Raw(session))});
}

Result<bool> PgTxn::IsSustained(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT 1::bigint FROM sustained WHERE ino = $1 "
                                              "LIMIT 1",
                                              {P::U(Raw(ino))}));
  return r.size() > 0;
}

// ---- deletion queue -------------------------------------------------------------------------

Result<uint64_t> PgTxn::QueueDeletion(const Deletion& d) {
  const auto kind = static_cast<uint8_t>(d.kind);
  if (kind < 1 || kind > 2) {
    return Status::InvalidArgument(fmt::format(
        "{}: QueueDeletion: kind {} (must be 1 slice or 2 inode)", conn_.display(), kind));
  }
  FOLIO_RETURN_IF_ERROR(Writable("QueueDeletion"));
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("INSERT INTO deletions(kind, id, slice_kind, bytes, not_before_ns) "
                           "VALUES($1, $2, $3, $4, $5) RETURNING seq",
                           {P::I(kind), P::U(d.id), P::I(static_cast<int64_t>(d.slice_kind)),
                            P::U(d.bytes), P::I(d.not_before_ns)}));
  if (r.size() != 1) {
    return Status::IOError(fmt::format("{}: QueueDeletion returned no key", conn_.display()));
  }
  return r.U64(0, 0);
}

Result<std::vector<std::pair<uint64_t, Deletion>>> PgTxn::ListDeletions(int64_t due_ns,
                                                                        size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r,
      conn_.Exec("SELECT seq, kind, id, slice_kind, bytes, not_before_ns FROM deletions WHERE "
                 "not_before_ns <= $1 ORDER BY seq LIMIT $2",
                 {P::I(due_ns), P::I(static_cast<int64_t>(std::min<size_t>(
                                    limit, std::numeric_limits<int64_t>::max())))}));
  std::vector<std::pair<uint64_t, Deletion>> out;
  for (int i = 0; i < r.size(); ++i) {
    if (r.Int(i, 1) < 1 || r.Int(i, 1) > 2 || r.Int(i, 3) < 0 || r.Int(i, 3) > 3) {
      return BadRow(fmt::format("deletion {}: kind {} slice_kind {}", r.Int(i, 0), r.Int(i, 1),
                                r.Int(i, 3)));
    }
    Deletion d;
    d.kind = static_cast<DeletionKind>(r.Int(i, 1));
    d.id = r.U64(i, 2);
    d.slice_kind = static_cast<SliceKind>(r.Int(i, 3));
    d.bytes = r.U64(i, 4);
    d.not_before_ns = r.Int(i, 5);
    out.emplace_back(r.U64(i, 0), d);
  }
  return out;
}

Status PgTxn::RemoveDeletion(uint64_t key) {
  return Write("RemoveDeletion", "DELETE FROM deletions WHERE seq = $1", {P::U(key)});
}

// ---- format record --------------------------------------------------------------------------

Result<std::optional<FormatRecord>> PgTxn::GetFormat() {
  FOLIO_ASSIGN_OR_RETURN(PgRows r,
                         conn_.Exec("SELECT value FROM folio_meta WHERE name = 'format'"));
  if (r.size() == 0) return std::optional<FormatRecord>();
  auto f = DecodeFormat(r.Bytes(0, 0));
  if (!f.ok()) return f.status().WithContext(fmt::format("{}: format record", conn_.display()));
  return std::optional<FormatRecord>(std::move(*f));
}

Status PgTxn::PutFormat(const FormatRecord& format) {
  FOLIO_RETURN_IF_ERROR(
      ValidateFormat(format).WithContext(fmt::format("{}: PutFormat", conn_.display())));
  return Write("PutFormat",
               "INSERT INTO folio_meta(name, value) VALUES('format', $1) ON CONFLICT(name) DO "
               "UPDATE SET value = excluded.value",
               {P::T(EncodeFormat(format))});
}

}  // namespace folio::meta
