// The `.control` protocol: command lines both ways, finding the export that holds a path
// (a helper process holding the lock with an export's command line), and sending a command
// to a control file.
#include "cli/export_control.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/device_spec.h"
#include "cli/flock_holder_test_util.h"
#include "fuse/export_names.h"
#include "io/io_test_util.h"

namespace folio::cli {
namespace {

using io_test::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ExportControlTest, CommandsRoundTrip) {
  const ControlCommand fail = ControlCommand::Fail("/d/m1");
  EXPECT_EQ(FormatControlCommand(fail), "fail /d/m1");
  const ControlCommand replace = ControlCommand::Replace("/d/m1", "/d/m9");
  EXPECT_EQ(FormatControlCommand(replace), "replace /d/m1 /d/m9");
  for (const ControlCommand& c : {fail, replace}) {
    for (const std::string& line :
         {FormatControlCommand(c), FormatControlCommand(c) + "\n", "  " + FormatControlCommand(c)}) {
      Result<ControlCommand> p = ParseControlCommand(line);
      ASSERT_TRUE(p.ok()) << line << ": " << p.status().message();
      EXPECT_EQ(p->verb, c.verb) << line;
      EXPECT_EQ(p->member, c.member) << line;
      EXPECT_EQ(p->new_member, c.new_member) << line;
    }
  }
}

TEST(ExportControlTest, MalformedLinesAreRefused) {
  for (const std::string line : {"", "fail", "fail /a /b", "replace /a", "replace /a /b /c",
                                 "frobnicate /a", "FAIL /a"}) {
    Result<ControlCommand> p = ParseControlCommand(line + "\n");
    ASSERT_FALSE(p.ok()) << line;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << line;
    EXPECT_EQ(p.status().message(), "'" + line +
                                        "': unknown command; use 'fail MEMBER' or 'replace OLD "
                                        "NEW' (member paths)");
  }
}

TEST(ExportControlTest, ResolvedPathFollowsSymlinks) {
  TempDir d;
  std::ofstream(d.File("m0")).put('x');
  std::filesystem::create_symlink(d.File("m0"), d.File("link"));
  const std::string real = std::filesystem::canonical(d.File("m0"));
  EXPECT_EQ(ResolvedPath(d.File("link")), real);
  EXPECT_EQ(ResolvedPath(d.File("absent")), d.File("absent"));
}

TEST(ExportControlTest, FindsTheExportHoldingAPath) {
  TempDir d;
  const std::string m0 = d.File("m0"), m1 = d.File("m1");
  std::ofstream(m0).put('x');
  std::ofstream(m1).put('x');
  EXPECT_FALSE(FindExportHolding({m0, m1}).has_value()) << "nobody holds them";
  {
    // A holder that is not an export is not one to send commands to.
    test::FlockHolder other(m1, {"raid", "resync", m0, m1}, d.path());
    ASSERT_GT(other.pid(), 0) << "flock(1) did not start";
    EXPECT_FALSE(FindExportHolding({m0, m1}).has_value());
  }
  {
    test::FlockHolder exporter(m1, {kExportCommandName, kExportMountFlag, "/mnt/v", "raid:x"},
                               d.path());
    ASSERT_GT(exporter.pid(), 0) << "flock(1) did not start";
    std::optional<ExportProcess> e = FindExportHolding({m0, m1});
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->pid, exporter.pid());
    EXPECT_EQ(e->mountpoint, "/mnt/v");
  }
  {
    // --mount=DIR, relative to the export's working directory.
    test::FlockHolder exporter(
        m0, {kExportCommandName, std::string(kExportMountFlag) + "=mnt", "raid:x"}, d.path());
    ASSERT_GT(exporter.pid(), 0) << "flock(1) did not start";
    std::optional<ExportProcess> e = FindExportHolding({m0, m1});
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->mountpoint, std::filesystem::canonical(d.path()).string() + "/mnt");
  }
}

TEST(ExportControlTest, SendWritesOneLineToTheControlFile) {
  TempDir d;
  const ExportProcess to{4242, d.path()};
  const std::string control = d.path() + "/" + fuse::kControlName;
  // No control file: the error names it and the process.
  Status s = SendControlCommand(to, ControlCommand::Fail("/d/m1"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(control + " (the control file of the export in process 4242)"),
            std::string::npos)
      << s.message();
  std::ofstream(control).flush();
  s = SendControlCommand(to, ControlCommand::Replace("/d/m1", "/d/m9"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadAll(control), "replace /d/m1 /d/m9\n");
  // A blank in a path would not parse back: refused before anything is written.
  std::ofstream(control, std::ios::trunc).flush();
  s = SendControlCommand(to, ControlCommand::Fail("/d/my disk"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'fail /d/my disk': a member path with a blank"), std::string::npos)
      << s.message();
  EXPECT_EQ(ReadAll(control), "");
}

}  // namespace
}  // namespace folio::cli
