#include "cache/folio_sync.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/cache_line.h"
#include "base/copy.h"
#include "base/cpu_relax.h"
#include "base/may_block.h"
#include "cache/lock_rank.h"

namespace folio::cache {
namespace {

struct alignas(kFalseSharingBytes) WaitBucket {
  std::mutex mu;
  std::condition_variable cv;
};

constexpr size_t kWaitBuckets = 256;
WaitBucket wait_table[kWaitBuckets];

WaitBucket& BucketOf(const Folio* f) {
  return wait_table[(reinterpret_cast<uintptr_t>(f) / sizeof(Folio)) % kWaitBuckets];
}

std::atomic_ref<uint64_t> Seq(Folio* f) { return std::atomic_ref<uint64_t>(f->private_data); }

#ifdef FOLIO_TSAN
// TSan has no fences: byte-wise atomic copies (acquire loads, release stores) take their place,
// so a reader racing with a writer is a defined race that the sequence check resolves.
void RacyCopy(char* dst, const char* src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    char c = __atomic_load_n(src + i, __ATOMIC_ACQUIRE);
    __atomic_store_n(dst + i, c, __ATOMIC_RELEASE);
  }
}
void RacyCopyIn(char* dst, const char* src, size_t n) { RacyCopy(dst, src, n); }
void RacyCopyOut(char* dst, const char* src, size_t n) { RacyCopy(dst, src, n); }
void RacyZero(char* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) __atomic_store_n(dst + i, char{0}, __ATOMIC_RELEASE);
}
inline void SeqFence(std::memory_order) {}
#else
// The dispatched copy kernels (base/copy.h, FOLIO_COPY); each completes like memcpy, so the
// fences and the sequence's release store order it as they order memcpy.
void RacyCopyIn(char* dst, const char* src, size_t n) { FolioCopyIn(dst, src, n); }
void RacyCopyOut(char* dst, const char* src, size_t n) { FolioCopyOut(dst, src, n); }
void RacyZero(char* dst, size_t n) { std::memset(dst, 0, n); }
inline void SeqFence(std::memory_order order) { std::atomic_thread_fence(order); }
#endif

}  // namespace

void Backoff(int attempt) {
  if (attempt < 32) {
    CpuRelax();
  } else if (attempt < 256) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void ClearFlagsAndWake(Folio* f, uint32_t bits) {
  uint32_t old = f->flags.fetch_and(~(bits | kFolioWaiters), std::memory_order_acq_rel);
  if (old & kFolioWaiters) {
    WaitBucket& b = BucketOf(f);
    std::lock_guard<std::mutex> lock(b.mu);
    b.cv.notify_all();
  }
}

void WaitFolioClear(Folio* f, uint32_t bits) {
  RankCheckBlock(LockRank::kFolio);
  for (int i = 0; i < 64; ++i) {
    if ((f->flags.load(std::memory_order_acquire) & bits) == 0) return;
    CpuRelax();
  }
  WaitBucket& b = BucketOf(f);
  std::unique_lock<std::mutex> lock(b.mu);
  bool hinted = false;
  for (;;) {
    // Announcing and testing in one RMW on flags orders us against the waker's clearing RMW:
    // either we see the bits clear, or the waker sees kFolioWaiters and notifies under b.mu.
    uint32_t old = f->flags.fetch_or(kFolioWaiters, std::memory_order_acq_rel);
    if ((old & bits) == 0) return;
    if (!hinted) {
      // A real wait for I/O follows. The hint runs without the bucket lock (the hook may start
      // a thread, and wakers of every folio of this bucket take the lock); then test again.
      hinted = true;
      lock.unlock();
      MayBlock();
      lock.lock();
      continue;
    }
    // The timeout only bounds the cost of a bug; every clear of a waited bit wakes.
    b.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void CopyFromFolio(Folio* f, const char* src, char* dst, size_t n) {
  std::atomic_ref<uint64_t> seq = Seq(f);
  for (int attempt = 0;; ++attempt) {
    uint64_t s1 = seq.load(std::memory_order_acquire);
    if (s1 & 1) {
      Backoff(attempt);
      continue;
    }
    RacyCopyOut(dst, src, n);
    SeqFence(std::memory_order_acquire);
    if (seq.load(std::memory_order_relaxed) == s1) return;
  }
}

void CopyIntoFolio(Folio* f, char* dst, const char* src, size_t n) {
  std::atomic_ref<uint64_t> seq = Seq(f);
  uint64_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);
  SeqFence(std::memory_order_release);
  if (src != nullptr) {
    RacyCopyIn(dst, src, n);
  } else {
    RacyZero(dst, n);
  }
  seq.store(s + 2, std::memory_order_release);
}

}  // namespace folio::cache
