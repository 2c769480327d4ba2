#include "cache/counters.h"

namespace folio::cache {
namespace {

std::atomic<uint32_t> next_shard{0};
thread_local uint32_t tls_shard = ~0u;

}  // namespace

CacheCounters::HitShard& CacheCounters::Shard() {
  if (tls_shard == ~0u) [[unlikely]] {
    tls_shard = next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  }
  return shards_[tls_shard];
}

void CacheCounters::Snapshot(PageCacheStats* out) const {
  auto load = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  out->resident_bytes = 0;
  for (int o = 0; o < kNumOrders; ++o) {
    CacheOrderStats& s = out->orders[o];
    s.resident_folios = load(resident[o]);
    s.resident_bytes = s.resident_folios * OrderBytes(o);
    s.allocs = load(allocs[o]);
    s.requests = load(requests[o]);
    s.fallbacks = load(fallbacks[o]);
    s.compacted = load(compacted[o]);
    s.splits = load(splits[o]);
    s.collapses = load(collapses[o]);
    s.misses = load(misses[o]);
    s.evictions = load(evictions[o]);
    s.hits = 0;
    for (const HitShard& sh : shards_) s.hits += load(sh.hits[o]);
    out->resident_bytes += s.resident_bytes;
  }
  out->readahead_hit_pages = 0;
  for (const HitShard& sh : shards_) out->readahead_hit_pages += load(sh.readahead_hit_pages);
  out->readahead_windows = load(readahead_windows);
  out->readahead_async = load(readahead_async);
  out->evictions = 0;
  for (int o = 0; o < kNumOrders; ++o) out->evictions += out->orders[o].evictions;
  out->evicted_dirty = load(evicted_dirty);
  out->sparse_evictions = load(sparse_evictions);
  out->writeback_requests = load(writeback_requests);
  out->writeback_bytes = load(writeback_bytes);
  out->writeback_request_bytes = writeback_request_bytes.Snapshot();
  out->dirty_bytes = load(dirty_bytes);
  out->throttled_writes = load(throttled_writes);
  out->throttled_ns = load(throttled_ns);
  out->writeback_expired_passes = load(writeback_expired_passes);
  out->writeback_background_chunks = load(writeback_background_chunks);
  out->writeback_waits = load(writeback_waits);
  out->write_pages_not_read = load(write_pages_not_read);
  out->write_stream_folios = load(write_stream_folios);
  out->fill_read_requests = load(fill_read_requests);
  out->partial_read_fills = load(partial_read_fills);
  out->compact_attempts = load(compact_attempts);
  out->compact_successes = load(compact_successes);
  out->compact_blocks_scanned = load(compact_blocks_scanned);
  out->compact_migrated_folios = load(compact_migrated_folios);
  out->compact_migrated_bytes = load(compact_migrated_bytes);
  out->compact_evicted_folios = load(compact_evicted_folios);
  out->compact_evicted_bytes = load(compact_evicted_bytes);
  out->compact_background_attempts = load(compact_background_attempts);
  out->compact_background_blocks = load(compact_background_blocks);
  out->compact_background_reclaimed_bytes = load(compact_background_reclaimed_bytes);
}

}  // namespace folio::cache
