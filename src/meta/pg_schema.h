// The PostgreSQL engine's schema: the SQLite engine's tables and columns (docs/format/meta.md)
// in PostgreSQL types (BIGINT for every integer, BYTEA for names and blobs, TEXT for strings),
// created in the connection's current schema (the first of its search_path: `public`, or the
// one a URL names with options=-csearch_path%3DNAME, so several volumes share a database).
//
// Thread safety: pure functions over a connection the caller owns.
#pragma once

#include "folio/status.h"
#include "meta/pg_conn.h"

namespace folio::meta {

// kFolioUpgradable: a volume of an older schema version this build upgrades (UpgradePgSchema).
enum class PgSchemaState { kEmpty, kFolio, kFolioUpgradable };

// What the current schema holds. Errors: InvalidArgument "not a Folio volume" for a schema with
// other tables, or no current schema (its search_path names a schema that does not exist);
// NotSupported for a newer schema version.
Result<PgSchemaState> ProbePgSchema(PgConn& conn);
// Upgrades an older volume in its own transaction (nothing when another engine did it first).
// REQUIRES: outside a transaction.
Status UpgradePgSchema(PgConn& conn);
// Creates the tables and counters. REQUIRES: inside a transaction, ProbePgSchema said kEmpty.
Status CreatePgSchema(PgConn& conn);
// Removes every record and resets the counters (format --force). REQUIRES: in a transaction.
Status WipePgSchema(PgConn& conn);

}  // namespace folio::meta
