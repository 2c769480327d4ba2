// `folio fs bench --meta URL ...`: Folio FS on every metadata engine and block store given, in
// one run (issue 11). For each combination the bench makes a volume of its own (a SQLite file
// in its temp directory, a Redis key prefix or a PostgreSQL schema of its own on the server,
// its own volume name in a RADOS pool), mounts it in this process (FileSystem::Mount, no FUSE:
// the figures are the file system core's and the engine's, as JuiceFS's per-op figures are its
// meta package's, pkg/meta/benchmarks_test.go), and measures, one thread:
//   per-op metadata latency (mean, median, p99) and ops/s of mkdir, create, rename, unlink,
//     lookup, getattr, slice commit (a 4 KiB write + fsync; the latency is the engine's
//     "write" transaction, the commit of the slice, as JuiceFS's Write is) and readdir of a
//     directory of 1000 files (with attributes, JuiceFS's Readdir plus=1);
//   small files per second (1-64 KiB, seeded sizes, create + write + close, then SyncAll);
//   1 MiB sequential write (fsync at the end) and read (after a remount: from the store).
// JuiceFS's published per-op figures (Redis appendfsync=always and PostgreSQL; their
// hardware) are shown beside, as a reference, not a same-run ratio. On a rados: store,
// `rados bench` (Ceph's own client tool) writes and reads 1 MiB objects on the same pool in the
// same run: the store's ceiling. Everything the bench stored is removed at the end, also on
// Ctrl-C and on errors.
//
// Thread safety: RunFsEngineBench is called once from main's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fs/file_system.h"

namespace folio::cli {

struct FsEngineBenchConfig {
  std::vector<std::string> metas;   // "sqlite", redis://HOST:PORT[/DB], postgres://...
  std::vector<std::string> stores;  // "dir" (in the temp dir) or rados:POOL?...; empty = dir
  std::string dir;                  // parent of the temp directory
  uint32_t ops = 1000;              // calls per metadata op (each also stops after 10 s)
  uint32_t small_files = 1000;
  uint64_t seq_bytes = 128ull << 20;
  int rados_seconds = 5;            // per `rados bench` mode
  uint64_t cache_bytes = 256ull << 20;
  uint64_t block_bytes = 4ull << 20;  // the volumes' block size (folio fs format --block-size)
  uint64_t readahead_bytes = fs::FsOptions{}.readahead_bytes;  // the mounts' (--readahead)
  bool json = false;
};

// Returns the exit code: 0, 1 runtime failure, 2 usage error, 130 interrupted.
int RunFsEngineBench(const FsEngineBenchConfig& c);

}  // namespace folio::cli
