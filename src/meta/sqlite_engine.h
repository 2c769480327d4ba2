// The SQLite metadata engine (`sqlite:PATH`): libsqlite3 in WAL mode, synchronous=FULL by
// default, typed tables per record kind (sqlite_schema.h), one writer connection and a pool of
// reader connections.
//
// How transactions run (the contract is meta_engine.h's):
//   - kRead: BEGIN ... ROLLBACK, a WAL snapshot. On the writer connection when it is idle (no
//     batch open, its mutex free, no writer waiting): its page cache survives its own commits,
//     while a reader connection's is dropped whenever anything was committed since its last
//     transaction, so a lookup after a write re-read every page it touched. Otherwise on a
//     reader connection, concurrent with other readers and with the writer.
//   - kWrite, group commit: write transactions of this process run one at a time on the writer
//     connection, each in its own SAVEPOINT inside one shared physical transaction (BEGIN
//     IMMEDIATE). A transaction whose fn fails rolls back to its savepoint alone. When fn
//     succeeds and no other writer is waiting (or the batch is full), its thread COMMITs the
//     batch (one WAL fsync for all); otherwise it hands the open transaction to the next writer
//     and waits for the commit. fn always runs on its caller's thread.
//       writer A: BEGIN IMMEDIATE, SAVEPOINT, fn_A, RELEASE ──┐ (B waiting: leave it open)
//       writer B:                     SAVEPOINT, fn_B, RELEASE, COMMIT ── A and B return
//   - Busy handling: sqlite3_busy_timeout plus retries of BEGIN IMMEDIATE (with backoff) until
//     MetaOpenOptions::busy_timeout_ms has passed; only then Busy. A statement that still hits a
//     lock inside fn re-runs fn (a retry in Stats()).
//   - A batch SQLite rolled back by itself (disk full, I/O error inside another member's fn) is
//     re-run by every member that had succeeded, so no member's writes are lost silently.
//
//   - Checkpoints: a commit that takes the WAL past 1000 frames wakes a checkpointer thread
//     (its own connection, PASSIVE checkpoints) instead of checkpointing and fsyncing inside
//     the commit, where every writer waited for it.
//
// Thread safety: thread-safe (MetaEngine). Lock order: writer_mu_ before done_mu_ and before
// ckpt_mu_ (the WAL hook runs in a commit); readers_mu_ is taken alone.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "meta/meta_engine.h"

namespace folio::meta {

// Knobs of the SQLite engine that MetaOpenOptions does not carry (benchmarks and tests).
struct SqliteTuning {
  size_t group_commit_max = 64;  // write transactions per physical commit; 1 = no group commit
  size_t readers_max = 4;        // reader connections (kRead transactions at once)
};

// Opens the SQLite engine on `path` (the part after "sqlite:"). A missing file is not created
// here (Init creates it), so opening a mistyped path writes nothing.
// Errors: InvalidArgument for an empty path, a directory, a missing parent directory, a bad
// sqlite_synchronous, or a file that is not a Folio database ("not a Folio volume");
// NotSupported for a newer schema version; IOError when the file cannot be opened.
Result<std::unique_ptr<MetaEngine>> OpenSqliteEngine(std::string_view path,
                                                     const MetaOpenOptions& options,
                                                     const SqliteTuning& tuning = {});

}  // namespace folio::meta
