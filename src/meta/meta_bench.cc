// Group commit of the SQLite engine, measured: concurrent small write transactions (one
// PutInode and one AppendSlice each, as a write's slice commit does) at 1, 4 and 16 threads,
// with group commit (the default) and without (SqliteTuning::group_commit_max = 1: every
// transaction its own COMMIT and WAL fsync), side by side in one run, synchronous=FULL, on a
// database under $TMPDIR (put TMPDIR on the disk you care about: tmpfs fsyncs are free). The
// synchronous_normal rows are the same transactions with no fsync at all: SQLite's own cost.
//
// Counters: txn/s (items_per_second), commits_per_txn (physical commits / transactions).
// Run in Release: build/release/src/meta/meta_bench --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/check.h"
#include "meta/meta_engine.h"
#include "meta/sqlite_engine.h"

namespace folio::meta {
namespace {

struct Shared {
  std::string dir;
  std::unique_ptr<MetaEngine> engine;
};
Shared* g_shared = nullptr;

void Setup(size_t group_commit_max, const char* synchronous) {
  g_shared = new Shared;
  std::string tmpl = (std::filesystem::temp_directory_path() / "folio-meta-bench-XXXXXX").string();
  FOLIO_CHECK(mkdtemp(tmpl.data()) != nullptr);
  g_shared->dir = tmpl;
  SqliteTuning tuning;
  tuning.group_commit_max = group_commit_max;
  MetaOpenOptions options;
  options.sqlite_synchronous = synchronous;
  auto engine = OpenSqliteEngine(g_shared->dir + "/meta.db", options, tuning);
  FOLIO_CHECK(engine.ok());
  g_shared->engine = std::move(*engine);
  FOLIO_CHECK(g_shared->engine->Init(MetaEngine::InitMode::kCreate).ok());
}

void Teardown(benchmark::State& state) {
  const MetaStats stats = g_shared->engine->Stats();
  // Every thread runs the same number of iterations.
  const double txns = static_cast<double>(state.iterations()) * state.threads();
  state.counters["commits_per_txn"] = txns > 0 ? static_cast<double>(stats.commits - 1) / txns : 0;
  g_shared->engine.reset();
  std::filesystem::remove_all(g_shared->dir);
  delete g_shared;
  g_shared = nullptr;
}

void BM_WriteTxn(benchmark::State& state, size_t group_commit_max, const char* synchronous) {
  if (state.thread_index() == 0) Setup(group_commit_max, synchronous);
  const uint64_t base = 1000 + static_cast<uint64_t>(state.thread_index()) * 1'000'000;
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t ino = base + (i++ % 1000);
    Status s = g_shared->engine->Transact("write_slice", TxnMode::kWrite, [&](Txn& t) -> Status {
      Inode n;
      n.ino = InodeId{ino};
      n.size_bytes = i * 4096;
      n.mtime_ns = static_cast<int64_t>(i);
      FOLIO_RETURN_IF_ERROR(t.PutInode(n));
      Slice slice;
      slice.pos = static_cast<uint32_t>((i * 4096) % (kChunkBytes - 4096));
      slice.len = 4096;
      slice.id = SliceId{ino};
      slice.object_bytes = 4096;
      return t.PutChunk(InodeId{ino}, 0, {slice});
    });
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) Teardown(state);
}

BENCHMARK_CAPTURE(BM_WriteTxn, group_commit, 64, "full")->Threads(1)->Threads(4)->Threads(16)
    ->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_WriteTxn, no_group_commit, 1, "full")->Threads(1)->Threads(4)->Threads(16)
    ->UseRealTime()->MinTime(2.0);
// What a transaction costs with no fsync in it (`folio fs mount -o meta_sync=fsync`).
BENCHMARK_CAPTURE(BM_WriteTxn, synchronous_normal, 64, "normal")->Threads(1)->Threads(4)
    ->UseRealTime()->MinTime(2.0);

}  // namespace
}  // namespace folio::meta

BENCHMARK_MAIN();
