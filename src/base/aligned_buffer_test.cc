#include "base/aligned_buffer.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace folio {
namespace {

bool AlignedTo(const void* p, size_t align) { return reinterpret_cast<uintptr_t>(p) % align == 0; }

TEST(AlignedBufferTest, AlignsAndRoundsTheSizeUp) {
  AlignedBuffer a(5000);
  ASSERT_TRUE(a);
  EXPECT_TRUE(AlignedTo(a.data(), 4096));
  EXPECT_EQ(a.size(), 8192u);
  std::memset(a.data(), 0xab, a.size());  // all of it is usable (ASan checks)
  AlignedBuffer b(100, 64);
  EXPECT_TRUE(AlignedTo(b.data(), 64));
  EXPECT_EQ(b.size(), 128u);
  AlignedBuffer c(0);
  EXPECT_FALSE(c.empty());
  EXPECT_EQ(c.size(), 4096u);
  EXPECT_EQ(c.span().size(), 4096u);
}

TEST(AlignedBufferTest, ZeroedIsZero) {
  AlignedBuffer z = AlignedBuffer::Zeroed(3 * 4096);
  for (size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.data()[i], 0) << i;
}

TEST(AlignedBufferTest, MovesOwnershipAndFreesOnce) {
  AlignedBuffer a(4096);
  char* p = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  AlignedBuffer c(8192);
  c = std::move(b);  // frees c's old block (ASan reports a leak otherwise)
  EXPECT_EQ(c.data(), p);
  c = std::move(c);
  EXPECT_EQ(c.data(), p);
  std::vector<AlignedBuffer> v;
  for (int i = 0; i < 64; ++i) v.emplace_back(4096);  // reallocation moves them
  for (const AlignedBuffer& x : v) EXPECT_TRUE(AlignedTo(x.data(), 4096));
  c.Reset();
  EXPECT_TRUE(c.empty());
}

TEST(AlignedBufferTest, TryAllocateReportsExhaustionInsteadOfCrashing) {
  Result<AlignedBuffer> ok = AlignedBuffer::TryAllocate(4096);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(AlignedTo(ok->data(), 4096));
  // A size whose rounding would wrap around: refused, never a tiny block.
  Result<AlignedBuffer> huge = AlignedBuffer::TryAllocate(SIZE_MAX - 100);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kNoSpace);
  EXPECT_NE(huge.status().message().find("out of memory for a"), std::string_view::npos)
      << huge.status().ToString();
}

}  // namespace
}  // namespace folio
