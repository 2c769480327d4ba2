#include "folio/page_cache.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(FolioPolicyTest, Parse) {
  EXPECT_TRUE(FolioPolicy::Parse("4k").ok());
}

}  // namespace
}  // namespace folio
