#include "cache/stats_json.h"

#include "base/histogram_json.h"

namespace folio::cache {

using Json = nlohmann::ordered_json;

Json PageCacheStatsJson(const PageCacheStats& s) {
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

}  // namespace folio::cache
