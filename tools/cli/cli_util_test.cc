#include "cli/cli_util.h"

#include <gtest/gtest.h>

namespace folio::cli {
namespace {

TEST(CliUtilTest, OneLine) {
  EXPECT_EQ(OneLine("a"), "a");
  EXPECT_EQ(OneLine("first\nsecond\n"), "first; second");
  EXPECT_EQ(OneLine("first\n\n   second"), "first; second");
  EXPECT_EQ(OneLine("tab\there\r"), "tab here");
  EXPECT_EQ(OneLine("\n"), "");
}

TEST(CliUtilTest, StatusCodesMapToExitCodes) {
  // The message goes to stderr; the code is what matters here.
  EXPECT_EQ(ExitWithStatus("t", Status::InvalidArgument("x")), kExitUsage);
  EXPECT_EQ(ExitWithStatus("t", Status::NotSupported("x")), kExitUsage);
  EXPECT_EQ(ExitWithStatus("t", Status::NotFound("x")), kExitUsage);
  EXPECT_EQ(ExitWithStatus("t", Status::IOError("x")), kExitRuntime);
  EXPECT_EQ(ExitWithStatus("t", Status::NoSpace("x")), kExitRuntime);
  EXPECT_EQ(UsageError("t", "x"), kExitUsage);
  EXPECT_EQ(RuntimeError("t", "x"), kExitRuntime);
}

TEST(CliUtilTest, CheckDirectoryFlag) {
  EXPECT_TRUE(CheckDirectoryFlag("--dir", "/tmp", "/tmp").ok());
  Status s = CheckDirectoryFlag("--dir", "/nonexistent/x", "/tmp");
  EXPECT_EQ(s.message(),
            "--dir /nonexistent/x: no such directory; give an existing directory (default /tmp)");
  s = CheckDirectoryFlag("--dir", "/etc/passwd", "/tmp");
  EXPECT_EQ(s.message(),
            "--dir /etc/passwd: not a directory; give an existing directory (default /tmp)");
}

}  // namespace
}  // namespace folio::cli
