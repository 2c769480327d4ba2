#include "folio/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(StatusTest, OkIsCheapAndEmpty) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.ToErrno(), 0);
}

TEST(StatusTest, CarriesCodeAndMessageThroughCopies) {
  Status s = Status::Corruption("stripe 7: parity mismatch");
  Status copy = s;
  EXPECT_FALSE(copy.ok());
  EXPECT_EQ(copy.code(), StatusCode::kCorruption);
  EXPECT_EQ(copy.ToString(), "Corruption: stripe 7: parity mismatch");
  EXPECT_EQ(copy.ToErrno(), EIO);
  Status moved = std::move(copy);
  EXPECT_EQ(moved.message(), "stripe 7: parity mismatch");
}

TEST(StatusTest, FromErrnoMapsCodes) {
  EXPECT_TRUE(Status::FromErrno(ENOENT, "/x").IsNotFound());
  EXPECT_TRUE(Status::FromErrno(ENOSPC, "/x").IsNoSpace());
  Status eio = Status::FromErrno(EIO, "read /dev/x");
  EXPECT_TRUE(eio.IsIOError());
  EXPECT_EQ(eio.posix_errno(), EIO);
  EXPECT_NE(eio.message().find("read /dev/x: "), std::string_view::npos);
  EXPECT_EQ(eio.WithContext("member 2").message().substr(0, 10), "member 2: ");
  EXPECT_EQ(eio.WithContext("member 2").posix_errno(), EIO);
}

Result<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  FOLIO_ASSIGN_OR_RETURN(int h, Half(v));
  FOLIO_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  Result<int> from_ok = Status::OK();
  EXPECT_FALSE(from_ok.ok());
}

}  // namespace
}  // namespace folio
