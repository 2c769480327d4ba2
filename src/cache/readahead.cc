#include "cache/readahead.h"

#include <algorithm>
#include <bit>

namespace folio::cache {
namespace {

uint64_t RoundUpPow2(uint64_t v) { return v <= 1 ? 1 : uint64_t{1} << (64 - std::countl_zero(v - 1)); }
int FloorLog2(uint64_t v) { return 63 - std::countl_zero(v | 1); }

}  // namespace

ReadaheadState::ReadaheadState(uint64_t max_pages) { set_max_pages(max_pages); }

void ReadaheadState::set_max_pages(uint64_t max_pages) { max_pages_ = std::max<uint64_t>(4, max_pages); }

void ReadaheadState::Reset() {
  for (Stream& s : streams_) s = Stream();
}

uint64_t ReadaheadState::InitSize(uint64_t req_pages) const {
  uint64_t size = RoundUpPow2(req_pages);
  if (size <= max_pages_ / 32) return size * 4;
  if (size <= max_pages_ / 4) return size * 2;
  return max_pages_;
}

uint64_t ReadaheadState::NextSize(uint64_t size) const {
  if (size < max_pages_ / 16) return size * 4;
  if (size <= max_pages_ / 2) return size * 2;
  return max_pages_;
}

ReadaheadState::Stream* ReadaheadState::FindSequential(uint64_t index) {
  for (Stream& s : streams_) {
    if (!s.used) continue;
    if (index == s.next_index || (index + 1 == s.next_index)) return &s;
    if (s.size > 0 && index >= s.start && index <= s.start + s.size) return &s;
  }
  return nullptr;
}

ReadaheadState::Stream* ReadaheadState::Replace() {
  Stream* victim = &streams_[0];
  for (Stream& s : streams_) {
    if (!s.used) return &s;
    if (s.stamp < victim->stamp) victim = &s;
  }
  return victim;
}

ReadaheadWindow ReadaheadState::WindowOf(const Stream& s, int max_order) const {
  ReadaheadWindow w;
  w.start = s.start;
  w.nr_pages = s.size;
  w.mark = s.async_size > 0 ? s.start + s.size - s.async_size : ~uint64_t{0};
  w.order = std::min({s.order, max_order, FloorLog2(s.size)});
  w.readahead = true;
  return w;
}

ReadaheadWindow ReadaheadState::OnMiss(uint64_t index, uint64_t req_pages, ReadaheadMode mode,
                                       int max_order) {
  req_pages = std::max<uint64_t>(1, req_pages);
  ReadaheadWindow w;
  w.start = index;
  w.nr_pages = req_pages;
  if (mode == ReadaheadMode::kRandom) return w;

  Stream* s = FindSequential(index);
  bool initial = false;
  if (s == nullptr) {
    s = Replace();
    *s = Stream();
    s->used = true;
    if (index != 0 && mode != ReadaheadMode::kSequential) {
      // Random: read what was asked; the stream waits for an adjacent read.
      s->next_index = index + req_pages;
      s->stamp = ++clock_;
      return w;
    }
    initial = true;
  } else if (s->size == 0) {
    initial = true;
  }

  if (initial) {
    s->start = index;
    s->size = mode == ReadaheadMode::kSequential ? max_pages_ : InitSize(req_pages);
    s->size = std::max(s->size, std::min(req_pages, max_pages_));
    s->async_size = s->size > req_pages ? s->size - req_pages : s->size;
    s->order = 0;
  } else {
    // A sequential miss: the window ran out (or was evicted) before the mark was hit.
    s->start = index;
    s->size = std::max(NextSize(s->size), std::min(req_pages, max_pages_));
    s->async_size = s->size;
  }
  // As in the kernel: a window that starts here and is all async gets an extra async part,
  // so the mark does not sit on the page being read.
  if (index == s->start && s->size == s->async_size) {
    uint64_t add = NextSize(s->size);
    if (s->size + add <= max_pages_) {
      s->async_size = add;
      s->size += add;
    } else {
      s->size = max_pages_;
      s->async_size = max_pages_ / 2;
    }
  }
  s->next_index = index + req_pages;
  s->stamp = ++clock_;
  w = WindowOf(*s, max_order);
  if (w.nr_pages < req_pages) w.nr_pages = req_pages;
  return w;
}

ReadaheadWindow ReadaheadState::OnMarkedHit(uint64_t folio_index, uint64_t folio_pages,
                                            uint64_t req_pages, int max_order) {
  Stream* s = nullptr;
  for (Stream& c : streams_) {
    if (c.used && c.size > 0 && folio_index >= c.start && folio_index < c.start + c.size) {
      s = &c;
      break;
    }
  }
  if (s == nullptr) {
    // A marked folio without a stream (state replaced): restart after the folio.
    s = Replace();
    *s = Stream();
    s->used = true;
    s->start = folio_index + folio_pages;
    s->size = NextSize(InitSize(std::max<uint64_t>(1, req_pages)));
    s->size = std::min(s->size, max_pages_);
    s->async_size = s->size;
    s->order = std::min(2, max_order);
  } else {
    s->start += s->size;
    s->size = NextSize(s->size);
    s->async_size = s->size;
    s->order = std::min(s->order + 2, max_order);
    // End the window on a boundary of its order, so that the next window starts aligned and
    // can use folios of that order (windows otherwise keep the misalignment of the first one).
    const uint64_t align = uint64_t{1} << std::min(s->order, FloorLog2(s->size));
    const uint64_t end = (s->start + s->size + align - 1) & ~(align - 1);
    s->size = end - s->start;
    s->async_size = s->size;
  }
  s->next_index = folio_index + folio_pages;
  s->stamp = ++clock_;
  return WindowOf(*s, max_order);
}

}  // namespace folio::cache
