// SpinLock: a test-and-test-and-set lock for very short critical sections (a per-thread folio
// cache: push or pop one block). Uncontended it costs one atomic exchange and one store, which
// is what keeps Alloc/Free of small orders at a few nanoseconds. Under contention it spins with
// a pause instruction and then yields, so a preempted holder does not burn the other core.
//
// LockOrder: a debug-build check that the arena's locks are taken in the documented order
// (registry -> thread cache -> buddy). Release builds compile it away.
//
// Thread safety: SpinLock is a lock; LockOrder keeps per-thread state only.
#pragma once

#include <atomic>
#include <thread>

#include "base/check.h"
#include "base/cpu_relax.h"

namespace folio::mem {

// The arena's lock levels, outermost first. A thread may take a lock only if it holds none of
// a higher level; several thread-cache locks at once only while holding the registry lock
// (Stats / CheckInvariants / drain-all iterate the registry).
enum class LockLevel : int { kRegistry = 0, kThreadCache = 1, kBuddy = 2 };

#ifndef NDEBUG
void LockOrderAcquire(LockLevel level);
void LockOrderRelease(LockLevel level);
#else
inline void LockOrderAcquire(LockLevel) {}
inline void LockOrderRelease(LockLevel) {}
#endif

class SpinLock {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void LockSlow() {
    int spins = 0;
    do {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          CpuRelax();
        } else {
          std::this_thread::yield();
        }
      }
    } while (locked_.exchange(true, std::memory_order_acquire));
  }

  std::atomic<bool> locked_{false};
};

// RAII: takes `mu` at `level` (checked in debug builds) and releases it at scope exit.
template <typename Mutex>
class [[nodiscard]] OrderedLock {
 public:
  OrderedLock(Mutex& mu, LockLevel level) : mu_(mu), level_(level) {
    LockOrderAcquire(level_);
    mu_.lock();
  }
  ~OrderedLock() {
    mu_.unlock();
    LockOrderRelease(level_);
  }
  OrderedLock(const OrderedLock&) = delete;
  OrderedLock& operator=(const OrderedLock&) = delete;

 private:
  Mutex& mu_;
  LockLevel level_;
};

}  // namespace folio::mem
