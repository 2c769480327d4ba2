// ExportFs::StatsJson: what `cat MOUNT/.stats` shows. Counters are named by what they count.
#include <unistd.h>

#include "base/clock.h"
#include "base/histogram_json.h"
#include "cache/stats_json.h"
#include "folio/arena.h"
#include "fuse/export_fs.h"

namespace folio::fuse {

namespace {

using Json = nlohmann::ordered_json;

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
  j["cache"] = cache::PageCacheStatsJson(cache_->Stats());
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
