// The `rados:POOL[?conf=PATH&user=NAME&timeout=SECONDS]` block store: one RADOS object per
// block or pack in a Ceph pool, through librados's asynchronous operations, many in flight
// (StoreOptions::queue_depth_max). A put's encoding is sent without a copy (the C++ API; the C
// API copies every put into a fresh allocation): the caller's own encoding (a file's block
// buffer, StoreRequest::encoding, with its data_owner) after the CRCs are written into it, or
// else a reused buffer it was encoded into. A buffer (or a caller's, through its owner) whose
// operation failed without an OSD's answer (a timeout) is held until the cluster handle is
// shut down, and once 16 are held so, puts copy again.
//
//   <prefix>/store.json                              what this is (format, version, prefix)
//   <prefix>/chunks/<id/10^6>/<id/10^3>/<id>_<index>_<bytes>   (names: object_key.h)
//   <prefix>/packs/<id/10^6>/<id/10^3>/<id>_<bytes>
//
// Each object holds its sector encoding (sector_codec.h, seed salt 0), so every get, ranged or
// not, reads the covering sectors and verifies their CRC32C; a mismatch or a short object is
// Corruption naming the object (counted, logged). Object names carry the volume prefix, so
// volumes share a pool. A put is rados write_full (atomic per object, acknowledged once on
// every replica); delete is remove.
//
// Options in the URL: conf (the cluster's ceph.conf, default /etc/ceph/ceph.conf; its keyring
// setting names the key), user (the cephx id, default admin), timeout (seconds an operation
// waits for an OSD before failing with IOError, default 120; while an OSD restarts within it,
// librados resends and the operation completes).
//
// Completions run on librados's finisher thread, outside store locks. A Submit() from inside a
// `done` callback never waits for queue room. List walks the pool's object names (those under
// the prefix) on a thread of its own.
//
// Thread safety: thread-safe (BlockStore's contract).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "fs/store/block_store.h"
#include "fs/store/dir_store.h"

namespace folio::store {

struct RadosUrl {
  std::string pool;
  std::string conf = "/etc/ceph/ceph.conf";
  std::string user = "admin";
  int timeout_s = 120;
};

// Errors: InvalidArgument naming the URL and the accepted form.
Result<RadosUrl> ParseRadosUrl(std::string_view url);

// Writes <prefix>/store.json into the pool. Errors: Exists when the volume's store is there
// (force: its objects are removed first); IOError when the cluster cannot be reached; NotFound
// for a missing pool.
Status FormatRadosStore(const RadosUrl& url, std::string_view prefix, const FormatOptions& format);

// Opens the store of options.prefix. Errors: NotFound when the pool or the volume's store.json
// is missing (naming them), IOError when the cluster cannot be reached, Corruption or
// NotSupported for a foreign or newer store.json.
Result<std::unique_ptr<BlockStore>> OpenRadosStore(const RadosUrl& url,
                                                   const StoreOptions& options);

// Ceph's own client tool on the URL's pool (rados_url.cc; needs the `rados` command, not
// librados): runs `rados -c CONF --id USER -p POOL ARGS`, returns its exit status and puts its
// output (stdout and stderr) in *out.
int RunRadosCommand(const RadosUrl& url, std::string_view args, std::string* out);

// One `rados bench` run: its bandwidth in MiB/s (rados bench's "MB" are MiB), its own
// "Total time run" in seconds, and the CPU time (user + system) the command used, from this
// process's RUSAGE_CHILDREN around it (the tool's start and connection included; nothing else
// of this process may run children meanwhile).
struct RadosBenchRun {
  double mib_s = 0;
  double seconds = 0;
  double cpu_s = 0;
  // CPU seconds per GiB moved (0 when nothing moved).
  double CpuSPerGiB() const;
};

// `rados bench` for `seconds` with `depth` operations in flight: mode "write" (objects of
// object_bytes, at most max_objects of them, left in the pool for a later "seq" of the same
// run name) or "seq" (reads them back whole). Errors: IOError naming the command, with its
// last output line, when it printed no bandwidth (no `rados` command, the cluster down, no
// objects for seq).
Result<RadosBenchRun> RunRadosBench(const RadosUrl& url, std::string_view mode, int seconds,
                                    uint32_t depth, uint64_t max_objects, std::string_view run,
                                    uint64_t object_bytes = 1u << 20);

}  // namespace folio::store
