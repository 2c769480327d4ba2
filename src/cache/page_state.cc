#include "cache/page_state.h"

#include <algorithm>

#include "base/check.h"

namespace folio::cache {
namespace {

uint64_t LowBits(uint32_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

}  // namespace

void PageMask::SetRange(uint32_t first, uint32_t n) {
  for (uint32_t i = first; i < first + n;) {
    const uint32_t bit = i % 64;
    const uint32_t take = std::min<uint32_t>(64 - bit, first + n - i);
    w[i / 64] |= LowBits(take) << bit;
    i += take;
  }
}

uint32_t PageMask::Count() const {
  uint32_t n = 0;
  for (uint64_t x : w) n += static_cast<uint32_t>(std::popcount(x));
  return n;
}

bool PageMask::Empty() const {
  for (uint64_t x : w) {
    if (x != 0) return false;
  }
  return true;
}

FrameBitmap::FrameBitmap(uint32_t frames)
    : words_(std::make_unique<std::atomic<uint64_t>[]>((frames + 63) / 64)) {}

template <typename Fn>
void FrameBitmap::ForWords(uint32_t first, uint32_t n, Fn&& fn) const {
  for (uint32_t i = first; i < first + n;) {
    const uint32_t bit = i % 64;
    const uint32_t take = std::min<uint32_t>(64 - bit, first + n - i);
    fn(i / 64, LowBits(take) << bit);
    i += take;
  }
}

uint32_t FrameBitmap::Set(uint32_t first, uint32_t n) {
  uint32_t was_clear = 0;
  ForWords(first, n, [&](uint32_t word, uint64_t m) {
    const uint64_t old = words_[word].fetch_or(m, std::memory_order_acq_rel);
    was_clear += static_cast<uint32_t>(std::popcount(~old & m));
  });
  return was_clear;
}

uint32_t FrameBitmap::Clear(uint32_t first, uint32_t n) {
  uint32_t was_set = 0;
  ForWords(first, n, [&](uint32_t word, uint64_t m) {
    const uint64_t old = words_[word].fetch_and(~m, std::memory_order_acq_rel);
    was_set += static_cast<uint32_t>(std::popcount(old & m));
  });
  return was_set;
}

bool FrameBitmap::Any(uint32_t first, uint32_t n) const {
  bool any = false;
  ForWords(first, n, [&](uint32_t word, uint64_t m) {
    any = any || (words_[word].load(std::memory_order_acquire) & m) != 0;
  });
  return any;
}

bool FrameBitmap::All(uint32_t first, uint32_t n) const {
  bool all = true;
  ForWords(first, n, [&](uint32_t word, uint64_t m) {
    all = all && (words_[word].load(std::memory_order_acquire) & m) == m;
  });
  return all;
}

uint32_t FrameBitmap::Count(uint32_t first, uint32_t n) const {
  uint32_t c = 0;
  ForWords(first, n, [&](uint32_t word, uint64_t m) {
    c += static_cast<uint32_t>(std::popcount(words_[word].load(std::memory_order_acquire) & m));
  });
  return c;
}

// Whole folios only: first is aligned to n, so a folio of up to 64 pages is a run inside one
// word and a larger one is whole words; mask word k is frame word first / 64 + k.
PageMask FrameBitmap::Get(uint32_t first, uint32_t n) const {
  FOLIO_DCHECK(std::has_single_bit(n) && n <= OrderPages(kMaxOrder) && first % n == 0);
  PageMask out;
  if (n < 64) {
    out.w[0] = (words_[first / 64].load(std::memory_order_acquire) >> (first % 64)) & LowBits(n);
    return out;
  }
  for (uint32_t k = 0; k < n / 64; ++k) {
    out.w[k] = words_[first / 64 + k].load(std::memory_order_acquire);
  }
  return out;
}

uint32_t FrameBitmap::SetMask(uint32_t first, uint32_t n, const PageMask& mask) {
  FOLIO_DCHECK(std::has_single_bit(n) && n <= OrderPages(kMaxOrder) && first % n == 0);
  uint32_t was_clear = 0;
  for (uint32_t k = 0; k < (n + 63) / 64; ++k) {
    const uint64_t bits = n < 64 ? (mask.w[0] & LowBits(n)) << (first % 64) : mask.w[k];
    if (bits == 0) continue;
    const uint64_t old = words_[first / 64 + k].fetch_or(bits, std::memory_order_acq_rel);
    was_clear += static_cast<uint32_t>(std::popcount(~old & bits));
  }
  return was_clear;
}

uint32_t FrameBitmap::ClearMask(uint32_t first, uint32_t n, const PageMask& mask) {
  FOLIO_DCHECK(std::has_single_bit(n) && n <= OrderPages(kMaxOrder) && first % n == 0);
  uint32_t was_set = 0;
  for (uint32_t k = 0; k < (n + 63) / 64; ++k) {
    const uint64_t bits = n < 64 ? (mask.w[0] & LowBits(n)) << (first % 64) : mask.w[k];
    if (bits == 0) continue;
    const uint64_t old = words_[first / 64 + k].fetch_and(~bits, std::memory_order_acq_rel);
    was_set += static_cast<uint32_t>(std::popcount(old & bits));
  }
  return was_set;
}

}  // namespace folio::cache
