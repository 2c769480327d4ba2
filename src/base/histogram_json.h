// HistogramSnapshot as JSON (count, mean, p50, p99, max and the non-empty buckets), for the
// `.stats` files of the FS mount and the export.
#pragma once

#include <nlohmann/json.hpp>

#include "folio/histogram.h"

namespace folio {

nlohmann::ordered_json HistogramJson(const HistogramSnapshot& h);

}  // namespace folio
