// A SQLite VFS shim that writes each transaction's WAL frames with one write call.
//
// SQLite appends a commit to the WAL as frames, each a 24-byte header and a page, and writes
// every header and every page with its own call: a transaction that changes three pages costs
// six pwrite(2)s (13-17 us here, against 4-5 us for the same bytes in one; docs/fs.md). The
// shim wraps another VFS (the default one, or a named one such as the power-loss VFS of the
// tests) and, for WAL files only, gathers contiguous writes in memory and hands them to the
// wrapped VFS as one write:
//   - when the page of a commit frame (a header whose "database size after commit" field is
//     not zero) has been gathered: before xWrite returns, so SQLite publishes the commit in
//     the wal-index only after its frames are in the file, as without the shim;
//   - before any other call on the file (read, sync, truncate, size, file control, close), so
//     every call sees the file as SQLite wrote it;
//   - when a write is not contiguous with what is gathered, and past 64 KiB gathered (the
//     unix VFS writes at most 128 KiB - 1 bytes per call: longer writes come back short).
// Only appends are gathered: a write below the end of what was appended since the WAL last
// started over (SQLite rewriting a page or the checksums of earlier frames of the same
// transaction, after its commit frame) goes straight through, so nothing of a commit is
// still in the buffer when SQLite publishes it.
// An error of the gathered write is returned by the call that triggered it: the commit fails
// as if its last frame's write had failed. Database and journal files are not wrapped (the
// wrapped VFS's own file object serves them).
//
// Thread safety: registration is thread-safe; a file object is used by one connection at a
// time, as SQLite uses every file object.
#pragma once

#include <cstdint>
#include <string>

#include "folio/status.h"

namespace folio::meta {

// Registers (once per wrapped VFS) and returns the name of the gathering VFS over `base`
// (empty: the default VFS). The wrapped VFS must stay registered for the life of the process
// (the default one and PowerLossVfs::Get do): the shim keeps a pointer to it.
// Errors: InvalidArgument when no VFS is named `base`.
Result<std::string> WalGatherVfs(const std::string& base);

// Process-wide counts, for tests and stats.
struct WalGatherStats {
  uint64_t writes_in = 0;   // WAL writes SQLite made
  uint64_t writes_out = 0;  // writes the shim made to the wrapped VFS
};
WalGatherStats GetWalGatherStats();

}  // namespace folio::meta
