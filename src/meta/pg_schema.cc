#include "meta/pg_schema.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "meta/meta_types.h"

namespace folio::meta {
namespace {

// 2: a chunk's appended records are rows of chunk_appends (an append no longer rewrites the
// chunk's whole list); version 1 volumes are upgraded when an engine opens them read-write.
constexpr const char* kPgSchemaVersion = "2";
constexpr const char* kPgSchemaVersionUpgradable = "1";

// Every table of the schema; docs/format/meta.md shows the same text.
constexpr const char* kPgTables[] = {
    "folio_meta", "inodes",   "entries", "symlinks", "xattrs",    "chunks",    "slice_refs",
    "counters",   "sessions", "flocks",  "plocks",   "sustained", "deletions", "txn_markers",
    "chunk_appends",
};
// What version 1 lacks (its tables are the others).
constexpr const char* kPgTableSinceV2 = "chunk_appends";

// Version 1 -> 2: the append counter of every chunk and the table of appended records.
constexpr const char* kPgUpgradeV2Sql = R"sql(
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS appends BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS chunk_appends(ino BIGINT NOT NULL, idx BIGINT NOT NULL,
  n BIGINT NOT NULL, slices BYTEA NOT NULL, PRIMARY KEY(ino, idx, n));
UPDATE folio_meta SET value = '2' WHERE name = 'schema_version';
)sql";

constexpr const char* kPgSchemaSql = R"sql(
CREATE TABLE folio_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE inodes(ino BIGINT PRIMARY KEY, type BIGINT NOT NULL, mode BIGINT NOT NULL,
  uid BIGINT NOT NULL, gid BIGINT NOT NULL, nlink BIGINT NOT NULL, size BIGINT NOT NULL,
  rdev BIGINT NOT NULL, atime_ns BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,
  ctime_ns BIGINT NOT NULL, flags BIGINT NOT NULL, parent BIGINT NOT NULL);
CREATE TABLE entries(parent BIGINT NOT NULL, name BYTEA NOT NULL, ino BIGINT NOT NULL,
  type BIGINT NOT NULL, PRIMARY KEY(parent, name));
CREATE TABLE symlinks(ino BIGINT PRIMARY KEY, target BYTEA NOT NULL);
CREATE TABLE xattrs(ino BIGINT NOT NULL, name BYTEA NOT NULL, value BYTEA NOT NULL,
  PRIMARY KEY(ino, name));
CREATE TABLE chunks(ino BIGINT NOT NULL, idx BIGINT NOT NULL, slices BYTEA NOT NULL,
  appends BIGINT NOT NULL DEFAULT 0, PRIMARY KEY(ino, idx));
CREATE TABLE chunk_appends(ino BIGINT NOT NULL, idx BIGINT NOT NULL, n BIGINT NOT NULL,
  slices BYTEA NOT NULL, PRIMARY KEY(ino, idx, n));
CREATE TABLE slice_refs(id BIGINT PRIMARY KEY, kind BIGINT NOT NULL,
  object_bytes BIGINT NOT NULL, refs BIGINT NOT NULL);
CREATE TABLE counters(name TEXT PRIMARY KEY, value BIGINT NOT NULL);
CREATE TABLE sessions(id BIGINT PRIMARY KEY, host BYTEA NOT NULL, pid BIGINT NOT NULL,
  mountpoint BYTEA NOT NULL, version BYTEA NOT NULL, read_only BIGINT NOT NULL,
  start_ns BIGINT NOT NULL, heartbeat_ns BIGINT NOT NULL);
CREATE TABLE flocks(ino BIGINT NOT NULL, session BIGINT NOT NULL, owner BIGINT NOT NULL,
  type BIGINT NOT NULL, PRIMARY KEY(ino, session, owner));
CREATE INDEX flocks_by_session ON flocks(session, ino);
CREATE TABLE plocks(ino BIGINT NOT NULL, session BIGINT NOT NULL, owner BIGINT NOT NULL,
  seq BIGINT NOT NULL, pid BIGINT NOT NULL, type BIGINT NOT NULL,
  range_start BIGINT NOT NULL, range_end BIGINT NOT NULL,
  PRIMARY KEY(ino, session, owner, seq));
CREATE INDEX plocks_by_session ON plocks(session, ino);
CREATE TABLE sustained(session BIGINT NOT NULL, ino BIGINT NOT NULL, PRIMARY KEY(session, ino));
CREATE INDEX sustained_by_ino ON sustained(ino);
CREATE TABLE deletions(seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind BIGINT NOT NULL, id BIGINT NOT NULL, slice_kind BIGINT NOT NULL, bytes BIGINT NOT NULL,
  not_before_ns BIGINT NOT NULL);
CREATE TABLE txn_markers(conn BIGINT PRIMARY KEY, seq BIGINT NOT NULL,
  written_at TIMESTAMPTZ NOT NULL);
)sql";

bool IsPgFolioTable(std::string_view name) {
  for (const char* t : kPgTables) {
    if (name == t) return true;
  }
  return false;
}

Status InsertMetaRows(PgConn& conn) {
  std::string sql = fmt::format(
      "INSERT INTO folio_meta(name, value) VALUES('schema_version', '{}') ON CONFLICT(name) DO "
      "UPDATE SET value = excluded.value;",
      kPgSchemaVersion);
  for (Counter c : kAllCounters) {
    // Id 1 of the inode counter is the root's (kRootInode): AllocateIds starts after it.
    sql += fmt::format("INSERT INTO counters(name, value) VALUES('{}', {});", CounterName(c),
                       c == Counter::kNextInode ? Raw(kRootInode) : 0);
  }
  return conn.Simple(sql).status();
}

}  // namespace

Result<PgSchemaState> ProbePgSchema(PgConn& conn) {
  FOLIO_ASSIGN_OR_RETURN(PgRows schema, conn.Simple("SELECT current_schema()"));
  if (schema.size() != 1 || schema.Null(0, 0)) {
    return Status::InvalidArgument(fmt::format(
        "{}: no current schema: the search_path names no existing schema; CREATE SCHEMA it "
        "first",
        conn.display()));
  }
  FOLIO_ASSIGN_OR_RETURN(
      PgRows tables,
      conn.Simple("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                  "current_schema() ORDER BY table_name"));
  if (tables.size() == 0) return PgSchemaState::kEmpty;
  std::vector<std::string> foreign;
  bool has_v2_table = false;
  for (int i = 0; i < tables.size(); ++i) {
    const std::string_view t = tables.Bytes(i, 0);
    if (!IsPgFolioTable(t)) foreign.emplace_back(t);
    has_v2_table |= t == kPgTableSinceV2;
  }
  const int all = static_cast<int>(std::size(kPgTables));
  if (!foreign.empty() || tables.size() != (has_v2_table ? all : all - 1)) {
    return Status::InvalidArgument(fmt::format(
        "{}: not a Folio volume (schema {} holds other tables{}{}); use an empty database or "
        "schema",
        conn.display(), schema.Bytes(0, 0), foreign.empty() ? "" : ", e.g. ",
        foreign.empty() ? "" : foreign[0]));
  }
  FOLIO_ASSIGN_OR_RETURN(
      PgRows v, conn.Simple("SELECT value FROM folio_meta WHERE name = 'schema_version'"));
  if (v.size() != 1) {
    return Status::InvalidArgument(
        fmt::format("{}: not a Folio volume (no schema_version)", conn.display()));
  }
  if (v.Bytes(0, 0) == kPgSchemaVersionUpgradable && !has_v2_table) {
    return PgSchemaState::kFolioUpgradable;
  }
  if (v.Bytes(0, 0) != kPgSchemaVersion || !has_v2_table) {
    return Status::NotSupported(fmt::format(
        "{}: schema version {} is newer than this build of Folio reads ({}); use a newer folio",
        conn.display(), v.Bytes(0, 0), kPgSchemaVersion));
  }
  return PgSchemaState::kFolio;
}

Status UpgradePgSchema(PgConn& conn) {
  // Two engines opening the volume at once: the second waits for the first's upgrade, then
  // finds nothing to do.
  FOLIO_RETURN_IF_ERROR(conn.Simple("BEGIN; LOCK TABLE folio_meta IN ACCESS EXCLUSIVE MODE").status());
  Status s = [&]() -> Status {
    FOLIO_ASSIGN_OR_RETURN(PgSchemaState state, ProbePgSchema(conn));
    if (state != PgSchemaState::kFolioUpgradable) return Status::OK();
    return conn.Simple(kPgUpgradeV2Sql).status();
  }();
  if (s.ok()) s = conn.Simple("COMMIT").status();
  if (!s.ok() && !conn.broken()) (void)conn.Simple("ROLLBACK");
  return s.WithContext("upgrading the volume's schema from version 1 to 2");
}

Status CreatePgSchema(PgConn& conn) {
  FOLIO_RETURN_IF_ERROR(conn.Simple(kPgSchemaSql).status());
  return InsertMetaRows(conn);
}

Status WipePgSchema(PgConn& conn) {
  // Not txn_markers: a connection of another engine may be about to read its marker (a commit
  // whose reply it lost), and a marker is no record of the volume.
  std::string sql = "TRUNCATE ";
  for (const char* t : kPgTables) {
    if (std::string_view(t) == "txn_markers") continue;
    sql += (sql.size() > 9 ? ", " : "") + std::string(t);
  }
  FOLIO_RETURN_IF_ERROR(conn.Simple(sql).status());
  return InsertMetaRows(conn);
}

}  // namespace folio::meta
