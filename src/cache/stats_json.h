// PageCacheStats as JSON: the `page_cache` object of a Folio FS mount's `.stats` and the
// `cache` object of an export's, one function so both show every counter the cache keeps.
#pragma once

#include <nlohmann/json.hpp>

#include "folio/page_cache.h"

namespace folio::cache {

// Memory, residency and dirty bytes; readahead, eviction, throttling and writeback counters;
// compaction; and one entry per folio order (all kNumOrders of them, in order).
nlohmann::ordered_json PageCacheStatsJson(const PageCacheStats& s);

}  // namespace folio::cache
