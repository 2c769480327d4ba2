// StripeLockTable: exclusive locks on column ranges of stripes. A stripe operation (a write,
// a reconstruction, a sync step) holds [col_begin, col_end) of its stripe on every member while
// it reads, computes and writes, so that parity is never computed from a half-written stripe.
// Operations on disjoint columns of one stripe run in parallel.
//
// Locks are never waited for while held: TryLock fails and the caller defers its operation,
// retrying after an Unlock (WaitForUnlock sleeps until one happens). An operation holds one
// range at a time, so deferral cannot deadlock.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace folio::raid {

class StripeLockTable {
 public:
  // Returns true and holds [col_begin, col_end) of `stripe` if no held range overlaps it.
  bool TryLock(uint64_t stripe, uint32_t col_begin, uint32_t col_end);
  // REQUIRES: the range is held (by the caller's operation). notify: wake waiters and bump
  // the generation (false when the lock was held only for a moment and nothing changed, so
  // that deferred operations do not spin on each other's failed attempts).
  void Unlock(uint64_t stripe, uint32_t col_begin, uint32_t col_end, bool notify = true);
  // Sleeps until an Unlock after `generation` happened, or `max` passed.
  void WaitForUnlock(uint64_t generation, std::chrono::microseconds max);
  uint64_t generation() const;
  size_t held() const;

 private:
  struct Range {
    uint32_t begin;
    uint32_t end;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, std::vector<Range>> held_;  // GUARDED_BY(mu_)
  uint64_t generation_ = 0;                                // GUARDED_BY(mu_)
  size_t count_ = 0;                                       // GUARDED_BY(mu_)
};

}  // namespace folio::raid
