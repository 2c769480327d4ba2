#include "base/cpu_placement.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace folio {
namespace {

TEST(CpuPlacementTest, ListsParseAndFormatAsTheKernelWritesThem) {
  struct Case {
    const char* text;
    std::vector<int> cpus;
    const char* formatted;
  };
  for (const Case& c : {Case{"0", {0}, "0"}, Case{"0-1\n", {0, 1}, "0-1"},
                        Case{" 3,0-1 ,1", {0, 1, 3}, "0-1,3"},
                        Case{"0-2,5,7-8", {0, 1, 2, 5, 7, 8}, "0-2,5,7-8"}}) {
    Result<std::vector<int>> got = ParseCpuList(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.cpus) << c.text;
    EXPECT_EQ(FormatCpuList(*got), c.formatted);
  }
  for (const char* bad : {"", "\n", "a", "1-", "-1", "2-1", "1,", "1,,2", "0-99999", "1.5"}) {
    Result<std::vector<int>> got = ParseCpuList(bad);
    ASSERT_FALSE(got.ok()) << "'" << bad << "' parsed";
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("not a CPU list"), std::string::npos);
  }
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuPlacementTest, OverlapIsASharedCpu) {
  EXPECT_TRUE(CpusOverlap({0, 1}, {1}));
  EXPECT_FALSE(CpusOverlap({0}, {1, 2}));
  EXPECT_FALSE(CpusOverlap({}, {0}));
}

TEST(CpuPlacementTest, AllowedCpusFollowTheAffinity) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  Result<std::vector<int>> all = AllowedCpus();
  ASSERT_TRUE(all.ok());
  ASSERT_FALSE(all->empty());
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(all->back(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  Result<std::vector<int>> pinned = AllowedCpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(*pinned, std::vector<int>{all->back()});
}

TEST(CpuPlacementTest, ProcessesAreFoundByNameWithTheirCpus) {
  char tmpl[] = "/tmp/folio-proc-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path root = tmpl;
  auto proc = [&](const std::string& pid, const std::string& comm, const std::string& status) {
    std::filesystem::create_directories(root / pid);
    std::ofstream(root / pid / "comm") << comm << "\n";
    if (!status.empty()) std::ofstream(root / pid / "status") << status;
  };
  proc("40", "ceph-osd", "Name:\tceph-osd\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n");
  proc("7", "ceph-osd", "Name:\tceph-osd\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n");
  proc("12", "ceph-mon", "Cpus_allowed_list:\t1\n");
  proc("13", "ceph-osd", "");                                  // exited while being read
  proc("14", "ceph-osd", "Cpus_allowed_list:\tgarbage\n");     // not parsed: left out
  proc("self", "ceph-osd", "Cpus_allowed_list:\t0\n");          // not a pid
  std::vector<ProcessCpus> got = ProcessesNamed("ceph-osd", root.string());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].pid, 7);
  EXPECT_EQ(got[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(got[1].pid, 40);
  EXPECT_EQ(got[1].cpus, std::vector<int>{1});
  EXPECT_TRUE(ProcessesNamed("ceph-osd", (root / "none").string()).empty());

  // This process, found in the real /proc by its own name.
  std::string self;
  std::ifstream("/proc/self/comm") >> self;
  bool found = false;
  for (const ProcessCpus& p : ProcessesNamed(self)) found = found || p.pid == getpid();
  EXPECT_TRUE(found) << self;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace folio
