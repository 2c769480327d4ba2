// ExportFs::StatsJson: what `cat MOUNT/.stats` shows. Counters are named by what they count.
#include <unistd.h>

#include "base/clock.h"
#include "folio/arena.h"
#include "fuse/export_fs.h"

namespace folio::fuse {

namespace {

using Json = nlohmann::ordered_json;

Json HistogramJson(const HistogramSnapshot& h) {
  Json j;
  j["count"] = h.count;
  j["mean"] = h.Mean();
  j["p50"] = h.count ? h.Percentile(0.5) : 0;
  j["p99"] = h.count ? h.Percentile(0.99) : 0;
  j["max"] = h.max;
  Json buckets = Json::array();
  for (const HistogramSnapshot::Bucket& b : h.NonEmpty()) {
    buckets.push_back(Json{{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}});
  }
  j["buckets"] = std::move(buckets);
  return j;
}

Json CacheJson(const PageCacheStats& s) {
  Json j;
  j["memory_bytes"] = s.memory_bytes;
  j["resident_bytes"] = s.resident_bytes;
  j["dirty_bytes"] = s.dirty_bytes;
  j["readahead_windows"] = s.readahead_windows;
  j["readahead_async"] = s.readahead_async;
  j["readahead_hit_pages"] = s.readahead_hit_pages;
  j["evictions"] = s.evictions;
  j["evicted_dirty"] = s.evicted_dirty;
  j["sparse_evictions"] = s.sparse_evictions;
  j["throttled_writes"] = s.throttled_writes;
  j["writeback_requests"] = s.writeback_requests;
  j["writeback_bytes"] = s.writeback_bytes;
  j["writeback_request_bytes"] = HistogramJson(s.writeback_request_bytes);
  j["compaction"] = Json{{"attempts", s.compact_attempts},
                         {"successes", s.compact_successes},
                         {"blocks_scanned", s.compact_blocks_scanned},
                         {"migrated_folios", s.compact_migrated_folios},
                         {"migrated_bytes", s.compact_migrated_bytes},
                         {"evicted_folios", s.compact_evicted_folios},
                         {"evicted_bytes", s.compact_evicted_bytes},
                         {"background_attempts", s.compact_background_attempts},
                         {"background_blocks", s.compact_background_blocks},
                         {"background_reclaimed_bytes", s.compact_background_reclaimed_bytes}};
  Json orders = Json::array();
  for (int o = 0; o < kNumOrders; ++o) {
    const CacheOrderStats& c = s.orders[o];
    orders.push_back(Json{{"order", o},
                          {"folio_bytes", uint64_t{4096} << o},
                          {"resident_folios", c.resident_folios},
                          {"resident_bytes", c.resident_bytes},
                          {"requests", c.requests},
                          {"allocs", c.allocs},
                          {"fallbacks", c.fallbacks},
                          {"compacted", c.compacted},
                          {"splits", c.splits},
                          {"collapses", c.collapses},
                          {"hits", c.hits},
                          {"misses", c.misses},
                          {"evictions", c.evictions}});
  }
  j["orders"] = std::move(orders);
  return j;
}

Json DeviceJson(const BlockDevice& d) {
  const DeviceStatsSnapshot s = d.stats();
  Json j;
  j["name"] = d.name();
  j["size_bytes"] = d.size_bytes();
  j["logical_block_bytes"] = d.logical_block_bytes();
  j["read_requests"] = s.read_requests;
  j["read_bytes"] = s.read_bytes;
  j["write_requests"] = s.write_requests;
  j["write_bytes"] = s.write_bytes;
  j["read_merges"] = s.read_merges;
  j["write_merges"] = s.write_merges;
  j["flushes"] = s.flushes;
  j["trims"] = s.trims;
  j["errors"] = s.errors;
  j["read_request_bytes"] = HistogramJson(s.read_request_bytes);
  j["write_request_bytes"] = HistogramJson(s.write_request_bytes);
  j["latency_ns"] = HistogramJson(s.latency_ns);
  return j;
}

Json RequestsJson(const RequestStatsSnapshot& s) {
  Json requests = Json::object();
  Json errors = Json::object();
  for (size_t i = 0; i < kNumFuseOps; ++i) {
    const std::string name(FuseOpName(static_cast<FuseOp>(i)));
    if (s.requests[i] != 0) requests[name] = s.requests[i];
    if (s.errors[i] != 0) errors[name] = s.errors[i];
  }
  Json j;
  j["requests"] = std::move(requests);
  j["errors"] = std::move(errors);
  j["read_bytes"] = s.read_bytes;
  j["write_bytes"] = s.write_bytes;
  j["read_request_bytes"] = HistogramJson(s.read_request_bytes);
  j["write_request_bytes"] = HistogramJson(s.write_request_bytes);
  j["read_latency_ns"] = HistogramJson(s.read_latency_ns);
  j["write_latency_ns"] = HistogramJson(s.write_latency_ns);
  j["fsync_latency_ns"] = HistogramJson(s.fsync_latency_ns);
  return j;
}

}  // namespace

nlohmann::ordered_json ExportFs::StatsJson() const {
  const uint64_t now_ns = MonotonicNowNs();
  Json j;
  j["pid"] = getpid();
  j["mountpoint"] = options_.mountpoint;
  j["uptime_s"] = static_cast<double>(now_ns - start_ns_) / 1e9;
  j["policy"] = cache_->options().policy.ToString();
  j["direct_io"] = !options_.kernel_cache;
  Json volumes = Json::array();
  for (const auto& node : volumes_) {
    const ExportVolume& v = node->volume;
    Json vj;
    vj["name"] = v.name;
    vj["device_spec"] = v.device_spec;
    vj["size_bytes"] = v.mapping->size();
    vj["policy"] = v.mapping->policy().ToString();
    vj["open_handles"] = node->open_handles.load(std::memory_order_relaxed);
    const WritebackErrorState we = v.mapping->writeback_errors();
    vj["writeback_errors"] = Json{{"errors", we.errors},
                                  {"unwritten_bytes", we.unwritten_bytes},
                                  {"latest", we.latest.ok() ? "" : we.latest.ToString()}};
    vj["device"] = DeviceJson(*v.mapping->device());
    if (v.raid_stats) vj["raid"] = v.raid_stats();
    volumes.push_back(std::move(vj));
  }
  j["volumes"] = std::move(volumes);
  j["cache"] = CacheJson(cache_->Stats());
  if (options_.control) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    j["control"] = Json{{"commands", control_commands_},
                        {"last", control_last_},
                        {"last_result", control_last_result_}};
  }
  const RequestStats* rs = request_stats_.load();
  if (rs != nullptr) j["fuse"] = RequestsJson(rs->Snapshot());
  return j;
}

}  // namespace folio::fuse
