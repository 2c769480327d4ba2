// Bad input to every command that takes a device spec, a path or a size, through the built
// `folio` binary: each one is exactly one line on stderr naming the thing given and the fix,
// with exit 2 when the user must change the command line and 1 when it could not run (a
// device another process holds). Nothing is created by a refused command.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/flock_holder_test_util.h"
#include "cli_test_util.h"

namespace {

using folio::cli::test::CliTest;
using folio::cli::test::FlockHolder;

constexpr char kForms[] = "use file:PATH (or a bare PATH), raid:PATH,PATH,... or mem:SIZE";

class BadInputTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    job_ = WriteFile("j.fio", "[j]\nrw=randread\nsize=1M\n");
    file_ = ZeroFile("dev.img", 4 << 20);
    absent_ = dir_ + "/absent.img";
    std::filesystem::create_directory(dir_ + "/mnt");
  }

  // The command line that gives `spec` to each command taking a device spec, with the name
  // its messages put in front of the spec ("" when the spec is named alone).
  struct Taker {
    std::vector<std::string> args;
    std::string name;
  };
  std::vector<Taker> SpecTakers(const std::string& spec) const {
    return {
        {{"bench", "--device", spec, job_}, "--device "},
        {{"copy", spec, dir_ + "/out"}, "SRC "},
        {{"copy", file_, spec}, "DST "},
        {{"export", "--mount", dir_ + "/mnt", spec}, ""},
    };
  }

  // Every spec taker refuses `spec` with exit 2 and a line holding "NAME SPEC" and `fix`.
  void ExpectSpecRefused(const std::string& spec, const std::string& fix) {
    for (const Taker& t : SpecTakers(spec)) {
      ExpectUsageError(t.args, {t.name + spec, fix});
    }
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/out")) << spec;
  }

  std::string job_, file_, absent_;
};

TEST_F(BadInputTest, MalformedSpecsForEveryCommand) {
  ExpectSpecRefused("mem:3000", "mem:3000: SIZE must be a non-zero multiple of 4K (e.g. mem:64M)");
  ExpectSpecRefused("mem:lots", "multiple of 4K (e.g. mem:64M)");
  ExpectSpecRefused("mem:100T", "larger than this machine's memory");
  ExpectSpecRefused("raid:" + file_, "raid: needs two or more comma-separated member paths");
  ExpectSpecRefused("raid:" + file_ + ",," + file_, "empty member path; use raid:PATH,PATH,...");
  ExpectSpecRefused("file:", std::string("file:: no path; ") + kForms);
}

TEST_F(BadInputTest, MissingAndUnusablePathsForEveryCommand) {
  // A missing device (a DST file is created instead: its directory must exist).
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"bench", "--device", absent_, job_},
           {"copy", absent_, dir_ + "/out"},
           {"export", "--mount", dir_ + "/mnt", absent_}}) {
    ExpectUsageError(args, {absent_ + ": no such file or device; " + kForms});
  }
  ExpectUsageError({"copy", file_, dir_ + "/no-dir/out"},
                   {"DST " + dir_ + "/no-dir/out: cannot create it: no such directory"});
  // A missing RAID member names the spec and the member.
  const std::string raid = "raid:" + file_ + "," + absent_;
  for (const Taker& t : SpecTakers(raid)) {
    ExpectUsageError(t.args, {raid + ": " + absent_ + ": no such file or device"});
  }
  // A directory is no device.
  for (const Taker& t : SpecTakers(dir_)) {
    ExpectUsageError(t.args, {dir_ + ": is a directory; give a regular file or a block device"});
  }
  // RAID members are paths, not specs.
  ExpectUsageError({"raid", "status", file_, absent_},
                   {"member " + absent_ + ": no such file or device; give the paths of the "
                    "array's existing members"});
  ExpectUsageError({"raid", "create", file_, absent_, dir_ + "/m2"},
                   {"member " + absent_ + ": no such file; give --size to create it"});
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/m2"));
}

TEST_F(BadInputTest, BadSizesForEveryCommand) {
  const std::string not_a_size = "not a size; use a number with an optional K, M, G or T suffix";
  ExpectUsageError({"bench", "--cache", "lots", job_}, {"--cache lots: not a size"});
  ExpectUsageError({"bench", "--repeat", "0", job_}, {"--repeat 0: use 1 to 9"});
  ExpectUsageError({"bench", "--repeat", "10", job_}, {"--repeat 10: use 1 to 9"});
  ExpectUsageError({"export", "--mount", dir_ + "/mnt", "--cache", "lots", file_},
                   {"--cache lots: not a size"});
  ExpectUsageError({"copy", "--block", "3000", file_, dir_ + "/out"},
                   {"--block 3000: must be a multiple of 4K up to 64M"});
  ExpectUsageError({"raid", "create", "--size", "lots", dir_ + "/m0", dir_ + "/m1"},
                   {"--size 'lots': " + not_a_size});
  ExpectUsageError({"raid", "create", "--size", "3000", dir_ + "/m0", dir_ + "/m1"},
                   {"--size 3000: must be a non-zero multiple of 4K"});
  ExpectUsageError({"raid", "resync-bench", "--size", "lots"}, {"--size", "lots"});
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/m0"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));
}

// A device another process holds is a runtime failure (exit 1) naming the holder; nothing is
// written and, for the export, nothing is mounted.
TEST_F(BadInputTest, ADeviceInUseIsARuntimeFailure) {
  FlockHolder lock(file_);
  ASSERT_TRUE(lock.held()) << "flock(1) did not start";
  const std::string busy = file_ + ": in use by process ";
  ExpectRuntimeError({"bench", "--device", file_, "--engine", "folio:4k", job_},
                     {"--device " + file_, busy, "stop it first"});
  ExpectRuntimeError({"copy", file_, dir_ + "/out"}, {"SRC " + file_, busy});
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out"));
  ExpectRuntimeError({"copy", dir_ + "/j.fio", file_}, {"DST " + file_, busy});
  if (access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "no usable /dev/fuse: the export stops at it before opening devices";
  }
  ExpectRuntimeError({"export", "--mount", dir_ + "/mnt", file_}, {busy});
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/mnt"));
}

// `folio fs bench`: every bad flag is refused before anything is made (no temp directory in
// --dir, nothing mounted).
TEST_F(BadInputTest, FsBenchFlags) {
  const std::string d = dir_ + "/benchdir";
  std::filesystem::create_directory(d);
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"fs", "bench", "--dir", d};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ExpectUsageError(bench({"--cache", "10M"}), {"--cache 10M", "at least 32M"});
  ExpectUsageError(bench({"--cache", "lots"}), {"--cache lots: not a size"});
  ExpectUsageError(bench({"--cache", "3G"}), {"--cache 3G", "over 8G", "lower --cache"});
  ExpectUsageError(bench({"--runtime", "0"}), {"--runtime 0", "0.2 to 600 seconds"});
  ExpectUsageError(bench({"--md-files", "5"}), {"--md-files 5", "10 to 1000000"});
  ExpectUsageError(bench({"--small-files", "200000"}), {"--small-files 200000", "10 to 100000"});
  ExpectUsageError(bench({"--repeat", "0"}), {"--repeat 0", "1 to 9"});
  ExpectUsageError(bench({"--store", "dir:/tmp/x"}), {"--store dir:/tmp/x", "give dev:SPEC"});
  ExpectUsageError(bench({"--store", "nfs:x"}), {"--store "});
  ExpectUsageError(bench({"--passthrough-ll", absent_}),
                   {"--passthrough-ll " + absent_, "not an executable"});
  ExpectUsageError(bench({"--plot", dir_ + "/no/such/plot.svg"}), {"--plot " + dir_ + "/no/such"});
  ExpectUsageError(bench({"--phases", "seqwrite,bogus"}), {"--phases bogus", "no phase starts"});
  ExpectUsageError(bench({"--mount-binary", absent_}),
                   {"--mount-binary " + absent_, "not an executable"});
  ExpectUsageError({"fs", "bench", "--dir", dir_ + "/absent"}, {"--dir " + dir_ + "/absent"});
  // The engine bench (--meta): its own flags, and none of the FUSE bench's.
  ExpectUsageError(bench({"--meta", "sqlite", "--phases", "md"}),
                   {"--phases", "a flag of the FUSE bench", "leave it out with --meta"});
  ExpectUsageError(bench({"--meta", "sqlite", "--store", "dev:file:/tmp/x.img"}),
                   {"--store dev:file:/tmp/x.img", "use dir or rados:POOL"});
  ExpectUsageError(bench({"--meta", "sqlite", "--store", "rados:"}), {"rados:"});
  ExpectUsageError(bench({"--meta", "sqlite", "--ops", "5"}), {"--ops 5", "10 to 1000000"});
  ExpectUsageError(bench({"--meta", "sqlite", "--seq-size", "1000"}), {"--seq-size 1000"});
  ExpectUsageError(bench({"--meta", "sqlite", "--rados-seconds", "0"}),
                   {"--rados-seconds 0", "1 to 600"});
  ExpectUsageError(bench({"--meta", "sqlite", "--readahead", "2G"}),
                   {"--readahead 2G", "from 64K to 1G"});
  ExpectUsageError(bench({"--readahead", "5000"}), {"--readahead 5000", "whole 4K pages"});
  ExpectUsageError(bench({"--meta", "sqlite", "--block-size", "3M"}),
                   {"--block-size 3M", "power of two between 64K and 16M"});
  ExpectUsageError(bench({"--block-size", "1M"}),
                   {"--block-size", "a flag of the engine bench (--meta)"});
  ExpectUsageError(bench({"--store", "dir", "--store", "dir"}),
                   {"--store given 2 times", "--meta"});
  ExpectUsageError(bench({"--meta", "mysql://x"}), {"--meta mysql://x", "give sqlite", "redis://"});
  ExpectUsageError(bench({"--meta", "redis://127.0.0.1:1/0?prefix=mine"}),
                   {"names a key prefix", "without ?prefix="});
  // A server that is down: one line naming it, exit 1, nothing left behind.
  ExpectRuntimeError(bench({"--meta", "redis://127.0.0.1:1/0"}), {"127.0.0.1:1"});
  EXPECT_TRUE(std::filesystem::is_empty(d));
}

}  // namespace
