#include "raid/buffer_pool.h"

#include <utility>

#include "base/check.h"
#include "base/units.h"
#include "folio/arena.h"

namespace folio::raid {

StripeBufferPool::StripeBufferPool(uint64_t capacity_bytes, FolioArena* arena)
    : capacity_bytes_(capacity_bytes), arena_(arena) {}

StripeBufferPool::~StripeBufferPool() {
  std::lock_guard<std::mutex> lock(mu_);
  FOLIO_CHECK_MSG(in_use_bytes_ == 0, "stripe buffers still in use at pool destruction");
  for (int shift = kMinShift; shift <= kMaxShift; ++shift) {
    for (char* p : free_[shift]) ReleaseOne(shift, p);
    free_[shift].clear();
  }
}

uint64_t StripeBufferPool::ClassBytes(uint64_t bytes) {
  uint64_t c = uint64_t{1} << kMinShift;
  while (c < bytes) c <<= 1;
  return c;
}

char* StripeBufferPool::AllocFresh(int shift) {
  if (arena_ != nullptr && shift - kPageShift <= kMaxOrder) {
    auto folio = arena_->Alloc(shift - kPageShift);
    if (folio.ok()) return arena_->Data(*folio);
  }
  if (arena_ != nullptr) ++heap_fallbacks_;
  Result<AlignedBuffer> buf = AlignedBuffer::TryAllocate(uint64_t{1} << shift);
  if (!buf.ok()) return nullptr;
  char* p = buf->data();
  heap_.emplace(p, std::move(buf).value());
  return p;
}

void StripeBufferPool::ReleaseOne(int shift, char* p) {
  held_bytes_ -= uint64_t{1} << shift;
  if (arena_ != nullptr && arena_->Contains(p)) {
    arena_->Free(arena_->FrameOf(p));
  } else {
    FOLIO_CHECK(heap_.erase(p) == 1);
  }
}

bool StripeBufferPool::MakeRoom(uint64_t need_bytes) {
  for (int shift = kMaxShift; shift >= kMinShift && held_bytes_ + need_bytes > capacity_bytes_;
       --shift) {
    while (!free_[shift].empty() && held_bytes_ + need_bytes > capacity_bytes_) {
      ReleaseOne(shift, free_[shift].back());
      free_[shift].pop_back();
    }
  }
  return held_bytes_ + need_bytes <= capacity_bytes_;
}

bool StripeBufferPool::TryAlloc(uint64_t bytes, uint32_t count, char** out) {
  const uint64_t cls = ClassBytes(bytes);
  FOLIO_CHECK(cls <= (uint64_t{1} << kMaxShift));
  const int shift = Log2(cls);
  std::lock_guard<std::mutex> lock(mu_);
  if (in_use_bytes_ + cls * count > capacity_bytes_) return false;
  std::vector<char*>& list = free_[shift];
  const uint64_t reuse = std::min<uint64_t>(list.size(), count);
  const uint64_t fresh_bytes = (count - reuse) * cls;
  if (fresh_bytes > 0) {
    // Keep the buffers this call reuses off the release path.
    std::vector<char*> keep(list.end() - reuse, list.end());
    list.resize(list.size() - reuse);
    const bool room = MakeRoom(fresh_bytes);
    list.insert(list.end(), keep.begin(), keep.end());
    if (!room) return false;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!list.empty()) {
      out[i] = list.back();
      list.pop_back();
      continue;
    }
    out[i] = AllocFresh(shift);
    if (out[i] == nullptr) {  // the heap said no: give back what we took
      for (uint32_t j = 0; j < i; ++j) list.push_back(out[j]);
      return false;
    }
    held_bytes_ += cls;
  }
  in_use_bytes_ += cls * count;
  return true;
}

void StripeBufferPool::Free(uint64_t bytes, uint32_t count, char* const* bufs) {
  const uint64_t cls = ClassBytes(bytes);
  const int shift = Log2(cls);
  std::lock_guard<std::mutex> lock(mu_);
  FOLIO_CHECK(in_use_bytes_ >= cls * count);
  in_use_bytes_ -= cls * count;
  for (uint32_t i = 0; i < count; ++i) free_[shift].push_back(bufs[i]);
}

uint64_t StripeBufferPool::in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_bytes_;
}

uint64_t StripeBufferPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_bytes_;
}

uint64_t StripeBufferPool::heap_fallbacks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heap_fallbacks_;
}

}  // namespace folio::raid
