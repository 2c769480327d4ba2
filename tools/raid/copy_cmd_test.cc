// `folio copy` with files of any size, run in-process as the folio binary runs it (RunMain):
// file -> file (exact bytes and size), file -> mem: / raid: (the last block padded with zeros),
// device -> file, and the one-line errors for a destination that is too small.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "io/io_test_util.h"
#include "raid/raid_cli_test_util.h"
#include "raid/raid_cmd.h"

namespace folio::cli {
namespace {

using test::OneLine;
using test::Outcome;
using test::RunCommand;

class CopyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(tmp_.path().empty()) << "mkdtemp failed"; }
  std::string File(const std::string& name) const { return tmp_.File(name); }

  // A file of `bytes` random bytes; returns its path.
  std::string RandomFile(const std::string& name, size_t bytes, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string data(bytes, 0);
    for (char& c : data) c = static_cast<char>(rng() | 1);  // no zero bytes
    const std::string path = File(name);
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  // A 3-member RAID 5 of 4M members; *array_bytes is its size.
  std::string MakeRaid(uint64_t* array_bytes) {
    const std::string a = File("m0"), b = File("m1"), c = File("m2");
    Outcome o = RunCommand({"raid", "create", "--level", "5", "--chunk", "64K", "--size", "4M",
                            "--assume-clean", "--json", a, b, c});
    EXPECT_EQ(o.code, 0) << o.err;
    if (o.code == 0) *array_bytes = o.json()["status"]["array_bytes"];
    return "raid:" + a + "," + b + "," + c;
  }

  io_test::TempDir tmp_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The first offset where a and b differ (npos when equal), so a failure prints a number
// rather than megabytes.
size_t FirstDifference(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return i;
  }
  return a.size() == b.size() ? std::string::npos : n;
}

const std::vector<size_t> kOddSizes = {5000, 1, 0, 4096 + 1, (1 << 20) + 4095};

TEST_F(CopyTest, FileOfAnySizeToANewFileIsExact) {
  for (size_t bytes : kOddSizes) {
    SCOPED_TRACE(bytes);
    const std::string in = RandomFile("in" + std::to_string(bytes), bytes, bytes);
    const std::string out = File("out" + std::to_string(bytes));
    Outcome o = RunCommand({"copy", "--json", in, out});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.json()["bytes"].get<uint64_t>(), bytes);
    EXPECT_EQ(std::filesystem::file_size(out), bytes);
    EXPECT_EQ(FirstDifference(ReadFile(out), ReadFile(in)), std::string::npos);
    // Through the page cache (--buffered) and with the file: prefix too.
    const std::string out2 = File("buffered" + std::to_string(bytes));
    o = RunCommand({"copy", "--buffered", "file:" + in, "file:" + out2});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(FirstDifference(ReadFile(out2), ReadFile(in)), std::string::npos);
  }
}

TEST_F(CopyTest, OntoAnExistingLargerFileOverwritesItsStart) {
  const std::string in = RandomFile("in", 5000, 1);
  const std::string out = RandomFile("out", 3 * 4096 + 7, 2);
  const std::string before = ReadFile(out);
  Outcome o = RunCommand({"copy", in, out});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string after = ReadFile(out);
  ASSERT_EQ(after.size(), before.size()) << "an existing destination keeps its size";
  EXPECT_EQ(after.substr(0, 5000), ReadFile(in));
  EXPECT_EQ(after.substr(5000), before.substr(5000));
}

TEST_F(CopyTest, FileOfAnySizeToMem) {
  for (size_t bytes : kOddSizes) {
    SCOPED_TRACE(bytes);
    const std::string in = RandomFile("in", bytes, bytes);
    Outcome o = RunCommand({"copy", "--json", in, "mem:4M"});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.json()["bytes"].get<uint64_t>(), bytes);
  }
  // The last partial block must fit too: 4097 bytes do not fit mem:4K.
  const std::string in = RandomFile("in", 4097, 3);
  Outcome o = RunCommand({"copy", in, "mem:4K"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(OneLine(o.err)) << o.err;
  EXPECT_NE(o.err.find("smaller than SRC"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("4097 bytes"), std::string::npos) << o.err;
}

TEST_F(CopyTest, FileOfAnySizeToRaidPadsTheLastBlockAndReadsBack) {
  uint64_t array_bytes = 0;
  const std::string raid = MakeRaid(&array_bytes);
  ASSERT_GT(array_bytes, 2u << 20);
  // Fill the volume with non-zero data so the padding is visible.
  const std::string full = RandomFile("full", array_bytes, 9);
  ASSERT_EQ(RunCommand({"copy", full, raid}).code, 0);
  // What the volume should hold: the random fill, then each copy's bytes and zero padding.
  std::string expect = ReadFile(full);
  for (size_t bytes : kOddSizes) {
    SCOPED_TRACE(bytes);
    const std::string in = RandomFile("in", bytes, bytes + 100);
    Outcome o = RunCommand({"copy", in, raid});
    ASSERT_EQ(o.code, 0) << o.err;
    // The RAID volume's blocks are 4 KiB: the rest of the last one is zeros, the blocks after
    // it are untouched.
    const size_t padded = (bytes + 4095) / 4096 * 4096;
    expect.replace(0, bytes, ReadFile(in));
    expect.replace(bytes, padded - bytes, std::string(padded - bytes, '\0'));
    // Device -> new file: the whole volume, exact size.
    const std::string back = File("back" + std::to_string(bytes));
    o = RunCommand({"copy", "--json", raid, back});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.json()["bytes"].get<uint64_t>(), array_bytes);
    const std::string got = ReadFile(back);
    ASSERT_EQ(got.size(), array_bytes);
    EXPECT_EQ(FirstDifference(got, expect), std::string::npos);
  }
}

TEST_F(CopyTest, BadInputIsOneLine) {
  const std::string in = RandomFile("in", 5000, 4);
  const std::string small = RandomFile("small", 4096, 5);
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"copy", in, small}, "smaller than SRC"},
      {{"copy", in, File("no/such/dir/out")}, "no such directory"},
      {{"copy", File("missing"), File("out")}, "missing"},
      {{"copy", "mem:3000", File("out")}, "mem:"},
  };
  for (const Case& k : cases) {
    const Outcome o = RunCommand(k.args);
    EXPECT_EQ(o.code, 2) << k.needle << ": " << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find(k.needle), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("e.g. 1G"), std::string::npos) << o.err;
  }
  EXPECT_FALSE(std::filesystem::exists(File("out"))) << "a failed copy leaves no file behind";
  EXPECT_EQ(ReadFile(small).size(), 4096u) << "a refused destination is untouched";
}

}  // namespace
}  // namespace folio::cli
