// ArenaCore: statistics and the invariant walk, both taken under every lock of the arena so
// they see one consistent state.
#include <fmt/format.h>

#include "base/check.h"
#include "mem/arena_core.h"

namespace folio::mem {

template <typename Fn>
auto ArenaCore::WithAllLocked(Fn&& fn) const {
  OrderedLock registry(registry_mu_, LockLevel::kRegistry);
  for (const std::shared_ptr<ThreadCache>& c : caches_) {
    LockOrderAcquire(LockLevel::kThreadCache);
    c->lock.lock();
  }
  struct Unlocker {
    const std::vector<std::shared_ptr<ThreadCache>>& caches;
    ~Unlocker() {
      for (auto it = caches.rbegin(); it != caches.rend(); ++it) {
        (*it)->lock.unlock();
        LockOrderRelease(LockLevel::kThreadCache);
      }
    }
  } unlocker{caches_};
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  return fn();
}

ArenaStats ArenaCore::Stats() const {
  ArenaStats stats;
  WithAllLocked([&] {
    for (int o = 0; o < kNumOrders; ++o) {
      ArenaOrderStats& s = stats.orders[o];
      s.allocs = allocs_[o];
      s.frees = frees_[o];
      s.failures = failures_[o];
      s.splits = buddy_.splits(o) + user_splits_[o];
      s.merges = buddy_.merges(o);
      s.free_folios = buddy_.free_count(o);
      s.fallbacks = fallbacks_[o].load(std::memory_order_relaxed);
    }
    for (const std::shared_ptr<ThreadCache>& c : caches_) {
      for (int o = 0; o < kCachedOrders; ++o) {
        stats.orders[o].allocs += c->allocs[o];
        stats.orders[o].frees += c->frees[o];
        stats.orders[o].free_folios += c->stacks[o].count;
      }
    }
  });
  stats.capacity_bytes = static_cast<size_t>(frame_count_) * kPageBytes;
  for (int o = 0; o < kNumOrders; ++o) {
    stats.free_bytes += stats.orders[o].free_folios * OrderBytes(o);
  }
  return stats;
}

namespace {

struct HeadCounts {
  uint64_t free[kNumOrders] = {};
  uint64_t cached[kNumOrders] = {};
  uint64_t allocated[kNumOrders] = {};
};

// Walks the arena block by block: every frame must belong to exactly one block, each block
// aligned to its order, and no free block may have a free buddy of the same order.
Status WalkBlocks(const Folio* descs, uint32_t frame_count, HeadCounts* counts) {
  uint32_t f = 0;
  while (f < frame_count) {
    const Folio& d = descs[f];
    if (d.frame != f) {
      return Status::Corruption(fmt::format("arena: descriptor {} says frame {}", f, d.frame));
    }
    if (LoadState(&d) == kStateTail || LoadState(&d) > kStateCached) {
      return Status::Corruption(fmt::format(
          "arena: frame {} should head a block but has state {}", f, LoadState(&d)));
    }
    int o = d.order;
    uint32_t pages = static_cast<uint32_t>(OrderPages(o));
    if (o > kMaxOrder || f % pages != 0 || f + pages > frame_count) {
      return Status::Corruption(fmt::format(
          "arena: block at frame {} has order {}: misaligned or past the end", f, o));
    }
    for (uint32_t j = f + 1; j < f + pages; ++j) {
      if (LoadState(&descs[j]) != kStateTail) {
        return Status::Corruption(fmt::format(
            "arena: frame {} inside the order-{} block at frame {} is also a block head "
            "(state {}): overlap",
            j, o, f, LoadState(&descs[j])));
      }
    }
    if (LoadState(&d) == kStateFree) {
      ++counts->free[o];
      const Folio& buddy = descs[f ^ pages];
      if (o < kMaxOrder && LoadState(&buddy) == kStateFree && buddy.order == o) {
        return Status::Corruption(fmt::format(
            "arena: free buddies of order {} at frames {} and {} were not merged", o, f,
            f ^ pages));
      }
    } else if (LoadState(&d) == kStateCached) {
      ++counts->cached[o];
    } else {
      ++counts->allocated[o];
    }
    f += pages;
  }
  return Status::OK();
}

Status CheckList(const Folio* descs, uint32_t frame_count, const Folio* head, int order,
                 uint8_t state, bool doubly_linked, uint64_t* length) {
  const Folio* prev = nullptr;
  *length = 0;
  for (const Folio* p = head; p != nullptr; prev = p, p = p->next) {
    if (++*length > frame_count || p < descs || p >= descs + frame_count) {
      return Status::Corruption(
          fmt::format("arena: order-{} list (state {}) has a cycle or a foreign entry", order,
                      state));
    }
    if (LoadState(p) != state || p->order != order) {
      return Status::Corruption(fmt::format(
          "arena: frame {} on an order-{} list (state {}) has state {} order {}", p->frame,
          order, state, LoadState(p), p->order));
    }
    if (doubly_linked && p->prev != prev) {
      return Status::Corruption(
          fmt::format("arena: frame {} on the order-{} free list has a bad prev link", p->frame,
                      order));
    }
  }
  return Status::OK();
}

}  // namespace

Status ArenaCore::CheckInvariants() const {
  return WithAllLocked([&]() -> Status {
    HeadCounts counts;
    FOLIO_RETURN_IF_ERROR(WalkBlocks(descs_, frame_count_, &counts));
    uint64_t cached[kNumOrders] = {};
    uint64_t live[kNumOrders] = {};
    // A Split() of order o turns one allocated block of order o into two of order o - 1.
    for (int o = 0; o < kNumOrders; ++o) {
      uint64_t split_into = o + 1 < kNumOrders ? 2 * user_splits_[o + 1] : 0;
      live[o] = allocs_[o] + split_into - frees_[o] - user_splits_[o];
    }
    for (const std::shared_ptr<ThreadCache>& c : caches_) {
      for (int o = 0; o < kCachedOrders; ++o) {
        uint64_t n = 0;
        FOLIO_RETURN_IF_ERROR(CheckList(descs_, frame_count_, c->stacks[o].top, o,
                                        kStateCached, /*doubly_linked=*/false, &n));
        if (n != c->stacks[o].count) {
          return Status::Corruption(fmt::format(
              "arena: a thread cache's order-{} stack has {} blocks but counts {}", o, n,
              c->stacks[o].count));
        }
        cached[o] += n;
        live[o] += c->allocs[o] - c->frees[o];
      }
    }
    for (int o = 0; o < kNumOrders; ++o) {
      uint64_t n = 0;
      FOLIO_RETURN_IF_ERROR(CheckList(descs_, frame_count_, buddy_.list_head(o), o, kStateFree,
                                      /*doubly_linked=*/true, &n));
      if (n != buddy_.free_count(o) || n != counts.free[o]) {
        return Status::Corruption(fmt::format(
            "arena: order-{} free list has {} blocks, counts {}, the arena walk found {}", o, n,
            buddy_.free_count(o), counts.free[o]));
      }
      if (cached[o] != counts.cached[o]) {
        return Status::Corruption(fmt::format(
            "arena: thread caches hold {} order-{} blocks, the arena walk found {}", cached[o],
            o, counts.cached[o]));
      }
      if (live[o] != counts.allocated[o]) {
        return Status::Corruption(fmt::format(
            "arena: {} order-{} folios allocated and not freed, the arena walk found {}",
            live[o], o, counts.allocated[o]));
      }
    }
    return Status::OK();
  });
}

}  // namespace folio::mem
