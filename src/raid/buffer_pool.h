// StripeBufferPool: the memory of the stripe cache. Buffers are powers of two from 4 KiB to
// 4 MiB, 4 KiB aligned, taken from the FolioArena when one is given (folios of orders 0..9;
// larger or unavailable sizes fall back to the heap, counted) or from the heap. Freed buffers
// stay on per-size free lists for reuse, so steady-state I/O does not allocate. Everything held
// (in use + free lists) stays within capacity_bytes: an allocation that does not fit even after
// releasing free buffers of other sizes fails, and the caller waits for buffers to come back.
//
// Thread safety: all methods are thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/aligned_buffer.h"

namespace folio {
class FolioArena;
}

namespace folio::raid {

class StripeBufferPool {
 public:
  static constexpr int kMinShift = 12;
  static constexpr int kMaxShift = 22;

  StripeBufferPool(uint64_t capacity_bytes, FolioArena* arena);
  ~StripeBufferPool();
  StripeBufferPool(const StripeBufferPool&) = delete;
  StripeBufferPool& operator=(const StripeBufferPool&) = delete;

  // The size class of `bytes`: the power of two >= max(bytes, 4 KiB).
  static uint64_t ClassBytes(uint64_t bytes);

  // Allocates `count` buffers of ClassBytes(bytes) each, all or none. Returns false when they
  // do not fit in the capacity now.
  // REQUIRES: bytes <= 4 MiB.
  bool TryAlloc(uint64_t bytes, uint32_t count, char** out);
  // Returns buffers of TryAlloc(bytes, ...).
  void Free(uint64_t bytes, uint32_t count, char* const* bufs);

  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t in_use_bytes() const;
  uint64_t held_bytes() const;
  uint64_t heap_fallbacks() const;
  bool has_arena() const { return arena_ != nullptr; }

 private:
  char* AllocFresh(int shift);       // REQUIRES: mu_ held
  void ReleaseOne(int shift, char* p);  // returns memory to arena / heap; REQUIRES: mu_ held
  bool MakeRoom(uint64_t need_bytes);   // REQUIRES: mu_ held

  const uint64_t capacity_bytes_;
  FolioArena* const arena_;
  mutable std::mutex mu_;
  std::vector<char*> free_[kMaxShift + 1];  // GUARDED_BY(mu_)
  uint64_t in_use_bytes_ = 0;               // GUARDED_BY(mu_)
  uint64_t held_bytes_ = 0;                 // GUARDED_BY(mu_)
  uint64_t heap_fallbacks_ = 0;             // GUARDED_BY(mu_)
  // Buffers from the heap (not the arena), by address; only grown / shrunk off the hot path.
  std::unordered_map<char*, AlignedBuffer> heap_;  // GUARDED_BY(mu_)
};

}  // namespace folio::raid
