// The SQLite engine's schema: one typed (STRICT) table per record kind of meta_types.h, the
// shape the PostgreSQL engine copies (docs/format/meta.md, "SQLite schema"). A Folio database
// carries PRAGMA application_id kSqliteApplicationId and a folio_meta row schema_version.
//
// Thread safety: functions on one connection; the caller holds it exclusively.
#pragma once

#include <cstdint>
#include <string>

#include "folio/status.h"
#include "meta/sqlite_conn.h"

namespace folio::meta {

inline constexpr int64_t kSqliteApplicationId = 0x466f6c46;  // "FolF"
inline constexpr int64_t kSqliteSchemaVersion = 1;

enum class SqliteSchemaState {
  kEmpty,  // no tables at all: Init may create the schema
  kFolio,  // a Folio schema of a version this build reads
};

// What the database holds. Errors: InvalidArgument "not a Folio volume" for a database with
// other tables (naming a few) or for a file that is not an SQLite database; NotSupported for a
// Folio schema newer than kSqliteSchemaVersion; IOError / Busy from SQLite.
// REQUIRES: a transaction is open on conn (a consistent view), or none runs elsewhere.
Result<SqliteSchemaState> ProbeSqliteSchema(SqliteConn& conn);

// Creates every table, index and counter row. REQUIRES: a write transaction on an empty
// database.
Status CreateSqliteSchema(SqliteConn& conn);

// Deletes every record of every Folio table and resets the counters (Init kWipe).
// REQUIRES: a write transaction on a Folio database.
Status WipeSqliteSchema(SqliteConn& conn);

}  // namespace folio::meta
