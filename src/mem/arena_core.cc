// ArenaCore: allocation paths and per-thread caches (see arena_core.h for the lock order).
#include "mem/arena_core.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "base/units.h"

namespace folio::mem {
namespace {

std::atomic<uint64_t> next_arena_id{1};

// The hot-path lookup: the cache of the arena this thread used last. Trivially destructible,
// so access is a plain TLS load. `dead` is set once the thread's TlsCaches is destroyed: from
// then on (other TLS destructors freeing folios) the thread uses the global lists directly.
struct TlsFast {
  uint64_t arena_id;
  ThreadCache* cache;
  bool dead;
};
constinit thread_local TlsFast tls_fast = {0, nullptr, false};

struct TlsEntry {
  uint64_t arena_id;
  std::shared_ptr<ThreadCache> cache;
};

// Owns this thread's caches (one per arena it used); returns them at thread exit.
struct TlsCaches {
  std::vector<TlsEntry> entries;
  ~TlsCaches() {
    tls_fast = {0, nullptr, true};
    for (TlsEntry& e : entries) ArenaCore::RetireCache(e.cache.get());
  }
};
thread_local TlsCaches tls_caches;

bool IsRetired(const std::shared_ptr<ThreadCache>& c) {
  return c->retired.load(std::memory_order_acquire);
}

// Returns every block of c to `buddy`. REQUIRES: c->lock and the buddy lock held.
void ReturnBlocks(ThreadCache* c, BuddyAllocator* buddy) {
  for (ThreadCache::Stack& s : c->stacks) {
    while (s.top != nullptr) {
      Folio* f = s.top;
      s.top = f->next;
      buddy->Free(f);
    }
    s.count = 0;
  }
}

}  // namespace

ArenaCore::ArenaCore(Folio* descs, uint32_t frame_count)
    : id_(next_arena_id.fetch_add(1, std::memory_order_relaxed)),
      descs_(descs),
      frame_count_(frame_count),
      buddy_(descs, frame_count) {
  // Bound what one thread can strand: at most 256K per order, and 1/32 of a small arena.
  size_t capacity_bytes = static_cast<size_t>(frame_count) * kPageBytes;
  size_t budget_bytes = std::min<size_t>(256 << 10, capacity_bytes / 32);
  for (int o = 0; o < kCachedOrders; ++o) {
    size_t blocks = std::clamp<size_t>(budget_bytes / OrderBytes(o), 2, 32);
    cache_limit_[o] = static_cast<uint32_t>(blocks);
    cache_batch_[o] = static_cast<uint32_t>(std::max<size_t>(1, blocks / 2));
  }
}

ArenaCore::~ArenaCore() {
  OrderedLock registry(registry_mu_, LockLevel::kRegistry);
  for (const std::shared_ptr<ThreadCache>& c : caches_) {
    OrderedLock g(c->lock, LockLevel::kThreadCache);
    // The blocks vanish with the arena; the thread keeps only an empty, retired shell.
    c->arena = nullptr;
    for (ThreadCache::Stack& s : c->stacks) s = ThreadCache::Stack();
    std::fill(std::begin(c->allocs), std::end(c->allocs), 0);
    std::fill(std::begin(c->frees), std::end(c->frees), 0);
    c->retired.store(true, std::memory_order_release);
  }
  caches_.clear();
}

inline ThreadCache* ArenaCore::CurrentCache() {
  if (tls_fast.arena_id == id_) [[likely]] return tls_fast.cache;
  return CurrentCacheSlow();
}

ThreadCache* ArenaCore::CurrentCacheSlow() {
  if (tls_fast.dead) return nullptr;
  std::vector<TlsEntry>& entries = tls_caches.entries;
  std::erase_if(entries, [](const TlsEntry& e) { return IsRetired(e.cache); });
  for (const TlsEntry& e : entries) {
    if (e.arena_id == id_) {
      tls_fast = {id_, e.cache.get(), false};
      return e.cache.get();
    }
  }
  auto cache = std::make_shared<ThreadCache>();
  cache->arena = this;  // not yet visible to anyone else
  {
    OrderedLock registry(registry_mu_, LockLevel::kRegistry);
    std::erase_if(caches_, IsRetired);
    caches_.push_back(cache);
  }
  entries.push_back({id_, cache});
  tls_fast = {id_, cache.get(), false};
  return cache.get();
}

void ArenaCore::RetireCache(ThreadCache* c) {
  OrderedLock g(c->lock, LockLevel::kThreadCache);
  ArenaCore* arena = c->arena;
  if (arena != nullptr) {
    OrderedLock b(arena->buddy_mu_, LockLevel::kBuddy);
    ReturnBlocks(c, &arena->buddy_);
    for (int o = 0; o < kCachedOrders; ++o) {
      arena->allocs_[o] += c->allocs[o];
      arena->frees_[o] += c->frees[o];
      c->allocs[o] = 0;
      c->frees[o] = 0;
    }
    c->arena = nullptr;
  }
  c->retired.store(true, std::memory_order_release);
}

void ArenaCore::Refill(ThreadCache* c, int order) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  ThreadCache::Stack& s = c->stacks[order];
  for (uint32_t i = 0; i < cache_batch_[order]; ++i) {
    Folio* f = buddy_.Alloc(order, kStateCached);
    if (f == nullptr) break;
    f->next = s.top;
    s.top = f;
    ++s.count;
  }
}

void ArenaCore::Flush(ThreadCache* c, int order, uint32_t n) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  ThreadCache::Stack& s = c->stacks[order];
  for (uint32_t i = 0; i < n && s.top != nullptr; ++i) {
    Folio* f = s.top;
    s.top = f->next;
    --s.count;
    buddy_.Free(f);
  }
}

void ArenaCore::FlushAll(ThreadCache* c) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  ReturnBlocks(c, &buddy_);
}

Folio* ArenaCore::AllocGlobal(int order, bool count_failure) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  Folio* f = buddy_.Alloc(order, kStateAllocated);
  if (f != nullptr) {
    ++allocs_[order];
  } else if (count_failure) {
    ++failures_[order];
  }
  return f;
}

Folio* ArenaCore::Alloc(int order) {
  if (order <= FolioArena::kCachedOrderMax) {
    ThreadCache* c = CurrentCache();
    if (c != nullptr) {
      OrderedLock g(c->lock, LockLevel::kThreadCache);
      FOLIO_DCHECK(c->arena == this);
      ThreadCache::Stack& s = c->stacks[order];
      if (s.count == 0) Refill(c, order);
      if (s.count > 0) {
        Folio* f = s.top;
        s.top = f->next;
        --s.count;
        StoreState(f, kStateAllocated);
        ++c->allocs[order];
        return f;
      }
    }
  }
  if (Folio* f = AllocGlobal(order, /*count_failure=*/false)) return f;
  // Free memory may sit in other threads' caches, uncoalesced: return it all and retry.
  DrainThreadCaches();
  return AllocGlobal(order, /*count_failure=*/true);
}

void ArenaCore::Free(Folio* head) {
  int order = head->order;
  if (order <= FolioArena::kCachedOrderMax) {
    ThreadCache* c = CurrentCache();
    if (c != nullptr) {
      OrderedLock g(c->lock, LockLevel::kThreadCache);
      ThreadCache::Stack& s = c->stacks[order];
      if (s.count >= cache_limit_[order]) Flush(c, order, cache_batch_[order]);
      StoreState(head, kStateCached);
      head->next = s.top;
      s.top = head;
      ++s.count;
      ++c->frees[order];
      return;
    }
  }
  FreeShared(head);
}

void ArenaCore::FreeShared(Folio* head) {
  const int order = head->order;
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  buddy_.Free(head);
  ++frees_[order];
}

Folio* ArenaCore::Split(Folio* head) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  int order = head->order;
  FOLIO_CHECK(order >= 1 && order <= kMaxOrder);
  Folio* upper = &descs_[head->frame + OrderPages(order - 1)];
  FOLIO_CHECK(LoadState(upper) == kStateTail);
  upper->order = static_cast<uint8_t>(order - 1);
  StoreState(upper, kStateAllocated);
  head->order = static_cast<uint8_t>(order - 1);
  ++user_splits_[order];
  return upper;
}

void ArenaCore::DrainThreadCaches() {
  OrderedLock registry(registry_mu_, LockLevel::kRegistry);
  for (const std::shared_ptr<ThreadCache>& c : caches_) {
    OrderedLock g(c->lock, LockLevel::kThreadCache);
    if (c->arena != nullptr) FlushAll(c.get());
  }
}

bool ArenaCore::ScanBlock(uint32_t first, int order, std::vector<Folio*>* allocated,
                          uint32_t* free_pages) const {
  allocated->clear();
  *free_pages = 0;
  const uint32_t pages = static_cast<uint32_t>(OrderPages(order));
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  // One block (free or not) holding the whole range has its head at first rounded down.
  for (int o = order; o <= kMaxOrder; ++o) {
    const Folio* head = &descs_[first & ~static_cast<uint32_t>(OrderPages(o) - 1)];
    if (LoadState(head) != kStateTail && head->order >= o) return false;
  }
  for (uint32_t f = first; f < first + pages;) {
    Folio* head = &descs_[f];
    const uint8_t state = LoadState(head);
    FOLIO_CHECK_MSG(state != kStateTail, "arena: a tail frame where a block should start");
    const uint32_t n = static_cast<uint32_t>(OrderPages(head->order));
    if (state == kStateCached) return false;  // a thread cache holds part of it
    if (state == kStateFree) {
      *free_pages += n;
    } else {
      allocated->push_back(head);
    }
    f += n;
  }
  return true;
}

void ArenaCore::TakeFreeIn(uint32_t first, int order, std::vector<Folio*>* out) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  const size_t before = out->size();
  if (!buddy_.TakeFreeIn(first, order, out)) return;
  for (size_t i = before; i < out->size(); ++i) ++allocs_[(*out)[i]->order];
}

bool ArenaCore::Assemble(uint32_t first, int order, std::span<Folio* const> pieces) {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  uint64_t orders[kNumOrders] = {};
  for (const Folio* p : pieces) ++orders[std::min<int>(p->order, kMaxOrder)];
  if (!buddy_.Assemble(first, order, pieces)) return false;
  for (int o = 0; o < kNumOrders; ++o) frees_[o] += orders[o];
  ++allocs_[order];
  return true;
}

std::string ArenaCore::DescribeFree() const {
  OrderedLock b(buddy_mu_, LockLevel::kBuddy);
  uint64_t free_bytes = 0;
  for (int o = 0; o < kNumOrders; ++o) free_bytes += buddy_.free_count(o) * OrderBytes(o);
  uint64_t capacity_bytes = static_cast<uint64_t>(frame_count_) * kPageBytes;
  int largest = buddy_.LargestFreeOrder();
  if (largest < 0) return fmt::format("nothing free of {}", FormatSize(capacity_bytes));
  return fmt::format("{} free of {}, largest free folio order {} ({})", FormatSize(free_bytes),
                     FormatSize(capacity_bytes), largest, FormatSize(OrderBytes(largest)));
}

}  // namespace folio::mem
