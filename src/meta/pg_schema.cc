#include "meta/pg_schema.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "meta/meta_types.h"

namespace folio::meta {
namespace {

constexpr const char* kPgSchemaVersion = "1";

// Every table of the schema; docs/format/meta.md shows the same text.
constexpr const char* kPgTables[] = {
    "folio_meta", "inodes",   "entries", "symlinks", "xattrs",    "chunks",    "slice_refs",
    "counters",   "sessions", "flocks",  "plocks",   "sustained", "deletions", "txn_markers",
};

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
  PRIMARY KEY(ino, idx));
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
  for (int i = 0; i < tables.size(); ++i) {
    const std::string_view t = tables.Bytes(i, 0);
    if (!IsPgFolioTable(t)) foreign.emplace_back(t);
  }
  if (!foreign.empty() || tables.size() != static_cast<int>(std::size(kPgTables))) {
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
  if (v.Bytes(0, 0) != kPgSchemaVersion) {
    return Status::NotSupported(fmt::format(
        "{}: schema version {} is newer than this build of Folio reads ({}); use a newer folio",
        conn.display(), v.Bytes(0, 0), kPgSchemaVersion));
  }
  return PgSchemaState::kFolio;
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
