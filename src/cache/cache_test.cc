// Page cache unit tests: policy parsing, order selection, readahead ramp, split / collapse,
// eviction order, sticky writeback errors, throttling, truncation, read errors. The
// byte-for-byte model test is cache_model_test.cc.
#include "folio/page_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cache/cache_test_util.h"
#include "cache/order.h"
#include "cache/readahead.h"

namespace folio {
namespace {

using cache_test::CacheEnv;
using cache_test::MakeEnv;
using cache_test::Pattern;
using cache_test::SmallCacheOptions;

// ---- Policy --------------------------------------------------------------------------------

TEST(FolioPolicyTest, ParseAndPrint) {
  struct Case {
    const char* text;
    FolioPolicy::Kind kind;
    int fixed_order;
    int max_order;
    const char* printed;
  } cases[] = {
      {"4k", FolioPolicy::Kind::k4k, 0, 0, "4k"},
      {"4K", FolioPolicy::Kind::k4k, 0, 0, "4k"},
      {"fixed:64K", FolioPolicy::Kind::kFixed, 4, 4, "fixed:64K"},
      {"fixed:4k", FolioPolicy::Kind::kFixed, 0, 0, "fixed:4K"},
      {"fixed:2M", FolioPolicy::Kind::kFixed, 9, 9, "fixed:2M"},
      {"dynamic", FolioPolicy::Kind::kDynamic, 0, 9, "dynamic"},
      {"dynamic:512K", FolioPolicy::Kind::kDynamic, 0, 7, "dynamic:512K"},
  };
  for (const Case& c : cases) {
    Result<FolioPolicy> p = FolioPolicy::Parse(c.text);
    ASSERT_TRUE(p.ok()) << c.text << ": " << p.status().ToString();
    EXPECT_EQ(p->kind, c.kind) << c.text;
    if (c.kind == FolioPolicy::Kind::kFixed) {
      EXPECT_EQ(p->fixed_order, c.fixed_order) << c.text;
    }
    EXPECT_EQ(p->max_order, c.max_order) << c.text;
    EXPECT_EQ(p->ToString(), c.printed);
    EXPECT_EQ(FolioPolicy::Parse(p->ToString())->ToString(), c.printed);
  }
}

TEST(FolioPolicyTest, ErrorsNameTheValueAndTheForms) {
  for (const char* bad : {"fixed:3000", "fixed:4M", "fixed:2K", "fixed:", "fixed:abc", "big",
                          "", "dynamic:1M5", "dynamic:8K3"}) {
    Result<FolioPolicy> p = FolioPolicy::Parse(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_TRUE(p.status().IsInvalidArgument());
    std::string m(p.status().message());
    EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("fixed:SIZE"), std::string::npos) << m;
    EXPECT_NE(m.find("4K to 2M"), std::string::npos) << m;
  }
}

TEST(FolioPolicyTest, MaxOrderFromMaxFolio) {
  EXPECT_EQ(*FolioPolicy::MaxOrderForBytes(4096), 0);
  EXPECT_EQ(*FolioPolicy::MaxOrderForBytes(64 << 10), 4);
  EXPECT_EQ(*FolioPolicy::MaxOrderForBytes(2 << 20), 9);
  EXPECT_FALSE(FolioPolicy::MaxOrderForBytes(4 << 20).ok());
  EXPECT_FALSE(FolioPolicy::MaxOrderForBytes(12288).ok());
  EXPECT_FALSE(FolioPolicy::MaxOrderForBytes(0).ok());
}

// ---- Order arithmetic and readahead windows ------------------------------------------------

TEST(OrderTest, AlignedOrderIsCappedByAlignmentLimitAndMax) {
  using cache::AlignedOrder;
  EXPECT_EQ(AlignedOrder(0, 1000, 9), 9);
  EXPECT_EQ(AlignedOrder(0, 1000, 4), 4);    // max
  EXPECT_EQ(AlignedOrder(16, 1000, 9), 4);   // alignment of 16
  EXPECT_EQ(AlignedOrder(24, 1000, 9), 3);   // alignment of 24
  EXPECT_EQ(AlignedOrder(512, 520, 9), 3);   // limit: 8 pages left
  EXPECT_EQ(AlignedOrder(512, 513, 9), 0);
  EXPECT_EQ(AlignedOrder(7, 1000, 9), 0);
  EXPECT_EQ(AlignedOrder(512, 512, 9), 0);   // nothing left: order 0 is the floor
}

// The window a cache uses: the request, at most an eighth of the capacity, at least four
// pages, whole pages.
TEST(ReadaheadTest, EffectiveWindowIsCappedAtAnEighthOfTheCache) {
  constexpr uint64_t kMiB = 1ull << 20;
  EXPECT_EQ(EffectiveReadaheadBytes(16 * kMiB, 256 * kMiB), 16 * kMiB);
  EXPECT_EQ(EffectiveReadaheadBytes(16 * kMiB, 64 * kMiB), 8 * kMiB);
  EXPECT_EQ(EffectiveReadaheadBytes(4096, 256 * kMiB), 4 * 4096u);
  EXPECT_EQ(EffectiveReadaheadBytes(100000, 256 * kMiB), 24 * 4096u);
}

TEST(ReadaheadTest, WindowsGrowAndOrderRampsByTwo) {
  cache::ReadaheadState ra(512);
  EXPECT_EQ(ra.InitSize(1), 4u);
  EXPECT_EQ(ra.InitSize(16), 64u);   // 16 <= 512/32: x4
  EXPECT_EQ(ra.InitSize(32), 64u);   // 32 <= 512/4: x2
  EXPECT_EQ(ra.InitSize(300), 512u);
  EXPECT_EQ(ra.NextSize(4), 16u);
  EXPECT_EQ(ra.NextSize(64), 128u);
  EXPECT_EQ(ra.NextSize(512), 512u);

  cache::ReadaheadWindow w = ra.OnMiss(0, 1, cache::ReadaheadMode::kNormal, 9);
  EXPECT_EQ(w.start, 0u);
  EXPECT_EQ(w.nr_pages, 4u);
  EXPECT_EQ(w.mark, 1u);
  EXPECT_EQ(w.order, 0);
  std::vector<int> orders;
  uint64_t start = 4;
  for (int i = 0; i < 8; ++i) {
    w = ra.OnMarkedHit(w.mark, 1, 1, 9);
    EXPECT_EQ(w.start, start);
    EXPECT_EQ(w.mark, w.start);  // the whole pushed window is async
    start += w.nr_pages;
    orders.push_back(w.order);
  }
  EXPECT_EQ(orders, (std::vector<int>{2, 4, 6, 8, 9, 9, 9, 9}));  // capped by max_order
}

TEST(ReadaheadTest, RandomMissesReadWhatWasAskedThenSequentialStarts) {
  cache::ReadaheadState ra(512);
  cache::ReadaheadWindow w = ra.OnMiss(1000, 2, cache::ReadaheadMode::kNormal, 9);
  EXPECT_FALSE(w.readahead);
  EXPECT_EQ(w.start, 1000u);
  EXPECT_EQ(w.nr_pages, 2u);
  w = ra.OnMiss(5000, 1, cache::ReadaheadMode::kNormal, 9);
  EXPECT_FALSE(w.readahead);
  // Adjacent to the first: turns sequential.
  w = ra.OnMiss(1002, 1, cache::ReadaheadMode::kNormal, 9);
  EXPECT_TRUE(w.readahead);
  EXPECT_EQ(w.start, 1002u);
  EXPECT_EQ(w.nr_pages, 4u);
  // Random advice never reads ahead; sequential starts with the largest window.
  w = ra.OnMiss(0, 1, cache::ReadaheadMode::kRandom, 9);
  EXPECT_FALSE(w.readahead);
  w = ra.OnMiss(9000, 1, cache::ReadaheadMode::kSequential, 9);
  EXPECT_TRUE(w.readahead);
  EXPECT_EQ(w.nr_pages, 512u);
}

}  // namespace
}  // namespace folio
