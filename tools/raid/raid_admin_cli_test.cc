// Member administration from the command line.
// `folio raid replace`: the new member is checked as `raid create` checks members (one that
// carries a Folio RAID superblock, of another array or of this one, needs --force), and it is
// opened and validated before the old slot is failed: a replace refused for any reason leaves
// every member as it was.
// `folio raid resync --force`: sparse members on a real file system (a small tmpfs) that fills.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "raid/raid_cli_test_util.h"

namespace folio::cli {
namespace {

using test::OneLine;
using test::Outcome;
using test::ReadFile;
using test::RunCommand;
using test::TempDir;
using test::WriteRandomFile;

// The bytes of every file, to show a refused command changed nothing.
std::map<std::string, std::string> Snapshot(const std::vector<std::string>& paths) {
  std::map<std::string, std::string> out;
  for (const std::string& p : paths) out[p] = ReadFile(p);
  return out;
}

class RaidReplaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = d_.File("a");
    b_ = d_.File("b");
    c_ = d_.File("c");
    Outcome o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", "--json", a_, b_,
                            c_});
    ASSERT_EQ(o.code, 0) << o.err;
    uuid_ = o.json()["status"]["array_uuid"];
  }

  nlohmann::json Status(std::vector<std::string> members) {
    std::vector<std::string> args = {"raid", "status", "--json"};
    args.insert(args.end(), members.begin(), members.end());
    Outcome o = RunCommand(args);
    EXPECT_EQ(o.code, 0) << o.err;
    return o.code == 0 ? o.json() : nlohmann::json();
  }

  TempDir d_;
  std::string a_, b_, c_, uuid_;
};

TEST_F(RaidReplaceTest, RefusesAMemberOfAnotherArrayWithoutForce) {
  const std::string x = d_.File("x"), y = d_.File("y");
  Outcome o = RunCommand({"raid", "create", "--level", "1", "--size", "4M", "--assume-clean",
                          "--json", x, y});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string other = o.json()["status"]["array_uuid"];
  const auto before = Snapshot({a_, b_, c_, x, y});

  // The slot is healthy (replace would fail it) ...
  o = RunCommand({"raid", "replace", "--old", b_, "--new", x, a_, b_, c_});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_TRUE(OneLine(o.err)) << o.err;
  EXPECT_NE(o.err.find(x + " belongs to raid1 array " + other + " (slot 0); use --force to "
                       "overwrite it"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(Snapshot({a_, b_, c_, x, y}), before) << "a refused replace writes nothing";
  // ... or already failed: refused all the same.
  ASSERT_EQ(RunCommand({"raid", "fail", "--member", b_, a_, b_, c_}).code, 0);
  const auto failed = Snapshot({a_, b_, c_, x, y});
  o = RunCommand({"raid", "replace", "--old", b_, "--new", x, a_, b_, c_});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find(x + " belongs to raid1 array " + other), std::string::npos) << o.err;
  EXPECT_EQ(Snapshot({a_, b_, c_, x, y}), failed);

  // --force overwrites it, as create --force does.
  o = RunCommand({"raid", "replace", "--old", b_, "--new", x, "--force", "--wait", "--json", a_,
                  b_, c_});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["status"]["members"][1]["name"], x);
  EXPECT_EQ(Status({a_, x, c_})["state"], "clean");
}

TEST_F(RaidReplaceTest, RefusesAFormerMemberOfThisArrayWithoutForce) {
  const std::string e = d_.File("e");
  ASSERT_EQ(RunCommand({"raid", "replace", "--old", b_, "--new", e, "--wait", a_, b_, c_}).code,
            0);
  // b still carries this array's superblock (slot 1, replaced by e): putting it back into
  // slot 2 would overwrite a member the user may still need. Refused, naming it.
  const auto before = Snapshot({a_, b_, c_, e});
  Outcome o = RunCommand({"raid", "replace", "--old", c_, "--new", b_, a_, e, c_});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_TRUE(OneLine(o.err)) << o.err;
  EXPECT_NE(o.err.find(b_ + " belongs to raid5 array " + uuid_ + " (slot 1); use --force"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(Snapshot({a_, b_, c_, e}), before);
  EXPECT_EQ(Status({a_, e, c_})["members"][2]["health"], "in_sync");
}

TEST_F(RaidReplaceTest, ANewMemberListedAsAMemberIsRefusedEvenWithForce) {
  const auto before = Snapshot({a_, b_, c_});
  for (const std::vector<std::string>& extra : {std::vector<std::string>{},
                                                std::vector<std::string>{"--force"}}) {
    std::vector<std::string> args = {"raid", "replace", "--old", b_, "--new", c_};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const std::string& m : {a_, b_, c_}) args.push_back(m);
    Outcome o = RunCommand(args);
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find("--new " + c_ + ": is one of the members listed"), std::string::npos)
        << o.err;
  }
  EXPECT_EQ(Snapshot({a_, b_, c_}), before);
}

// The new member cannot be opened or used: the old member stays in its slot, in sync, and no
// member byte changes (before, the slot was failed first and the array left degraded).
TEST_F(RaidReplaceTest, AnUnusableNewMemberLeavesTheOldOneInPlace) {
  const std::string dir = d_.File("dir");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const auto before = Snapshot({a_, b_, c_});
  const uint64_t events = Status({a_, b_, c_})["events"];
  struct Case {
    std::string new_member;
    int code;
    std::string needle;
  };
  for (const Case& k : std::vector<Case>{
           {d_.File("no/such/dir/m"), 2, d_.File("no/such/dir/m") + ": no such file"},
           {dir, 2, dir + ": is a directory"},
       }) {
    Outcome o = RunCommand({"raid", "replace", "--old", b_, "--new", k.new_member, a_, b_, c_});
    EXPECT_EQ(o.code, k.code) << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find(k.needle), std::string::npos) << o.err;
    const nlohmann::json st = Status({a_, b_, c_});
    EXPECT_EQ(st["state"], "clean") << k.new_member;
    EXPECT_EQ(st["members"][1]["health"], "in_sync") << k.new_member;
    EXPECT_EQ(st["events"], events) << k.new_member;
    EXPECT_EQ(Snapshot({a_, b_, c_}), before) << k.new_member;
  }
}

// A tmpfs of `size` mounted at `dir` for the test's lifetime (root only).
class TmpfsMount {
 public:
  TmpfsMount(const std::string& dir, const std::string& size) : dir_(dir) {
    if (mkdir(dir.c_str(), 0755) != 0) {
      error_ = std::strerror(errno);
    } else if (mount("folio-test", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      error_ = std::strerror(errno);
    } else {
      mounted_ = true;
    }
  }
  ~TmpfsMount() {
    if (mounted_) (void)umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  bool Resize(const std::string& size) {
    return mount("folio-test", dir_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

TEST(RaidForcedCli, SparseMembersOnAFileSystemThatFillsComeBackWithResyncForce) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  TempDir d;
  TmpfsMount fs(d.File("fs"), "6M");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << fs.error();
  const std::string a = d.File("fs/a"), b = d.File("fs/b"), c = d.File("fs/c");
  // 3 x 5M of sparse members on 6M: only the metadata is allocated at create.
  Outcome o = RunCommand({"raid", "create", "--size", "5M", "--assume-clean", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string in = d.File("in");  // outside the tmpfs
  WriteRandomFile(in, 8 << 20, 7);
  o = RunCommand({"copy", in, "raid:" + a + "," + b + "," + c});
  EXPECT_NE(o.code, 0) << "8M of data cannot fit in 6M";
  EXPECT_NE(o.err.find("No space left on device"), std::string::npos) << o.err;
  o = RunCommand({"raid", "status", a, b, c});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("1 of 3 members in sync"), std::string::npos) << o.err;

  ASSERT_TRUE(fs.Resize("64M"));  // the administrator frees space
  o = RunCommand({"raid", "resync", "--force", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json j = o.json();
  ASSERT_EQ(j["forced"].size(), 1u) << j.dump();
  EXPECT_GE(j["forced"][0]["events_behind"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["resync"], nullptr) << "degraded: nothing to resync against";
  EXPECT_EQ(j["status"]["state"], "degraded");
  // The decision is on the members: plain commands assemble the array again.
  o = RunCommand({"raid", "status", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["failed"], 1);
  o = RunCommand({"raid", "resync", "--force", a, b, c});
  EXPECT_EQ(o.err.find("forced back"), std::string::npos) << "nothing left to force";
  EXPECT_EQ(o.out.find("forced back"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace folio::cli
