// The Redis metadata engine (`redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=NAME]`):
// hiredis, one key per record (or a hash / sorted-set index per directory, inode, session;
// docs/format/meta.md "Redis schema"), every key under the volume's prefix.
//
// How transactions run (the contract is meta_engine.h's):
//   - Each transaction borrows a connection from a pool. Every read WATCHes the keys it reads
//     in the same pipeline as the read (one round trip per read; a directory listing reads the
//     name index, then the entries' values in the entry hash: two). Writes are buffered in the
//     transaction (read-your-writes) and sent at commit as one pipeline
//     MULTI, writes..., SET <prefix>:tx:<connection> <seq>, EXEC: one round trip. EXEC
//     refused (a watched key changed) re-runs fn with jittered backoff, up to max_retries.
//   - A kRead transaction that made more than one read is validated by an empty MULTI / EXEC
//     (a snapshot without server snapshots); one read is atomic by itself. The validation
//     rides in the pipeline of the listing's unwatched MGET of its inodes when that is the
//     last read (RedisKv::MGetEach's validate; an attempt that reads on after it runs again,
//     validated at its end).
//   - Lost connections: a transaction whose connection fails before EXEC went out re-runs on a
//     new connection with backoff, for up to reconnect_timeout_ms. When the connection fails
//     after EXEC went out, the commit marker written inside the MULTI tells, once reconnected,
//     whether the server applied it (return OK) or not (re-run): never applied twice, never
//     half (MULTI / EXEC is all or nothing, also in the AOF).
//   - Durability is the server's: at open, a server whose maxmemory-policy may evict keys
//     (allkeys-*) is refused, and persistence off or appendfsync other than always is
//     reported through MetaOpenOptions::log (once per process and server).
//
// Thread safety: thread-safe (MetaEngine). The pool's mutex is taken alone.
#pragma once

#include <memory>
#include <string_view>

#include "meta/meta_engine.h"

namespace folio::meta {

// Opens the engine on a full redis:// URL. Errors: InvalidArgument for a malformed URL or a
// server whose maxmemory-policy can evict keys; IOError naming the URL when the server cannot
// be reached; NotSupported for a newer schema version.
Result<std::unique_ptr<MetaEngine>> OpenRedisEngine(std::string_view url,
                                                    const MetaOpenOptions& options);

}  // namespace folio::meta
