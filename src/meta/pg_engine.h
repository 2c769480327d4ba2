// The PostgreSQL metadata engine (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?PARAM=...]`, also
// `postgresql://`; the parameters are libpq's: sslmode, password, options=-csearch_path%3DNAME
// for a volume in its own schema, ...): libpq, the SQLite engine's tables (pg_schema.h).
//
// How transactions run (the contract is meta_engine.h's):
//   - Each transaction borrows a connection from a pool and runs in BEGIN ISOLATION LEVEL
//     SERIALIZABLE (READ ONLY for kRead), with prepared statements. PostgreSQL's serializable
//     snapshot isolation checks reads (scans included) and writes; a serialization failure
//     (40001), a deadlock (40P01) or a unique violation from a racing insert (23505), at any
//     statement or at COMMIT, rolls back and re-runs fn with jittered backoff, up to
//     max_retries, whatever fn returned.
//   - Round trips: BEGIN goes out with the transaction's first read, and writes wait for the
//     next read or the commit (PgConn::Queue, libpq's pipeline mode): a create is three round
//     trips (BEGIN + the parent, the name and the parent's policy, then every write + marker +
//     COMMIT), a getattr two. A write's error is returned by the call that sent it.
//   - Lost connections: a transaction whose connection fails before COMMIT re-runs on a new
//     connection, with backoff, for up to reconnect_timeout_ms. Every write transaction ends
//     with its connection's commit marker (a row of txn_markers: the connection's id and the
//     transaction's sequence number), sent with COMMIT in one pipeline. When the connection fails
//     after that went out, a new connection ends the old connection's server process if it still
//     runs, then reads the marker: the sequence number is there (OK) or not (re-run). Never
//     applied twice, never half. (Not txid_status: a server crash can hand the same transaction
//     id to a later transaction, which then answers "committed" for one that never was.)
//   - Durability is the server's (synchronous_commit, fsync).
//
// Thread safety: thread-safe (MetaEngine).
#pragma once

#include <memory>
#include <string_view>

#include "meta/meta_engine.h"

namespace folio::meta {

// Opens the engine on a full postgres:// URL. Errors: IOError naming the URL (without its
// password) when the server cannot be reached; InvalidArgument for a database or schema that
// holds other tables; NotSupported for a newer schema version.
Result<std::unique_ptr<MetaEngine>> OpenPgEngine(std::string_view url,
                                                 const MetaOpenOptions& options);

}  // namespace folio::meta
