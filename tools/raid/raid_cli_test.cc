// The `folio raid` and `folio copy` commands run in-process, as the folio binary runs them
// (RunMain): files in a temp directory, JSON output parsed, exit codes and one-line errors
// checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "io/io_test_util.h"
#include "raid/raid_cli_test_util.h"
#include "raid/raid_cmd.h"

namespace folio::cli {
namespace {

using test::OneLine;
using test::Outcome;
using test::ReadFile;
using test::RunCommand;
using test::TempDir;
using test::WriteRandomFile;

void PatchFile(const std::string& path, size_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f << bytes;
}

TEST(RaidCli, CreateCopyCheckFailReplace) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c"), e = d.File("e");
  Outcome o = RunCommand({"raid", "create", "--level", "5", "--chunk", "64K", "--unit", "16K",
                   "--size", "4M", "--assume-clean", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["status"]["state"], "clean");
  EXPECT_EQ(o.json()["status"]["unit"], "16K");
  const uint64_t array_bytes = o.json()["status"]["array_bytes"];
  EXPECT_EQ(array_bytes, 2u * (3u << 20));

  const std::string in = d.File("in"), out = d.File("out");
  WriteRandomFile(in, array_bytes, 42);
  const std::string spec = "raid:" + a + "," + b + "," + c;
  o = RunCommand({"copy", "--json", in, spec});
  ASSERT_EQ(o.code, 0) << o.err;
  // The RAID side's member I/O: every data byte written once to some member, parity besides.
  const nlohmann::json io = o.json()["dst_raid_io"];
  ASSERT_EQ(io["members"].size(), 3u);
  uint64_t written_kib = 0;
  for (const auto& m : io["members"]) written_kib += m["write_kib"].get<uint64_t>();
  EXPECT_GE(written_kib, array_bytes / 1024 * 3 / 2);
  EXPECT_GT(io["full_stripe_writes"].get<uint64_t>(), 0u);
  EXPECT_GT(io["parity_seconds"].get<double>(), 0);
  EXPECT_GT(io["cpu_seconds"].get<double>(), 0);
  // Parity is wall-clock time inside the copy's one thread (CI's load can preempt it, so it is
  // not bounded by the CPU time): never more than the copy took.
  EXPECT_LE(io["parity_seconds"].get<double>(), o.json()["seconds"].get<double>());
  o = RunCommand({"copy", spec, "file:" + out});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("src RAID I/O:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Reads Completed:"), std::string::npos) << o.out;
  EXPECT_EQ(ReadFile(out), ReadFile(in));

  o = RunCommand({"raid", "check", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["mismatches"], 0);
  EXPECT_EQ(o.json()["io"]["members"].size(), 3u);
  o = RunCommand({"raid", "check", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("in the RAID I/O path; parity code:"), std::string::npos) << o.out;
  // Bytes flipped on a member: check finds them (and still exits 0), repair fixes them.
  PatchFile(b, (1 << 20) + 100, "garbage");
  o = RunCommand({"raid", "check", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["mismatches"], 1);
  o = RunCommand({"raid", "repair", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["repaired"], 1);
  o = RunCommand({"raid", "check", "--json", a, b, c});
  EXPECT_EQ(o.json()["mismatches"], 0);
  // Restore the data the repair could not know (stripe 0's D1 was flipped).
  o = RunCommand({"copy", in, spec});
  ASSERT_EQ(o.code, 0) << o.err;

  o = RunCommand({"raid", "fail", "--member", b, a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  o = RunCommand({"raid", "status", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["state"], "degraded");
  EXPECT_EQ(o.json()["members"][1]["health"], "failed");
  o = RunCommand({"copy", spec, out});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(ReadFile(out), ReadFile(in)) << "degraded reads";

  o = RunCommand({"raid", "replace", "--old", b, "--new", e, "--wait", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["rebuild"]["completed"], true);
  EXPECT_EQ(o.json()["status"]["members"][1]["name"], e);
  o = RunCommand({"raid", "status", "--json", a, e, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["state"], "clean");
  o = RunCommand({"raid", "fail", "--member", a, a, e, c});
  ASSERT_EQ(o.code, 0) << o.err;
  o = RunCommand({"copy", "raid:" + a + "," + e + "," + c, out});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(ReadFile(out), ReadFile(in)) << "the rebuilt member carries the data";
  o = RunCommand({"raid", "status", a, e, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("degraded"), std::string::npos) << o.out;
}

TEST(RaidCli, BadInputIsOneLineAndExit2) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c");
  const std::string x = d.File("x"), y = d.File("y"), z = d.File("z");
  ASSERT_EQ(RunCommand({"raid", "create", "--size", "4M", "--assume-clean", a, b, c}).code, 0);
  ASSERT_EQ(RunCommand({"raid", "create", "--size", "4M", "--assume-clean", x, y, z}).code, 0);
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"raid", "status", a, b, z}, "different arrays"},
      {{"raid", "create", "--size", "1M", d.File("s1"), d.File("s2"), d.File("s3")},
       "too small"},
      {{"raid", "create", "--chunk", "3000", "--size", "4M", d.File("p1"), d.File("p2"),
        d.File("p3")},
       "power of two"},
      {{"raid", "create", "--chunk", "64K", "--unit", "128K", "--size", "4M", d.File("q1"),
        d.File("q2"), d.File("q3")},
       "larger than the chunk"},
      {{"raid", "create", "--level", "6", "--size", "4M", d.File("r1"), d.File("r2"),
        d.File("r3")},
       "needs 4"},
      {{"raid", "status", d.File("missing"), a}, "no such file"},
      {{"raid", "check", "--sync-window", "1K", a, b, c}, "--sync-window"},
      {{"raid", "create", "--level", "4", "--size", "4M", a}, "--level"},
      {{"copy", "mem:3000", d.File("o")}, "mem:"},
  };
  for (const Case& k : cases) {
    const Outcome o = RunCommand(k.args);
    EXPECT_EQ(o.code, 2) << k.needle << ": " << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find(k.needle), std::string::npos) << o.err;
  }
}

// The parser's side is in tools/cli/device_spec_test.cc (MalformedSpecs, RaidForms).
TEST(RaidCli, EmptyRaidSpecElementIsRefused) {
  // From the command line: exit 2 and one line, before anything is opened or created.
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c"), out = d.File("out");
  ASSERT_EQ(RunCommand({"raid", "create", "--size", "4M", "--assume-clean", a, b, c}).code, 0);
  for (const std::string& spec : {"raid:" + a + "," + b + ",," + c, "raid:" + a + "," + b + ","}) {
    const Outcome o = RunCommand({"copy", spec, out});
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find("empty member path"), std::string::npos) << o.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

TEST(RaidCli, CreateRefusesMembersOfAnArray) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c");
  const std::string x = d.File("x"), y = d.File("y");
  Outcome o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string uuid = o.json()["status"]["array_uuid"];
  const std::string b_before = ReadFile(b);

  // Another array over one of its members: refused, naming the member, its array and slot;
  // nothing created, nothing written.
  o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", x, b, y});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_TRUE(OneLine(o.err)) << o.err;
  EXPECT_NE(o.err.find(b + " belongs to raid5 array " + uuid + " (slot 1); use --force to "
                       "overwrite it"),
            std::string::npos)
      << o.err;
  EXPECT_FALSE(std::filesystem::exists(x));
  EXPECT_FALSE(std::filesystem::exists(y));
  EXPECT_EQ(ReadFile(b), b_before);
  // The same array again: refused too (the first member that carries one is named).
  o = RunCommand({"raid", "create", "--assume-clean", a, b, c});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find(a + " belongs to raid5 array " + uuid + " (slot 0)"), std::string::npos)
      << o.err;

  // --force overwrites.
  o = RunCommand({"raid", "create", "--level", "1", "--size", "4M", "--assume-clean", "--force",
                  "--json", x, b});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.json()["status"]["array_uuid"], uuid);
  o = RunCommand({"raid", "status", "--json", x, b});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["level"], "raid1");
}

// Every option is checked before any member file is made, and a create that fails later
// (a member in use) removes the files it made.
TEST(RaidCli, RefusedCreateLeavesNoFiles) {
  TempDir d;
  const std::string p1 = d.File("p1"), p2 = d.File("p2"), p3 = d.File("p3"), p4 = d.File("p4");
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"--chunk", "3000", "--size", "4M"}, "--chunk 3000: must be a power of two"},
      {{"--chunk", "3000K", "--size", "4M"}, "--chunk 3000K: must be a power of two"},
      {{"--chunk", "64K", "--unit", "128K", "--size", "4M"},
       "--unit 128K: larger than the chunk (64K)"},
      {{"--unit", "12K", "--size", "4M"}, "--unit 12K"},
      {{"--level", "6", "--size", "4M"}, "needs 4"},
      {{"--level", "7", "--size", "4M"}, "--level"},
      {{"--size", "1M"}, "too small"},
      {{"--size", "5000"}, "--size 5000"},
      {{"--bitmap-region", "16K", "--size", "4M"}, "--bitmap-region 16K"},
      {{"--engine", "bogus", "--size", "4M"}, "--engine bogus"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args = {"raid", "create"};
    args.insert(args.end(), k.args.begin(), k.args.end());
    for (const std::string& p : {p1, p2, p3}) args.push_back(p);
    const Outcome o = RunCommand(args);
    EXPECT_EQ(o.code, 2) << k.needle << ": " << o.err;
    EXPECT_TRUE(OneLine(o.err)) << o.err;
    EXPECT_NE(o.err.find(k.needle), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("2.93K"), std::string::npos) << o.err;
    for (const std::string& p : {p1, p2, p3}) EXPECT_FALSE(std::filesystem::exists(p)) << p;
  }
  // A missing member without --size is named before the others are created.
  WriteRandomFile(p3, 4 << 20, 1);
  Outcome o = RunCommand({"raid", "create", p1, p2, p3});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find(p1 + ": no such file; give --size"), std::string::npos) << o.err;
  // p4 exists but another process (here: a lock of this one) uses it: p1 and p2 were
  // created before p4 was found busy, and are removed again.
  WriteRandomFile(p4, 4 << 20, 2);
  {
    auto lock = LockDevicePath(p4);
    ASSERT_TRUE(lock.ok());
    o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", p1, p2, p4});
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_NE(o.err.find("in use"), std::string::npos) << o.err;
    EXPECT_FALSE(std::filesystem::exists(p1));
    EXPECT_FALSE(std::filesystem::exists(p2));
    EXPECT_TRUE(std::filesystem::exists(p4));
  }
  o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", p1, p2, p4});
  EXPECT_EQ(o.code, 0) << o.err;
}

// `status` with a member left out shows the array degraded and writes nothing: every member
// byte stays as it was and the event counter does not move. A write through the degraded
// array then records the missing member as failed, so it cannot rejoin unnoticed.
TEST(RaidCli, StatusNeverWrites) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c");
  Outcome o = RunCommand({"raid", "create", "--size", "4M", "--assume-clean", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  const uint64_t events = o.json()["status"]["events"];
  const std::vector<std::string> before = {ReadFile(a), ReadFile(b), ReadFile(c)};

  for (int i = 0; i < 2; ++i) {
    o = RunCommand({"raid", "status", "--json", a, b});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.json()["state"], "degraded");
    EXPECT_EQ(o.json()["members"][2]["health"], "missing");
    EXPECT_EQ(o.json()["events"], events);
    o = RunCommand({"raid", "status", a, b});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("degraded"), std::string::npos) << o.out;
  }
  EXPECT_EQ(ReadFile(a), before[0]) << "status a b wrote member a";
  EXPECT_EQ(ReadFile(b), before[1]) << "status a b wrote member b";
  EXPECT_EQ(ReadFile(c), before[2]);
  o = RunCommand({"raid", "status", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["state"], "clean");
  EXPECT_EQ(o.json()["events"], events);
  EXPECT_TRUE(o.json()["in_use_by"].is_null());

  // Reading the degraded array changes nothing either.
  const std::string out = d.File("out");
  o = RunCommand({"copy", "raid:" + a + "," + b, out});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(ReadFile(a), before[0]);
  EXPECT_EQ(ReadFile(b), before[1]);

  // Writing to it records c as failed before the data changes.
  const std::string in = d.File("in");
  WriteRandomFile(in, 64 << 10, 5);
  o = RunCommand({"copy", in, "raid:" + a + "," + b});
  ASSERT_EQ(o.code, 0) << o.err;
  o = RunCommand({"raid", "status", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["state"], "degraded");
  EXPECT_EQ(o.json()["members"][2]["health"], "failed") << o.out;
  EXPECT_GT(o.json()["events"].get<uint64_t>(), events);
}

// `status` from another "shell" (here: another thread, with its own open files) while a
// throttled resync runs: it does not need the members' locks, names the process holding
// them, and shows the sync's position and speed (written at each checkpoint).
TEST(RaidCli, StatusShowsARunningSync) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c");
  Outcome o = RunCommand({"raid", "create", "--size", "17M", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_GT(o.json()["status"]["resync_regions"].get<uint64_t>(), 0u);

  std::atomic<bool> cancel{false};
  Status sync_status;
  std::atomic<bool> started{false};
  std::thread syncer([&] {
    std::vector<DeviceLock> locks;
    DeviceOpenOptions io;
    auto members = OpenMembers({a, b, c}, io, &locks);
    if (!members.ok()) {
      sync_status = members.status();
      started = true;
      return;
    }
    auto raid = RaidDevice::Assemble(std::move(*members), {});
    if (!raid.ok()) {
      sync_status = raid.status();
      started = true;
      return;
    }
    started = true;
    RaidSyncOptions so;
    so.speed_limit_max_kib = 2000;  // 16M at ~2 MB/s: far longer than the test waits
    so.cancel = &cancel;
    auto report = (*raid)->Sync(RaidSyncAction::kResync, so);
    sync_status = report.status();
    if (report.ok() && report->completed) sync_status = Status::IOError("resync finished early");
    Status stop = (*raid)->Stop();
    if (sync_status.ok()) sync_status = stop;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(10));

  nlohmann::json seen;
  std::string text;
  for (int i = 0; i < 50; ++i) {  // up to ~5 s; the first checkpoint comes after ~1 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    o = RunCommand({"raid", "status", "--json", a, b, c});
    ASSERT_EQ(o.code, 0) << o.err;
    const nlohmann::json j = o.json();
    if (j["sync"]["position_bytes"].get<uint64_t>() > 0 &&
        j["sync"]["speed_bytes_per_s"].get<double>() > 0) {
      seen = j;
      text = RunCommand({"raid", "status", a, b, c}).out;
      break;
    }
  }
  cancel = true;
  syncer.join();
  ASSERT_TRUE(sync_status.ok()) << sync_status.ToString();
  ASSERT_FALSE(seen.is_null()) << "status never showed the running resync: " << o.out;
  EXPECT_EQ(seen["sync"]["action"], "resync");
  EXPECT_GT(seen["sync"]["eta_s"].get<double>(), 0);
  EXPECT_GT(seen["sync"]["updated_unix_ms"].get<uint64_t>(), 0u);
  ASSERT_TRUE(seen["in_use_by"].is_string());
  EXPECT_NE(seen["in_use_by"].get<std::string>().find("process " + std::to_string(getpid())),
            std::string::npos);
  EXPECT_NE(text.find("speed "), std::string::npos) << text;
  EXPECT_NE(text.find(" eta "), std::string::npos) << text;
  EXPECT_NE(text.find("in use by process"), std::string::npos) << text;

  // Stopped at a checkpoint: the position stays (resumable), the speed is gone.
  o = RunCommand({"raid", "status", "--json", a, b, c});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.json()["sync"]["action"], "resync");
  EXPECT_GT(o.json()["sync"]["position_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(o.json()["sync"]["speed_bytes_per_s"].get<double>(), 0);
  EXPECT_TRUE(o.json()["in_use_by"].is_null());
}

// check / repair / resync / rebuild always run to the end (or --for) in the foreground:
// they take no --wait, and their help says so.
TEST(RaidCli, SyncCommandsHaveNoWaitFlag) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b"), c = d.File("c");
  ASSERT_EQ(RunCommand({"raid", "create", "--size", "4M", "--assume-clean", a, b, c}).code, 0);
  for (const std::string& cmd : std::vector<std::string>{"check", "repair", "resync", "rebuild"}) {
    const Outcome o = RunCommand({"raid", cmd, "--wait", a, b, c});
    EXPECT_EQ(o.code, 2) << cmd;
    EXPECT_NE(o.err.find("--wait"), std::string::npos) << o.err;
  }
  CLI::App root("test", "folio");
  const Command raid = RegisterRaidCommands(root);
  for (const std::string& cmd : std::vector<std::string>{"check", "repair", "resync", "rebuild"}) {
    const std::string help = raid.app->get_subcommand(cmd)->help();
    EXPECT_EQ(help.find("--wait"), std::string::npos) << help;
    EXPECT_NE(help.find("foreground"), std::string::npos) << help;
  }
  EXPECT_NE(raid.app->get_subcommand("create")->help().find("--wait"), std::string::npos);
  EXPECT_EQ(RunCommand({"raid", "check", a, b, c}).code, 0);
}

TEST(RaidCli, ResyncBenchJson) {
  TempDir d;
  const Outcome o = RunCommand({"raid", "resync-bench", "--members", "3", "--size", "4M", "--units",
                         "4K,dynamic", "--dir", d.File(""), "--json"});
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json j = o.json();
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["unit"], "4K");
  EXPECT_EQ(j["results"][1]["unit"], "dynamic");
  for (const auto& r : j["results"]) {
    EXPECT_GT(r["mb_per_s"].get<double>(), 0);
    EXPECT_GE(r["cpu_s_per_gib"].get<double>(), 0);
    EXPECT_GT(r["stripes_rewritten"].get<uint64_t>(), 0u) << "random members: parity rewritten";
    ASSERT_EQ(r["members"].size(), 3u);
    EXPECT_GT(r["members"][0]["reads_completed"].get<uint64_t>(), 0u);
  }
  // Bigger units mean fewer, larger member requests.
  EXPECT_LT(j["results"][1]["members"][0]["reads_completed"].get<uint64_t>(),
            j["results"][0]["members"][0]["reads_completed"].get<uint64_t>());
  EXPECT_GT(j["full_stripe_write_mb_per_s"].get<double>(), 0);
  EXPECT_GT(j["degraded_read_mb_per_s"].get<double>(), 0);
}

}  // namespace
}  // namespace folio::cli
