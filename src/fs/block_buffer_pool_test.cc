// BlockBufferPool: spares are reused with their storage, bounded, and only of the pool's size.
#include "fs/block_buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio::fs {
namespace {

constexpr size_t kBufferBytes = (1 << 20) + 1028;  // a 1 MiB block's sector encoding

TEST(BlockBufferPoolTest, TakeWithoutSparesAllocatesABufferOfThePoolsSize) {
  BlockBufferPool pool(kBufferBytes, 2);
  std::vector<char> buf = pool.Take();
  EXPECT_EQ(buf.size(), kBufferBytes);
  EXPECT_EQ(pool.spares(), 0u);
}

TEST(BlockBufferPoolTest, AGivenBufferIsTakenAgainWithItsStorage) {
  BlockBufferPool pool(kBufferBytes, 2);
  std::vector<char> buf(kBufferBytes, 'x');
  const char* storage = buf.data();
  pool.Give(std::move(buf));
  EXPECT_EQ(pool.spares(), 1u);
  std::vector<char> again = pool.Take();
  EXPECT_EQ(pool.spares(), 0u);
  EXPECT_EQ(again.size(), kBufferBytes);
  EXPECT_EQ(again.data(), storage);  // the same pages, not a new allocation
}

TEST(BlockBufferPoolTest, KeepsAtMostSparesMaxAndOnlyBuffersOfItsSize) {
  BlockBufferPool pool(kBufferBytes, 2);
  for (int i = 0; i < 3; ++i) pool.Give(std::vector<char>(kBufferBytes));
  EXPECT_EQ(pool.spares(), 2u);
  BlockBufferPool other(kBufferBytes, 2);
  other.Give(std::vector<char>(kBufferBytes / 2));
  other.Give(std::vector<char>(kBufferBytes + 1));
  std::vector<char> reserved;
  reserved.reserve(kBufferBytes);  // room, but not the size
  other.Give(std::move(reserved));
  EXPECT_EQ(other.spares(), 0u);
}

}  // namespace
}  // namespace folio::fs
