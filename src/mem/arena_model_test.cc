// Model test of the buddy allocator behind FolioArena: a seeded PRNG drives the real arena and
// a trivial reference (a bitmap of occupied frames plus the list of live folios) side by side.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "folio/arena.h"

namespace folio {
namespace {

std::vector<uint64_t> Seeds() {
  if (const std::optional<uint64_t> seed = EnvSeed()) return {*seed};
  return {1, 2, 3, 0x5eed, 20240601};
}

struct Live {
  Folio* folio;
  int order;
  uint64_t tag;
};

// Writes / checks a per-page pattern at both ends of every 4K page: an overlap between two
// live folios shows up as a mismatch when the older one is freed.
void WritePattern(FolioArena* arena, const Live& l) {
  char* data = arena->Data(l.folio);
  for (uint64_t p = 0; p < OrderPages(l.order); ++p) {
    uint64_t v = l.tag ^ (p * 0x9e3779b97f4a7c15ull);
    std::memcpy(data + p * kPageBytes, &v, sizeof(v));
    std::memcpy(data + (p + 1) * kPageBytes - sizeof(v), &v, sizeof(v));
  }
}

bool PatternIntact(FolioArena* arena, const Live& l) {
  const char* data = arena->Data(l.folio);
  for (uint64_t p = 0; p < OrderPages(l.order); ++p) {
    uint64_t want = l.tag ^ (p * 0x9e3779b97f4a7c15ull);
    uint64_t head = 0;
    uint64_t tail = 0;
    std::memcpy(&head, data + p * kPageBytes, sizeof(head));
    std::memcpy(&tail, data + (p + 1) * kPageBytes - sizeof(tail), sizeof(tail));
    if (head != want || tail != want) return false;
  }
  return true;
}

class Model {
 public:
  explicit Model(uint32_t frames) : occupied_(frames, 0) {}

  bool RangeFree(uint32_t frame, int order) const {
    for (uint64_t i = 0; i < OrderPages(order); ++i) {
      if (occupied_[frame + i]) return false;
    }
    return true;
  }
  void Mark(uint32_t frame, int order, uint8_t v) {
    for (uint64_t i = 0; i < OrderPages(order); ++i) occupied_[frame + i] = v;
  }
  // A fully coalescing buddy allocator fails an order only if no aligned free run exists.
  bool HasAlignedFreeRun(int order) const {
    for (uint32_t f = 0; f < occupied_.size(); f += static_cast<uint32_t>(OrderPages(order))) {
      if (RangeFree(f, order)) return true;
    }
    return false;
  }

 private:
  std::vector<uint8_t> occupied_;
};

int PickOrder(std::mt19937_64& rng) {
  static constexpr int kWeights[kNumOrders] = {30, 16, 12, 10, 10, 7, 5, 4, 3, 3};
  static const int total = [] {
    int t = 0;
    for (int w : kWeights) t += w;
    return t;
  }();
  int r = static_cast<int>(rng() % total);
  for (int o = 0; o < kNumOrders; ++o) {
    if (r < kWeights[o]) return o;
    r -= kWeights[o];
  }
  return 0;
}

// One seeded run: the arena and the reference side by side.
class ModelRun {
 public:
  ModelRun(uint64_t seed, FolioArena* arena)
      : rng_(seed), arena_(arena), model_(arena->frame_count()) {}

  void Step(int i) {
    if (i % 1500 == 0) alloc_bias_ = (rng_() % 2) ? 0.75 : 0.35;
    double u = std::uniform_real_distribution<>(0, 1)(rng_);
    if (!live_.empty() && u < 0.05) {
      Split(i);
    } else if (live_.empty() || u < alloc_bias_) {
      Alloc(i);
    } else {
      Free(rng_() % live_.size());
    }
  }

  void CheckStats() {
    ArenaStats s = arena_->Stats();
    for (int o = 0; o < kNumOrders; ++o) {
      SCOPED_TRACE("order " + std::to_string(o));
      EXPECT_EQ(s.orders[o].allocs, allocs_[o]);
      EXPECT_EQ(s.orders[o].frees, frees_[o]);
      EXPECT_EQ(s.orders[o].failures, failures_[o]);
      EXPECT_GE(s.orders[o].splits, splits_by_user_[o]);
    }
    EXPECT_EQ(s.capacity_bytes, arena_->capacity_bytes());
    EXPECT_EQ(s.free_bytes, arena_->capacity_bytes() - live_bytes_);
  }

  void FreeAll() {
    while (!live_.empty()) Free(live_.size() - 1);
  }

  uint64_t total_failures() const {
    uint64_t n = 0;
    for (uint64_t f : failures_) n += f;
    return n;
  }

 private:
  void Alloc(int i) {
    int order = PickOrder(rng_);
    Result<Folio*> r = arena_->Alloc(order);
    if (!r.ok()) {
      ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
      ASSERT_NE(r.status().message().find("order " + std::to_string(order)), std::string::npos)
          << r.status().message();
      ASSERT_FALSE(model_.HasAlignedFreeRun(order))
          << "op " << i << ": NoSpace for order " << order << " with a free aligned run";
      ++failures_[order];
      return;
    }
    Folio* f = *r;
    ASSERT_EQ(f, arena_->Frame(f->frame));
    ASSERT_EQ(f->order, order);
    ASSERT_EQ(f->frame % OrderPages(order), 0u) << "misaligned, op " << i;
    ASSERT_LE(f->frame + OrderPages(order), arena_->frame_count());
    ASSERT_EQ(f->refcount.load(), 1);
    ASSERT_EQ(f->flags.load(), 0u);
    ASSERT_EQ(f->owner.load(), nullptr);
    ASSERT_EQ(f->index.load(), 0u);
    ASSERT_EQ(f->prev, nullptr);
    ASSERT_EQ(f->next, nullptr);
    ASSERT_EQ(f->private_data, 0u);
    ASSERT_EQ(arena_->Data(f), arena_->base() + static_cast<size_t>(f->frame) * kPageBytes);
    ASSERT_TRUE(model_.RangeFree(f->frame, order)) << "overlap at frame " << f->frame;
    model_.Mark(f->frame, order, 1);
    Live l{f, order, rng_()};
    WritePattern(arena_, l);
    // Users own these fields; the next Alloc of this frame must reset them.
    f->owner.store(&live_);
    f->index.store(7);
    f->private_data = 9;
    f->SetFlag(kFolioDirty);
    live_.push_back(l);
    live_bytes_ += OrderBytes(order);
    ++allocs_[order];
  }

  // Frees live_[k], half of the time with refcount 0 (after Put), else with refcount 1.
  void Free(size_t k) {
    Live l = live_[k];
    live_[k] = live_.back();
    live_.pop_back();
    ASSERT_TRUE(PatternIntact(arena_, l)) << "data of frame " << l.folio->frame << " overwritten";
    model_.Mark(l.folio->frame, l.order, 0);
    if (rng_() % 2) {
      ASSERT_EQ(l.folio->Put(), 0);
    }
    arena_->Free(l.folio);
    live_bytes_ -= OrderBytes(l.order);
    ++frees_[l.order];
  }

  // Splits a random live folio of order >= 1 in place: both halves become live folios.
  void Split(int i) {
    size_t k = rng_() % live_.size();
    Live l = live_[k];
    if (l.order == 0) return;
    ASSERT_TRUE(PatternIntact(arena_, l));
    Folio* upper = arena_->Split(l.folio);
    ASSERT_EQ(l.folio->order, l.order - 1) << "op " << i;
    ASSERT_EQ(upper->order, l.order - 1);
    ASSERT_EQ(upper->frame, l.folio->frame + OrderPages(l.order - 1));
    ASSERT_EQ(upper->refcount.load(), 0);
    live_[k].order = l.order - 1;  // the lower half keeps its tag and its pattern
    ASSERT_TRUE(PatternIntact(arena_, live_[k]));
    upper->refcount.store(1);
    Live upper_live{upper, l.order - 1, rng_()};
    WritePattern(arena_, upper_live);
    live_.push_back(upper_live);
    ++splits_by_user_[l.order];
  }

  std::mt19937_64 rng_;
  FolioArena* arena_;
  Model model_;
  std::vector<Live> live_;
  uint64_t allocs_[kNumOrders] = {};
  uint64_t frees_[kNumOrders] = {};
  uint64_t failures_[kNumOrders] = {};
  uint64_t splits_by_user_[kNumOrders] = {};
  uint64_t live_bytes_ = 0;
  double alloc_bias_ = 0.7;
};

void RunModel(uint64_t seed, size_t capacity_bytes, int ops) {
  FOLIO_SEED_TRACE(seed);
  ArenaOptions opts;
  opts.capacity_bytes = capacity_bytes;
  auto arena_or = FolioArena::Create(opts);
  ASSERT_TRUE(arena_or.ok()) << arena_or.status().ToString();
  FolioArena* arena = arena_or->get();
  ModelRun run(seed, arena);
  for (int i = 0; i < ops; ++i) {
    ASSERT_NO_FATAL_FAILURE(run.Step(i));
    if (i % 5000 == 4999) {
      run.CheckStats();
      Status inv = arena->CheckInvariants();
      ASSERT_TRUE(inv.ok()) << inv.ToString();
    }
  }
  EXPECT_GT(run.total_failures(), 0u) << "the arena was never exhausted: the test is too gentle";
  ASSERT_NO_FATAL_FAILURE(run.FreeAll());
  run.CheckStats();
  arena->DrainThreadCaches();
  Status inv = arena->CheckInvariants();
  ASSERT_TRUE(inv.ok()) << inv.ToString();
  ArenaStats s = arena->Stats();
  EXPECT_EQ(s.free_bytes, arena->capacity_bytes());
  uint64_t splits = 0, merges = 0;
  for (int o = 0; o < kNumOrders; ++o) {
    splits += s.orders[o].splits;
    merges += s.orders[o].merges;
    if (o < kMaxOrder) {
      EXPECT_EQ(s.orders[o].free_folios, 0u) << "order " << o << " unmerged";
    }
  }
  EXPECT_EQ(s.orders[kMaxOrder].free_folios, arena->frame_count() / OrderPages(kMaxOrder));
  EXPECT_EQ(splits, merges) << "every split must be undone by a merge once all is free";
  EXPECT_GT(splits, 0u);
}

TEST(ArenaModelTest, RandomMixSmallArena) {
  for (uint64_t seed : Seeds()) RunModel(seed, 8 << 20, 30000);
}

TEST(ArenaModelTest, RandomMixTinyArena) {
  // One order-9 block: every large allocation competes with the small ones.
  for (uint64_t seed : Seeds()) RunModel(seed, 2 << 20, 20000);
}

TEST(ArenaModelTest, ExhaustWithOrderZeroThenCoalesce) {
  ArenaOptions opts;
  opts.capacity_bytes = 4 << 20;
  auto arena = FolioArena::Create(opts);
  ASSERT_TRUE(arena.ok());
  std::vector<Folio*> all;
  for (;;) {
    Result<Folio*> r = (*arena)->Alloc(0);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsNoSpace());
      break;
    }
    all.push_back(*r);
  }
  EXPECT_EQ(all.size(), (*arena)->frame_count());
  EXPECT_FALSE((*arena)->Alloc(9).ok());
  EXPECT_EQ((*arena)->Stats().orders[9].failures, 1u);
  EXPECT_EQ((*arena)->Stats().free_bytes, 0u);
  for (Folio* f : all) (*arena)->Free(f);
  (*arena)->DrainThreadCaches();
  ASSERT_TRUE((*arena)->CheckInvariants().ok());
  EXPECT_EQ((*arena)->Stats().orders[9].free_folios, 2u);
  Result<Folio*> big = (*arena)->Alloc(9);
  ASSERT_TRUE(big.ok());
  (*arena)->Free(*big);
}

}  // namespace
}  // namespace folio
