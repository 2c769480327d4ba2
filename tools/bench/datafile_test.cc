#include "bench/datafile.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace folio::bench {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(DataFileTest, DataFileNameKeepsSafeCharacters) {
  EXPECT_EQ(DataFileName("4k-randread_fits.1"), "4k-randread_fits.1");
  EXPECT_EQ(DataFileName("job one/../x"), "job_one_.._x");
  EXPECT_EQ(DataFileName(".hidden"), "job.hidden");
  EXPECT_EQ(DataFileName(""), "job");
}

TEST(DataFileTest, FilesAreDistinctPerBlockAndRemovedWithTheDirectory) {
  std::atomic<bool> stop{false};
  std::string dir_path, file;
  {
    Result<std::unique_ptr<BenchDir>> dir = BenchDir::Create("/tmp");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_path = (*dir)->path();
    Result<std::string> f = (*dir)->CreateDataFile("a b", 3 << 20, &stop, ProgressMode::kOff);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file = *f;
    EXPECT_EQ(file, dir_path + "/a_b");
    // A second job of the same name gets its own file.
    Result<std::string> g = (*dir)->CreateDataFile("a b", 4096, &stop, ProgressMode::kOff);
    ASSERT_TRUE(g.ok());
    EXPECT_NE(*g, file);
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 3 << 20);
    std::ifstream in(file, std::ios::binary);
    std::vector<char> data(3 << 20);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    std::set<std::string> blocks;
    for (size_t pos = 0; pos < data.size(); pos += 4096) {
      uint64_t stamp;
      std::memcpy(&stamp, data.data() + pos, sizeof(stamp));
      EXPECT_EQ(stamp, pos) << "each block starts with its position";
      blocks.insert(std::string(data.data() + pos, 4096));
    }
    EXPECT_EQ(blocks.size(), (3u << 20) / 4096) << "no two blocks alike";
    (*dir)->Remove(*g);
    EXPECT_FALSE(Exists(*g));
    EXPECT_TRUE(Exists(file));
  }
  EXPECT_FALSE(Exists(file));
  EXPECT_FALSE(Exists(dir_path));
}

TEST(DataFileTest, FillStopsWhenInterrupted) {
  std::atomic<bool> stop{true};
  Result<std::unique_ptr<BenchDir>> dir = BenchDir::Create("/tmp");
  ASSERT_TRUE(dir.ok());
  Result<std::string> f = (*dir)->CreateDataFile("x", 64 << 20, &stop, ProgressMode::kOff);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "interrupted");
}

TEST(DataFileTest, CreateNamesAMissingParent) {
  Result<std::unique_ptr<BenchDir>> dir = BenchDir::Create("/nonexistent-folio");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("/nonexistent-folio"), std::string::npos);
}

TEST(StopSignalTest, SigintSetsTheFlagAndTheHandlerIsRestored) {
  struct sigaction before;
  sigaction(SIGINT, nullptr, &before);
  {
    StopSignal stop;
    EXPECT_FALSE(stop.stopped());
    raise(SIGINT);
    EXPECT_TRUE(stop.stopped());
    raise(SIGPIPE);  // ignored while a bench runs
  }
  struct sigaction after;
  sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  StopSignal again;
  EXPECT_FALSE(again.stopped()) << "a new bench starts unstopped";
}

}  // namespace
}  // namespace folio::bench
