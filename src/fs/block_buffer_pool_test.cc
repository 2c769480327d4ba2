// BlockBufferPool: spares are reused with their storage, bounded, and only block-sized.
#include "fs/block_buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio::fs {
namespace {

constexpr size_t kBlockBytes = 1 << 20;

TEST(BlockBufferPoolTest, TakeWithoutSparesReservesABlock) {
  BlockBufferPool pool(kBlockBytes, 2);
  std::vector<char> buf = pool.Take();
  EXPECT_TRUE(buf.empty());
  EXPECT_GE(buf.capacity(), kBlockBytes);
  EXPECT_EQ(pool.spares(), 0u);
}

TEST(BlockBufferPoolTest, AGivenBufferIsTakenAgainEmptyWithItsStorage) {
  BlockBufferPool pool(kBlockBytes, 2);
  std::vector<char> buf;
  buf.reserve(kBlockBytes);
  buf.assign(kBlockBytes, 'x');
  const char* storage = buf.data();
  pool.Give(std::move(buf));
  EXPECT_EQ(pool.spares(), 1u);
  std::vector<char> again = pool.Take();
  EXPECT_EQ(pool.spares(), 0u);
  EXPECT_TRUE(again.empty());
  EXPECT_EQ(again.capacity(), kBlockBytes);
  EXPECT_EQ(again.data(), storage);  // the same pages, not a new allocation
}

TEST(BlockBufferPoolTest, KeepsAtMostSparesMaxAndOnlyBlockSizedBuffers) {
  BlockBufferPool pool(kBlockBytes, 2);
  for (int i = 0; i < 3; ++i) {
    std::vector<char> buf;
    buf.reserve(kBlockBytes);
    pool.Give(std::move(buf));
  }
  EXPECT_EQ(pool.spares(), 2u);
  BlockBufferPool other(kBlockBytes, 2);
  std::vector<char> small;
  small.reserve(kBlockBytes / 2);
  other.Give(std::move(small));
  std::vector<char> large;
  large.reserve(kBlockBytes * 2);
  other.Give(std::move(large));
  EXPECT_EQ(other.spares(), 0u);
}

}  // namespace
}  // namespace folio::fs
