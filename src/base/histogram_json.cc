#include "base/histogram_json.h"

namespace folio {

nlohmann::ordered_json HistogramJson(const HistogramSnapshot& h) {
  nlohmann::ordered_json j;
  j["count"] = h.count;
  j["mean"] = h.Mean();
  j["p50"] = h.count ? h.Percentile(0.5) : 0;
  j["p99"] = h.count ? h.Percentile(0.99) : 0;
  j["max"] = h.max;
  nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
  for (const HistogramSnapshot::Bucket& b : h.NonEmpty()) {
    buckets.push_back(nlohmann::ordered_json{{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}});
  }
  j["buckets"] = std::move(buckets);
  return j;
}

}  // namespace folio
