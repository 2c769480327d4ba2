// FolioArena under concurrency (runs under TSan with the `concurrency` label): threads
// allocate folios of random orders, write a pattern, hand some to other threads, and whoever
// drops the last reference verifies and frees them. A reader thread meanwhile takes
// speculative references with TryGet (as a lock-free page cache lookup does) and snapshots
// Stats / CheckInvariants. Workers also split folios in place.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "folio/arena.h"

namespace folio {
namespace {

// Every 4K page of a folio starts with its tag and page number; the tag lives in
// private_data so any thread can check the folio it received.
void Stamp(FolioArena* arena, Folio* f, uint64_t tag) {
  f->private_data = tag;
  for (uint64_t p = 0; p < f->nr_pages(); ++p) {
    uint64_t v = tag + p;
    std::memcpy(arena->Data(f) + p * kPageBytes, &v, sizeof(v));
  }
}

bool StampIntact(FolioArena* arena, const Folio* f) {
  for (uint64_t p = 0; p < f->nr_pages(); ++p) {
    uint64_t v = 0;
    std::memcpy(&v, arena->Data(f) + p * kPageBytes, sizeof(v));
    if (v != f->private_data + p) return false;
  }
  return true;
}

struct Mailbox {
  std::mutex mu;
  std::deque<Folio*> folios;
};

void Release(FolioArena* arena, Folio* f) {
  if (f->Put() == 0) arena->Free(f);
}

class CrossThreadRun {
 public:
  static constexpr int kThreads = 3;
  static constexpr int kOpsPerThread = 20000;

  CrossThreadRun(uint64_t seed, FolioArena* arena) : seed_(seed), arena_(arena) {}

  void Run() {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back([this, t] { Worker(t); });
    std::thread reader([this] { Reader(); });
    for (std::thread& t : threads) t.join();
    reader.join();
    // Folios still in mailboxes (sent after the receiver's last pickup).
    for (Mailbox& box : boxes_) {
      for (Folio* f : box.folios) Finish(f);
      box.folios.clear();
    }
  }

  bool corrupt() const { return corrupt_.load(); }
  uint64_t splits() const { return splits_.load(); }
  uint64_t no_space() const { return no_space_.load(); }
  uint64_t speculative_refs() const { return speculative_refs_.load(); }

 private:
  void Worker(int id) {
    std::mt19937_64 rng(seed_ + static_cast<uint64_t>(id));
    std::vector<Folio*> mine;
    for (int i = 0; i < kOpsPerThread; ++i) {
      if (i % 16 == 0) TakeMail(id, &mine);
      unsigned r = static_cast<unsigned>(rng() % 100);
      if (r < 35 || mine.empty()) {
        int order = static_cast<int>(rng() % 10 < 9 ? rng() % 5 : rng() % kNumOrders);
        Result<Folio*> f = arena_->Alloc(order);
        if (!f.ok()) {
          no_space_.fetch_add(1);
          continue;
        }
        (*f)->owner.store(&boxes_[id]);
        Stamp(arena_, *f, rng() << 8);
        mine.push_back(*f);
      } else if (r < 50) {
        // Hand one to another thread: it will be freed by a thread that did not allocate it.
        Mailbox& box = boxes_[(id + 1 + rng() % (kThreads - 1)) % kThreads];
        std::lock_guard<std::mutex> lock(box.mu);
        box.folios.push_back(mine.back());
        mine.pop_back();
      } else if (r < 55) {
        if (Folio* upper = TrySplit(mine.back(), rng() << 8, id)) mine.push_back(upper);
      } else {
        Finish(mine.back());
        mine.pop_back();
      }
    }
    for (Folio* f : mine) Finish(f);
    running_.fetch_sub(1);
  }

  void TakeMail(int id, std::vector<Folio*>* mine) {
    std::lock_guard<std::mutex> lock(boxes_[id].mu);
    mine->insert(mine->end(), boxes_[id].folios.begin(), boxes_[id].folios.end());
    boxes_[id].folios.clear();
  }

  // Splits in place after freezing the refcount (1 -> 0) so that no speculative reader holds
  // the folio while its order changes, as the page cache does. Returns the upper half.
  Folio* TrySplit(Folio* f, uint64_t tag, int id) {
    int32_t one = 1;
    if (f->order == 0 || !f->refcount.compare_exchange_strong(one, 0)) return nullptr;
    if (!StampIntact(arena_, f)) corrupt_ = true;
    Folio* upper = arena_->Split(f);
    upper->owner.store(&boxes_[id]);
    Stamp(arena_, upper, tag);
    upper->refcount.store(1, std::memory_order_release);
    f->refcount.store(1, std::memory_order_release);
    splits_.fetch_add(1);
    return upper;
  }

  void Finish(Folio* f) {
    if (!StampIntact(arena_, f)) corrupt_ = true;
    Release(arena_, f);
  }

  // Speculative lookups: a TryGet on any frame must only succeed on live folio heads.
  void Reader() {
    std::mt19937_64 rng(seed_ ^ 0x1234);
    int n = 0;
    while (running_.load() > 0) {
      Folio* f = arena_->Frame(static_cast<uint32_t>(rng() % arena_->frame_count()));
      if (f->TryGet()) {
        speculative_refs_.fetch_add(1);
        if (f->frame % f->nr_pages() != 0) corrupt_ = true;
        Release(arena_, f);
      }
      if (++n % 4096 == 0) {
        ArenaStats s = arena_->Stats();
        if (s.free_bytes > s.capacity_bytes) corrupt_ = true;
        Status inv = arena_->CheckInvariants();
        if (!inv.ok()) {
          ADD_FAILURE() << inv.ToString();
          corrupt_ = true;
        }
      }
    }
  }

  const uint64_t seed_;
  FolioArena* const arena_;
  Mailbox boxes_[kThreads];
  std::atomic<bool> corrupt_{false};
  std::atomic<uint64_t> no_space_{0};
  std::atomic<uint64_t> speculative_refs_{0};
  std::atomic<uint64_t> splits_{0};
  std::atomic<int> running_{kThreads};
};

TEST(ArenaConcurrencyTest, AllocFreeAcrossThreads) {
  const uint64_t seed = TestSeedOr(0xc0ffee);
  FOLIO_SEED_TRACE(seed);
  ArenaOptions opts;
  opts.capacity_bytes = 16 << 20;
  auto arena_or = FolioArena::Create(opts);
  ASSERT_TRUE(arena_or.ok()) << arena_or.status().ToString();
  FolioArena* arena = arena_or->get();
  CrossThreadRun run(seed, arena);
  run.Run();
  EXPECT_FALSE(run.corrupt());
  Status inv = arena->CheckInvariants();
  ASSERT_TRUE(inv.ok()) << inv.ToString();
  ArenaStats s = arena->Stats();
  uint64_t allocs = 0, frees = 0;
  for (const ArenaOrderStats& o : s.orders) {
    allocs += o.allocs;
    frees += o.frees;
  }
  EXPECT_GT(run.splits(), 0u);
  EXPECT_EQ(allocs + run.splits(), frees);  // each split makes one more folio to free
  EXPECT_EQ(s.free_bytes, s.capacity_bytes);
  arena->DrainThreadCaches();
  EXPECT_EQ(arena->Stats().orders[kMaxOrder].free_folios,
            arena->frame_count() / OrderPages(kMaxOrder));
  EXPECT_TRUE(arena->CheckInvariants().ok());
  std::printf("allocs %llu, splits %llu, NoSpace %llu, speculative refs %llu\n",
              static_cast<unsigned long long>(allocs),
              static_cast<unsigned long long>(run.splits()),
              static_cast<unsigned long long>(run.no_space()),
              static_cast<unsigned long long>(run.speculative_refs()));
}

TEST(ArenaConcurrencyTest, ExhaustionWithCachesInOtherThreads) {
  // Two threads race to fill a small arena with order-0 folios; between them they must get
  // every frame (nothing stranded in a cache), then free everything.
  ArenaOptions opts;
  opts.capacity_bytes = 4 << 20;
  auto arena_or = FolioArena::Create(opts);
  ASSERT_TRUE(arena_or.ok());
  FolioArena* arena = arena_or->get();
  std::vector<Folio*> got[2];
  std::atomic<int> done{0};
  std::atomic<bool> go_free{false};
  auto fill = [&](int id) {
    for (;;) {
      Result<Folio*> f = arena->Alloc(0);
      if (!f.ok()) break;
      got[id].push_back(*f);
    }
    done.fetch_add(1);
    while (!go_free.load()) std::this_thread::yield();
    for (Folio* f : got[id]) arena->Free(f);
  };
  std::thread a(fill, 0), b(fill, 1);
  while (done.load() < 2) std::this_thread::yield();
  // A late NoSpace in one thread can race with the other's refill; whatever is left must be
  // reachable from here.
  size_t total = got[0].size() + got[1].size();
  std::vector<Folio*> rest;
  for (;;) {
    Result<Folio*> f = arena->Alloc(0);
    if (!f.ok()) break;
    rest.push_back(*f);
  }
  EXPECT_EQ(total + rest.size(), arena->frame_count());
  for (Folio* f : rest) arena->Free(f);
  go_free = true;
  a.join();
  b.join();
  arena->DrainThreadCaches();
  EXPECT_TRUE(arena->CheckInvariants().ok());
  EXPECT_EQ(arena->Stats().free_bytes, arena->capacity_bytes());
}

}  // namespace
}  // namespace folio
