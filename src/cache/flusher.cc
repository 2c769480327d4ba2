// PageCacheImpl: the writeback policy, after the kernel's (mm/page-writeback.c, fs/fs-writeback.c)
// with Folio's names:
//
//   dirty bytes
//     ^
//     |  limit ------------------------------------  writers wait for writeback (dirty_ratio)
//     |                                              writers pause, longer the closer to limit
//     |  freerun = (background + limit) / 2 -------  (balance_dirty_pages' "freerun" ceiling)
//     |                                              no pause; the flusher writes back
//     |  background ------------------------------  (dirty_background_ratio)
//     |                                              nothing happens until data expires
//     +------------------------------------------->
//
// The flusher (writeback_threads of them) wakes every dirty_writeback_ms, and at once when
// dirty bytes cross the background threshold. Each round it writes back (1) every address
// space whose oldest dirty data is older than dirty_expire_ms (the kernel's per-inode
// dirtied_when: the whole address space, then its clock restarts if it was written again
// meanwhile), and (2) while dirty bytes are above the background threshold, chunks of the
// address spaces that have been dirty longest, each continuing where its previous chunk ended,
// until dirty bytes are below the threshold. Nothing else: data rewritten in the cache before
// it expires is written once, not once per interval.
//
// A writer pays after its write for the bytes it made dirty (pages that were clean; a rewrite
// of dirty pages costs nothing, as in the kernel, which throttles by pages newly dirtied): it
// pauses above freerun for bytes / bandwidth x pos / (1 - pos), pos being how far
// dirty bytes are between freerun and the limit and bandwidth the flusher's measured write
// rate: at pos 1/2 one writer dirties no faster than writeback cleans, further up it is slowed
// more, so dirty bytes settle between freerun and the limit instead of hitting a wall. Pauses
// are owed per thread and slept in slices of at least kMinPause (a sleep costs a syscall).
//
// Thread safety: every method is thread-safe.
#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "base/may_block.h"
#include "base/units.h"
#include "cache/address_space_impl.h"
#include "cache/cache_impl.h"

namespace folio::cache {
namespace {

constexpr uint64_t kMinPauseNs = 1'000'000;      // sleep owed pauses in slices of >= 1 ms
constexpr uint64_t kMaxPauseNs = 200'000'000;    // the kernel's MAX_PAUSE
constexpr uint64_t kInitialBandwidth = 100ull << 20;  // bytes/s until writeback measured one
constexpr uint64_t kBackgroundChunkBytes = 4ull << 20;

thread_local uint64_t owed_pause_ns = 0;
thread_local uint64_t dirtied_bytes = 0;

}  // namespace

void PageCacheImpl::SetDirtyThresholds(uint64_t capacity) {
  const DirtyThresholds t = EffectiveDirtyThresholds(options_, capacity);
  dirty_background_bytes_ = t.background_bytes;
  dirty_limit_bytes_ = t.limit_bytes;
  dirty_freerun_bytes_ = dirty_background_bytes_ + (dirty_limit_bytes_ - dirty_background_bytes_) / 2;
  wb_bandwidth_.store(kInitialBandwidth, std::memory_order_relaxed);
}

uint64_t PageCacheImpl::ThreadDirtiedBytes() { return dirtied_bytes; }

void PageCacheImpl::AccountDirty(int64_t delta_bytes) {
  if (delta_bytes > 0) dirtied_bytes += static_cast<uint64_t>(delta_bytes);
  const uint64_t now = counters_.dirty_bytes.fetch_add(static_cast<uint64_t>(delta_bytes),
                                                       std::memory_order_relaxed) +
                       static_cast<uint64_t>(delta_bytes);
  if (delta_bytes > 0 && now > dirty_background_bytes_ && !wb_threads_.empty() &&
      !wb_kick_pending_.exchange(true, std::memory_order_relaxed)) {
    KickWriteback();
  }
}

void PageCacheImpl::KickWriteback() {
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    wb_kicked_ = true;
  }
  bg_cv_.notify_all();
}

void PageCacheImpl::NotifyWritebackProgress() {
  { std::lock_guard<std::mutex> lock(throttle_mu_); }
  throttle_cv_.notify_all();
}

void PageCacheImpl::NoteWriteback(uint64_t bytes, uint64_t ns) {
  if (bytes < (256u << 10) || ns == 0) return;  // too small to say anything about the device
  const uint64_t rate = static_cast<uint64_t>(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns));
  const uint64_t old = wb_bandwidth_.load(std::memory_order_relaxed);
  wb_bandwidth_.store(old - old / 4 + rate / 4, std::memory_order_relaxed);
}

void PageCacheImpl::ThrottleWriter(AddressSpaceImpl* as, uint64_t bytes) {
  const uint64_t dirty = counters_.dirty_bytes.load(std::memory_order_relaxed);
  if (dirty <= dirty_freerun_bytes_) [[likely]] return;
  if (wb_threads_.empty()) {
    // No flusher: above the limit the writer writes back itself, its own file first.
    if (dirty <= dirty_limit_bytes_) return;
    CacheCounters::Add(counters_.throttled_writes);
    (void)as->WritebackRange(0, as->device_pages());
    if (counters_.dirty_bytes.load(std::memory_order_relaxed) > dirty_limit_bytes_) {
      (void)SyncAll();
    }
    return;
  }
  if (!wb_kick_pending_.exchange(true, std::memory_order_relaxed)) KickWriteback();
  const uint64_t t0 = MonotonicNowNs();
  if (dirty >= dirty_limit_bytes_) {
    CacheCounters::Add(counters_.throttled_writes);
    MayBlock();
    auto over = [&] {
      return counters_.dirty_bytes.load(std::memory_order_relaxed) >= dirty_limit_bytes_;
    };
    while (over()) {
      KickWriteback();
      std::unique_lock<std::mutex> lock(throttle_mu_);
      throttle_cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return !over(); });
    }
    CacheCounters::Add(counters_.throttled_ns, MonotonicNowNs() - t0);
    return;
  }
  // Between freerun and the limit: a pause in proportion (see the top of this file).
  const double pos = static_cast<double>(dirty - dirty_freerun_bytes_) /
                     static_cast<double>(dirty_limit_bytes_ - dirty_freerun_bytes_);
  const double bw = static_cast<double>(std::max<uint64_t>(1 << 20, wb_bandwidth_.load(std::memory_order_relaxed)));
  owed_pause_ns += static_cast<uint64_t>(
      std::min(static_cast<double>(kMaxPauseNs), static_cast<double>(bytes) * 1e9 / bw * pos / (1 - pos)));
  if (owed_pause_ns < kMinPauseNs) return;
  const uint64_t pause = std::min(owed_pause_ns, kMaxPauseNs);
  owed_pause_ns = 0;
  CacheCounters::Add(counters_.throttled_writes);
  MayBlock();
  std::this_thread::sleep_for(std::chrono::nanoseconds(pause));
  CacheCounters::Add(counters_.throttled_ns, MonotonicNowNs() - t0);
}

void PageCacheImpl::WritebackThread() {
  const auto interval =
      std::chrono::milliseconds(std::max<uint64_t>(1, options_.dirty_writeback_ms));
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (!stop_) {
    bg_cv_.wait_for(lock, interval, [&] { return stop_ || wb_kicked_; });
    if (stop_) break;
    wb_kicked_ = false;
    wb_kick_pending_.store(false, std::memory_order_relaxed);
    lock.unlock();
    FlushRound();
    NotifyWritebackProgress();
    lock.lock();
  }
}

void PageCacheImpl::FlushRound() {
  std::vector<AddressSpaceImpl*> spaces = PinAll();
  const uint64_t now = MonotonicNowNs();
  const uint64_t expire_ns = options_.dirty_expire_ms * 1'000'000;
  // (1) Expired data, whole address spaces.
  for (AddressSpaceImpl* as : spaces) {
    const uint64_t since = as->dirty_since_ns();
    if (since != 0 && now - std::min(now, since) >= expire_ns) {
      CacheCounters::Add(counters_.writeback_expired_passes);
      (void)as->WritebackExpired();
    }
  }
  // (2) Above the background threshold: the longest-dirty address spaces, chunk by chunk.
  auto dirty = [&] { return counters_.dirty_bytes.load(std::memory_order_relaxed); };
  // Bounded (writers may dirty as fast as we clean): the next round goes on.
  uint64_t round_bytes = 0;
  for (int stalled = 0; dirty() > dirty_background_bytes_ && stalled < 2 &&
                        round_bytes < memory_bytes() && !stopping_.load(std::memory_order_relaxed);) {
    std::vector<std::pair<uint64_t, AddressSpaceImpl*>> order;
    for (AddressSpaceImpl* as : spaces) {
      const uint64_t since = as->dirty_since_ns();
      if (since != 0) order.push_back({since, as});
    }
    if (order.empty()) break;
    std::sort(order.begin(), order.end());
    uint64_t written = 0;
    for (const auto& [since, as] : order) {
      if (dirty() <= dirty_background_bytes_) break;
      const uint64_t want = std::max(kBackgroundChunkBytes, dirty() - dirty_background_bytes_);
      CacheCounters::Add(counters_.writeback_background_chunks);
      written += as->WritebackSome(want);
      NotifyWritebackProgress();
    }
    stalled = written == 0 ? stalled + 1 : 0;
    round_bytes += written;
  }
  for (AddressSpaceImpl* as : spaces) as->Unpin();
}

}  // namespace folio::cache

namespace folio {

DirtyThresholds EffectiveDirtyThresholds(const PageCacheOptions& o, uint64_t capacity_bytes) {
  DirtyThresholds t;
  t.background_bytes = o.dirty_background_bytes != 0
                           ? o.dirty_background_bytes
                           : capacity_bytes / 100 * o.dirty_background_ratio;
  t.limit_bytes = o.dirty_bytes != 0 ? o.dirty_bytes : capacity_bytes / 100 * o.dirty_ratio;
  return t;
}

Status CheckWritebackOptions(const PageCacheOptions& o) {
  auto ratio_ok = [](uint32_t p) { return p >= 1 && p <= 100; };
  if (!ratio_ok(o.dirty_background_ratio) || !ratio_ok(o.dirty_ratio)) {
    return Status::InvalidArgument(fmt::format(
        "page cache dirty_background_ratio {} and dirty_ratio {}: each must be 1..100 (percent "
        "of the cache)",
        o.dirty_background_ratio, o.dirty_ratio));
  }
  if (o.dirty_expire_ms == 0 || o.dirty_writeback_ms == 0) {
    return Status::InvalidArgument(fmt::format(
        "page cache dirty_expire_ms {} and dirty_writeback_ms {}: each must be at least 1",
        o.dirty_expire_ms, o.dirty_writeback_ms));
  }
  const auto [background, limit] = EffectiveDirtyThresholds(o, o.memory_bytes);
  // A limit above the memory is allowed: writers never wait, reclaim writes back.
  if (background >= limit) {
    return Status::InvalidArgument(fmt::format(
        "page cache dirty thresholds: background {} is not below the limit {}; lower the "
        "background threshold or raise the limit",
        FormatSize(background), FormatSize(limit)));
  }
  return Status::OK();
}

}  // namespace folio
