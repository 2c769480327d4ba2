#include "meta/sqlite_schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <vector>

#include "meta/meta_types.h"

namespace folio::meta {
namespace {

// Every table of the schema, in creation order; docs/format/meta.md shows the same text.
constexpr const char* kTables[] = {
    "folio_meta",  "inodes", "entries",  "symlinks", "xattrs",    "chunks",    "slice_refs",
    "counters",    "sessions", "flocks", "plocks",   "sustained", "deletions",
};

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE folio_meta(
  name TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL) STRICT, WITHOUT ROWID;
CREATE TABLE inodes(
  ino INTEGER PRIMARY KEY, type INTEGER NOT NULL, mode INTEGER NOT NULL,
  uid INTEGER NOT NULL, gid INTEGER NOT NULL, nlink INTEGER NOT NULL,
  size INTEGER NOT NULL, rdev INTEGER NOT NULL, atime_ns INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, flags INTEGER NOT NULL,
  parent INTEGER NOT NULL) STRICT;
CREATE TABLE entries(
  parent INTEGER NOT NULL, name BLOB NOT NULL, ino INTEGER NOT NULL, type INTEGER NOT NULL,
  PRIMARY KEY(parent, name)) STRICT, WITHOUT ROWID;
CREATE TABLE symlinks(
  ino INTEGER PRIMARY KEY, target BLOB NOT NULL) STRICT;
CREATE TABLE xattrs(
  ino INTEGER NOT NULL, name BLOB NOT NULL, value BLOB NOT NULL,
  PRIMARY KEY(ino, name)) STRICT, WITHOUT ROWID;
CREATE TABLE chunks(
  ino INTEGER NOT NULL, idx INTEGER NOT NULL, slices BLOB NOT NULL,
  PRIMARY KEY(ino, idx)) STRICT, WITHOUT ROWID;
CREATE TABLE slice_refs(
  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, object_bytes INTEGER NOT NULL,
  refs INTEGER NOT NULL) STRICT;
CREATE TABLE counters(
  name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) STRICT, WITHOUT ROWID;
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, mountpoint TEXT NOT NULL,
  version TEXT NOT NULL, read_only INTEGER NOT NULL, start_ns INTEGER NOT NULL,
  heartbeat_ns INTEGER NOT NULL) STRICT;
CREATE TABLE flocks(
  ino INTEGER NOT NULL, session INTEGER NOT NULL, owner INTEGER NOT NULL,
  type INTEGER NOT NULL, PRIMARY KEY(ino, session, owner)) STRICT, WITHOUT ROWID;
CREATE INDEX flocks_by_session ON flocks(session, ino);
CREATE TABLE plocks(
  ino INTEGER NOT NULL, session INTEGER NOT NULL, owner INTEGER NOT NULL,
  seq INTEGER NOT NULL, pid INTEGER NOT NULL, type INTEGER NOT NULL,
  range_start INTEGER NOT NULL, range_end INTEGER NOT NULL,
  PRIMARY KEY(ino, session, owner, seq)) STRICT, WITHOUT ROWID;
CREATE INDEX plocks_by_session ON plocks(session, ino);
CREATE TABLE sustained(
  session INTEGER NOT NULL, ino INTEGER NOT NULL,
  PRIMARY KEY(session, ino)) STRICT, WITHOUT ROWID;
CREATE INDEX sustained_by_ino ON sustained(ino);
CREATE TABLE deletions(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, kind INTEGER NOT NULL, id INTEGER NOT NULL,
  slice_kind INTEGER NOT NULL, bytes INTEGER NOT NULL, not_before_ns INTEGER NOT NULL) STRICT;
)sql";

bool IsFolioTable(std::string_view name) {
  for (const char* t : kTables) {
    if (name == t) return true;
  }
  return false;
}

Status InsertCounters(SqliteConn& conn) {
  for (Counter c : kAllCounters) {
    // Id 1 of the inode counter is the root's (kRootInode): AllocateIds starts after it.
    const int64_t start = c == Counter::kNextInode ? static_cast<int64_t>(Raw(kRootInode)) : 0;
    FOLIO_ASSIGN_OR_RETURN(SqliteStmt stmt,
                           conn.Prepare("INSERT INTO counters(name, value) VALUES(?, ?)"));
    stmt.BindText(1, CounterName(c)).Bind(2, start);
    FOLIO_RETURN_IF_ERROR(stmt.Run());
  }
  return Status::OK();
}

}  // namespace

Result<SqliteSchemaState> ProbeSqliteSchema(SqliteConn& conn) {
  // Reading the schema is the first read of the file: a file that is not an SQLite database
  // fails here with SQLITE_NOTADB.
  std::vector<std::string> names;
  {
    auto stmt = conn.Prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' "
        "ORDER BY name");
    if (!stmt.ok()) {
      if (stmt.status().code() == StatusCode::kCorruption) {
        return Status::InvalidArgument(fmt::format(
            "{}: not a Folio volume (not an SQLite database: {})", conn.url(),
            stmt.status().message()));
      }
      return stmt.status();
    }
    for (;;) {
      auto row = stmt->Step();
      if (!row.ok()) {
        if (row.status().code() == StatusCode::kCorruption) {
          return Status::InvalidArgument(
              fmt::format("{}: not a Folio volume (not an SQLite database)", conn.url()));
        }
        return row.status();
      }
      if (!*row) break;
      names.emplace_back(stmt->Blob(0));
    }
  }
  FOLIO_ASSIGN_OR_RETURN(int64_t app_id, conn.QueryInt("PRAGMA application_id"));
  if (names.empty() && app_id == 0) return SqliteSchemaState::kEmpty;
  std::vector<std::string> foreign;
  for (const auto& n : names) {
    if (!IsFolioTable(n)) foreign.push_back(n);
  }
  bool has_meta = false;
  for (const auto& n : names) has_meta |= n == "folio_meta";
  if (!foreign.empty()) {
    if (foreign.size() > 3) foreign.resize(3);
    return Status::InvalidArgument(
        fmt::format("{}: not a Folio volume (an SQLite database with tables {}); name a new file "
                    "or a Folio database",
                    conn.url(), fmt::join(foreign, ", ")));
  }
  if (app_id != kSqliteApplicationId || !has_meta) {
    return Status::InvalidArgument(
        fmt::format("{}: not a Folio volume (an SQLite database with application_id {}, Folio's "
                    "is {}); name a new file or a Folio database",
                    conn.url(), app_id, kSqliteApplicationId));
  }
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt stmt,
                         conn.Prepare("SELECT value FROM folio_meta WHERE name = 'schema_version'"));
  FOLIO_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Status::Corruption(fmt::format("{}: folio_meta has no schema_version", conn.url()));
  const std::string text(stmt.Blob(0));
  int64_t version = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption(
        fmt::format("{}: folio_meta schema_version '{}' is not a number", conn.url(), text));
  }
  if (version > kSqliteSchemaVersion) {
    return Status::NotSupported(fmt::format(
        "{}: schema version {} is newer than this build of Folio reads ({}); use a newer folio",
        conn.url(), version, kSqliteSchemaVersion));
  }
  if (version < 1) {
    return Status::Corruption(fmt::format("{}: schema version {} is not valid", conn.url(), version));
  }
  if (names.size() != std::size(kTables)) {
    return Status::Corruption(fmt::format("{}: Folio schema has {} of its {} tables", conn.url(),
                                          names.size(), std::size(kTables)));
  }
  return SqliteSchemaState::kFolio;
}

Status CreateSqliteSchema(SqliteConn& conn) {
  FOLIO_RETURN_IF_ERROR(conn.Exec(kSchemaSql));
  FOLIO_RETURN_IF_ERROR(conn.Exec(
      fmt::format("PRAGMA application_id = {}", kSqliteApplicationId).c_str()));
  FOLIO_ASSIGN_OR_RETURN(
      SqliteStmt stmt,
      conn.Prepare("INSERT INTO folio_meta(name, value) VALUES('schema_version', ?)"));
  stmt.BindText(1, std::to_string(kSqliteSchemaVersion));
  FOLIO_RETURN_IF_ERROR(stmt.Run());
  return InsertCounters(conn);
}

Status WipeSqliteSchema(SqliteConn& conn) {
  for (const char* t : kTables) {
    if (std::string_view(t) == "folio_meta") continue;
    FOLIO_RETURN_IF_ERROR(conn.Exec(fmt::format("DELETE FROM {}", t).c_str()));
  }
  FOLIO_RETURN_IF_ERROR(conn.Exec("DELETE FROM folio_meta WHERE name <> 'schema_version'"));
  FOLIO_RETURN_IF_ERROR(conn.Exec("DELETE FROM sqlite_sequence WHERE name = 'deletions'"));
  return InsertCounters(conn);
}

}  // namespace folio::meta
