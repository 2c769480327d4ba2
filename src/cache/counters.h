// CacheCounters: the page cache's statistics, as atomics. Counters bumped on the read hit path
// (hits per order, readahead hit pages) are sharded per thread so readers on different cores
// do not bounce one cache line; Snapshot() sums the shards.
//
// Thread safety: every method is thread-safe (relaxed atomics; a snapshot sees each counter at
// some recent value).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/cache_line.h"
#include "folio/arena.h"
#include "folio/histogram.h"
#include "folio/page_cache.h"

namespace folio::cache {

class CacheCounters {
 public:
  using Counter = std::atomic<uint64_t>;

  void Hit(int order) { Shard().hits[order].fetch_add(1, std::memory_order_relaxed); }
  void ReadaheadHitPages(uint64_t n) {
    Shard().readahead_hit_pages.fetch_add(n, std::memory_order_relaxed);
  }
  static void Add(Counter& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
  static void Sub(Counter& c, uint64_t n = 1) { c.fetch_sub(n, std::memory_order_relaxed); }

  // Per order.
  Counter resident[kNumOrders] = {};
  Counter allocs[kNumOrders] = {};
  Counter requests[kNumOrders] = {};
  Counter fallbacks[kNumOrders] = {};
  Counter compacted[kNumOrders] = {};
  Counter splits[kNumOrders] = {};
  Counter collapses[kNumOrders] = {};
  Counter misses[kNumOrders] = {};
  Counter evictions[kNumOrders] = {};

  Counter readahead_windows{0};
  Counter readahead_async{0};
  Counter evicted_dirty{0};
  Counter sparse_evictions{0};
  Counter writeback_requests{0};
  Counter writeback_bytes{0};
  Counter throttled_writes{0};
  Counter throttled_ns{0};
  Counter writeback_expired_passes{0};
  Counter writeback_background_chunks{0};
  Counter writeback_waits{0};
  Counter write_pages_not_read{0};
  Counter write_stream_folios{0};
  Counter fill_read_requests{0};
  Counter partial_read_fills{0};
  Counter dirty_bytes{0};
  Counter compact_attempts{0};
  Counter compact_successes{0};
  Counter compact_blocks_scanned{0};
  Counter compact_migrated_folios{0};
  Counter compact_migrated_bytes{0};
  Counter compact_evicted_folios{0};
  Counter compact_evicted_bytes{0};
  Counter compact_background_attempts{0};
  Counter compact_background_blocks{0};
  Counter compact_background_reclaimed_bytes{0};
  Histogram writeback_request_bytes;

  // Fills everything but memory_bytes.
  void Snapshot(PageCacheStats* out) const;

 private:
  static constexpr int kShards = 16;
  struct alignas(kFalseSharingBytes) HitShard {
    Counter hits[kNumOrders] = {};
    Counter readahead_hit_pages{0};
  };
  HitShard& Shard();

  HitShard shards_[kShards];
};

}  // namespace folio::cache
