// FileSystem::StatsJson: what `.stats` in the mount root shows (live JSON).
#include "cache/stats_json.h"
#include "fs/data_path.h"
#include "fs/file_system.h"
#include "fs/pack_writer.h"
#include "fs/session.h"
#include "fs/store/block_store.h"

namespace folio::fs {

namespace {

nlohmann::ordered_json LatencyJson(const HistogramSnapshot& h) {
  nlohmann::ordered_json j;
  j["count"] = h.count;
  j["mean_us"] = h.Mean() / 1000.0;
  j["p50_us"] = static_cast<double>(h.Percentile(0.5)) / 1000.0;
  j["p99_us"] = static_cast<double>(h.Percentile(0.99)) / 1000.0;
  j["max_us"] = static_cast<double>(h.max) / 1000.0;
  return j;
}

nlohmann::ordered_json StoreOpJson(const store::StoreOpStats& s) {
  nlohmann::ordered_json j;
  j["requests"] = s.requests;
  j["errors"] = s.errors;
  j["bytes"] = s.bytes;
  j["latency"] = LatencyJson(s.latency_ns);
  return j;
}

}  // namespace

nlohmann::ordered_json FileSystem::StatsJson() const {
  nlohmann::ordered_json j;
  j["volume"] = format_.name;
  j["uuid"] = format_.uuid;
  j["meta"] = meta_->url();
  j["store_url"] = store_->url();
  j["session"] = Raw(session_->id());
  j["block_bytes"] = format_.block_bytes;
  j["pack_below_bytes"] = format_.pack_below_bytes;
  j["policy"] = options_.policy.ToString();
  j["policy_xattr"] = kPolicyXattr;
  j["read_only"] = options_.read_only;

  const FsStats s = Stats();
  nlohmann::ordered_json files;
  files["open"] = s.open_files;
  files["cached"] = s.cached_inodes;
  files["closed_cached_max"] = options_.closed_files_cached;
  files["unsettled"] = s.unsettled_files;
  files["read_bytes"] = s.read_bytes;
  files["write_bytes"] = s.write_bytes;
  files["commits"] = s.commits;
  files["slices_committed"] = s.slices_committed;
  files["atime_files"] = s.atime_files;
  files["atime_commits"] = s.atime_commits;
  j["files"] = std::move(files);

  const meta::MetaStats ms = meta_->Stats();
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (const meta::MetaOpStats& op : ms.ops) {
    nlohmann::ordered_json e;
    e["count"] = op.count;
    e["errors"] = op.errors;
    e["retries"] = op.retries;
    e["latency"] = LatencyJson(op.latency_ns);
    ops[op.op] = std::move(e);
  }
  nlohmann::ordered_json metaj;
  metaj["ops"] = std::move(ops);
  metaj["commits"] = ms.commits;
  metaj["fsyncs"] = ms.fsyncs;
  metaj["reads_on_writer"] = ms.reads_on_writer;
  metaj["checkpoints"] = ms.checkpoints;
  metaj["wal_restarts"] = ms.wal_restarts;
  metaj["wal_frames"] = ms.wal_frames;
  metaj["round_trips"] = ms.round_trips;
  // The record cache (FsOptions::meta_cache): read transactions it answered alone are not in
  // "ops" above, which counts what the engine ran.
  nlohmann::ordered_json cachej;
  if (cached_meta_) {
    const meta::MetaCacheStats cs = cached_meta_->CacheStats();
    cachej["enabled"] = cs.enabled;
    cachej["reads"] = cs.reads;
    cachej["misses"] = cs.misses;
    cachej["fills"] = cs.fills;
    cachej["installs"] = cs.installs;
    cachej["erases"] = cs.erases;
    cachej["records"] = cs.records;
  } else {
    cachej["enabled"] = false;
  }
  metaj["cache"] = std::move(cachej);
  j["meta_ops"] = std::move(metaj);

  j["page_cache"] = cache::PageCacheStatsJson(cache_->Stats());

  const store::StoreStatsSnapshot st = store_->stats();
  nlohmann::ordered_json storej;
  storej["put"] = StoreOpJson(st.put);
  storej["get"] = StoreOpJson(st.get);
  storej["delete"] = StoreOpJson(st.del);
  storej["list"] = StoreOpJson(st.list);
  storej["sync"] = StoreOpJson(st.sync);
  storej["fsyncs"] = st.fsyncs;
  storej["stored_bytes_read"] = st.stored_bytes_read;
  storej["stored_bytes_written"] = st.stored_bytes_written;
  storej["direct_bytes_written"] = st.direct_bytes_written;
  storej["checksum_failures"] = st.checksum_failures;
  storej["healed"] = st.healed;
  j["store"] = std::move(storej);

  const store::PackWriterStats ps = data_->packs()->stats();
  nlohmann::ordered_json packing;
  packing["packed_files"] = s.packed_files;
  packing["packed_bytes"] = s.pack_bytes;
  packing["packs_written"] = ps.packs;
  packing["pack_bytes_written"] = ps.pack_bytes;
  packing["sealed_full"] = ps.sealed_full;
  packing["sealed_timer"] = ps.sealed_timer;
  packing["sealed_flush"] = ps.sealed_flush;
  packing["entries_rewritten"] = s.packs_rewritten;
  j["packing"] = std::move(packing);

  nlohmann::ordered_json comp;
  comp["chunks_compacted"] = s.chunks_compacted;
  comp["bytes_rewritten"] = s.compaction_bytes;
  comp["deferred"] = s.compactions_deferred;
  comp["bytes_kept"] = s.compaction_kept_bytes;
  comp["left_hot"] = s.compactions_hot;
  comp["objects_deleted"] = s.deletions_done;
  comp["inodes_freed"] = s.inodes_freed;
  j["compaction"] = std::move(comp);
  return j;
}

}  // namespace folio::fs
