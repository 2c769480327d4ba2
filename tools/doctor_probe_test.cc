#include "doctor_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace folio::cli {
namespace {

TEST(DoctorProbeTest, BracketedChoice) {
  EXPECT_EQ(BracketedChoice("always [madvise] never\n"), "madvise");
  EXPECT_EQ(BracketedChoice("always defer defer+madvise [madvise] never"), "madvise");
  EXPECT_EQ(BracketedChoice("always inherit madvise [never]\n"), "never");
  EXPECT_EQ(BracketedChoice("  1\n"), "1");
  EXPECT_EQ(BracketedChoice(""), "");
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/folio-doctor-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }
  void Write(const std::string& rel, const std::string& content) {
    std::ofstream(dir_ + "/" + rel) << content;
  }
  std::string dir_;
};

TEST_F(TempDir, ReadSysfsChoiceSaysAbsentForMissingFiles) {
  Write("enabled", "always [madvise] never\n");
  EXPECT_EQ(ReadSysfsChoice(dir_ + "/enabled"), std::optional<std::string>("madvise"));
  EXPECT_EQ(ReadSysfsChoice(dir_ + "/nope"), std::nullopt);
}

TEST_F(TempDir, ListNumberedEntriesSortsByNumberAndSkipsOthers) {
  for (const char* d : {"hugepages-2048kB", "hugepages-64kB", "hugepages-1024kB",
                        "hugepages-xkB", "hugepages-kB", "other", "hugepages-16kBx"}) {
    ASSERT_EQ(mkdir((dir_ + "/" + d).c_str(), 0700), 0);
  }
  std::vector<std::string> got = ListNumberedEntries(dir_, "hugepages-", "kB");
  EXPECT_EQ(got, (std::vector<std::string>{"hugepages-64kB", "hugepages-1024kB",
                                           "hugepages-2048kB"}));
  EXPECT_TRUE(ListNumberedEntries(dir_ + "/missing", "hugepages-", "kB").empty());
}

TEST(DoctorProbeTest, ParseMeminfo) {
  auto m = ParseMeminfo(
      "MemTotal:       24557012 kB\n"
      "HugePages_Total:       3\n"
      "HugePages_Free:        1\n"
      "Hugepagesize:       2048 kB\n"
      "garbage line\n"
      "Bad: x kB\n");
  EXPECT_EQ(m["MemTotal"], 24557012u);
  EXPECT_EQ(m["HugePages_Total"], 3u);
  EXPECT_EQ(m["HugePages_Free"], 1u);
  EXPECT_EQ(m["Hugepagesize"], 2048u);
  EXPECT_EQ(m.count("Bad"), 0u);
  EXPECT_EQ(m.size(), 4u);
  // The real file has the fields the doctor reads.
  auto real = ReadMeminfo();
  EXPECT_EQ(real.count("MemTotal"), 1u);
}

TEST_F(TempDir, ODirectProbeLeavesNothingBehind) {
  Status s = ProbeODirect(dir_);
  // /tmp on this machine supports O_DIRECT; elsewhere the error must say which file system.
  if (!s.ok()) {
    EXPECT_NE(s.message().find(dir_), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + dir_ + "')\"").c_str()), 0)
      << "the probe must delete its temp file";
}

TEST(DoctorProbeTest, ODirectProbeNamesAMissingDirectory) {
  Status s = ProbeODirect("/nonexistent-folio-dir");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-folio-dir/.folio-doctor-"), std::string::npos)
      << s.ToString();
}

TEST_F(TempDir, IoUringProbeAnswersAndLeavesNothingBehind) {
  // io_uring works on the target machine; if a sandbox forbids it the error must say where.
  Status s = ProbeIoUring(dir_);
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + dir_ + "')\"").c_str()), 0);
  if (!s.ok()) {
    EXPECT_NE(s.message().find("io_uring"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace folio::cli
