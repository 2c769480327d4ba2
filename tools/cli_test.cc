// Integration test of the `folio` binary: exit codes and one-line errors for bad input,
// doctor's JSON, tiny bench runs through every engine, and bench --device on mem:, file: and
// raid: devices.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "io/io_test_util.h"

namespace {

using folio::cli::test::CliTest;
using folio::cli::test::Outcome;
using folio::cli::test::Slurp;

// Whether [from, to) of the file holds only zero bytes.
bool AllZero(const std::string& path, size_t from, size_t to) {
  const std::string data = Slurp(path);
  if (data.size() < to) return false;
  for (size_t i = from; i < to; ++i) {
    if (data[i] != 0) return false;
  }
  return true;
}

TEST_F(CliTest, HelpAndVersion) {
  Outcome o = Run({"--version"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, "folio 0.1.0\n");
  o = Run({"--help"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("doctor"), std::string::npos);
  EXPECT_NE(o.out.find("bench"), std::string::npos);
  for (const char* sub : {"doctor", "bench"}) {
    o = Run({sub, "--help"});
    EXPECT_EQ(o.exit_code, 0) << sub;
    EXPECT_NE(o.out.find("--"), std::string::npos) << sub;
    EXPECT_EQ(o.err, "") << sub;
  }
}

TEST_F(CliTest, UsageErrorsAreOneLineAndExitTwo) {
  const std::string good = WriteFile("good.fio", "[j]\nsize=8M\nrw=randread\n");
  ExpectUsageError({}, {"folio: ", "--help"});
  ExpectUsageError({"--frobnicate"}, {"--frobnicate", "folio --help"});
  ExpectUsageError({"bench", "--frobnicate", good}, {"--frobnicate", "folio bench --help"});
  ExpectUsageError({"bench"}, {"JOBFILE", "folio bench --help"});
  ExpectUsageError({"bench", "--cache", "12Q", good},
                   {"folio bench: --cache 12Q: not a size; use e.g. 256M or 4G"});
  ExpectUsageError({"bench", "--engine", "xfs", good}, {"folio bench: --engine xfs: unknown engine"});
  ExpectUsageError({"bench", "--engine", "folio:fixed:3k", good}, {"folio:fixed:3k", "power of two"});
  ExpectUsageError({"bench", "--output-format", "xml", good}, {"--output-format xml"});
  ExpectUsageError({"bench", dir_ + "/missing.fio"}, {"folio bench: ", dir_ + "/missing.fio"});
  ExpectUsageError({"bench", "--dir", "/nonexistent-folio", good},
                   {"--dir /nonexistent-folio: no such directory"});
  ExpectUsageError({"doctor", "--dir", "/nonexistent-folio"},
                   {"folio doctor: --dir /nonexistent-folio: no such directory"});
  const std::string unknown = WriteFile("unknown.fio", "[global]\nsize=8M\n[j]\nfoo=1\n");
  ExpectUsageError({"bench", unknown}, {unknown + ":4: unknown key 'foo'; supported: rw, bs"});
  const std::string bad_rw = WriteFile("badrw.fio", "[j]\nsize=8M\nrw=sideways\n");
  ExpectUsageError({"bench", bad_rw}, {bad_rw + ":3: rw=sideways: not a supported mode"});
  const std::string huge = WriteFile("huge.fio", "[a]\nsize=6G\n[b]\nsize=6G\n");
  ExpectUsageError({"bench", huge}, {"over the 8G limit"});
  // The writeback knobs (vm.dirty_* names and units).
  ExpectUsageError({"bench", "--dirty-ratio", "0", good},
                   {"folio bench: --dirty-ratio 0: not a whole number of percent of --cache in 1..100"});
  ExpectUsageError({"bench", "--dirty-ratio", "20", "--dirty-bytes", "64M", good},
                   {"--dirty-ratio 20 and --dirty-bytes 64M: give one of the two"});
  ExpectUsageError({"bench", "--dirty-background-bytes", "1x", good},
                   {"--dirty-background-bytes 1x: not a size of at least 4K"});
  ExpectUsageError({"bench", "--cache", "64M", "--dirty-background-ratio", "30", "--dirty-ratio",
                    "30", good},
                   {"background 19.20M is not below the limit 19.20M", "--dirty-ratio"});
  ExpectUsageError({"bench", "--dirty-expire-centisecs", "2.5", good},
                   {"--dirty-expire-centisecs 2.5: not a whole number of centiseconds"});
  ExpectUsageError({"export", "--mount", dir_, "--dirty-writeback-centisecs", "0", "mem:16M"},
                   {"folio export: --dirty-writeback-centisecs 0"});
  ExpectUsageError({"bench", "--compaction-background", "yes", good},
                   {"folio bench: --compaction-background yes: use on or off"});
  ExpectUsageError({"export", "--mount", dir_, "--compaction-background", "1", "mem:16M"},
                   {"folio export: --compaction-background 1: use on or off"});
}

TEST_F(CliTest, DoctorJsonHasTheExpectedKeys) {
  Outcome o = Run({"doctor", "--json", "--dir", dir_});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  for (const char* key : {"system", "thp", "hugetlb", "io_uring", "o_direct", "fuse", "cpu"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["system"]["page_size_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(j["thp"]["enabled"].is_string());
  EXPECT_TRUE(j["io_uring"]["ok"].is_boolean());
  EXPECT_EQ(j["o_direct"]["dir"], dir_);
  EXPECT_TRUE(j["cpu"]["features"].is_object());
  EXPECT_GT(j["cpu"]["cache_line_bytes"].get<int>(), 0);
  // The table form works too.
  o = Run({"doctor", "--dir", dir_});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("io_uring"), std::string::npos);
  EXPECT_NE(o.out.find("Dispatch"), std::string::npos);
}

// doctor shows what each hot path chose; the FOLIO_* variables change it.
TEST_F(CliTest, DoctorShowsTheDispatchAndTheVariablesChangeIt) {
  auto row = [](const nlohmann::json& j, const std::string& path) {
    for (const auto& r : j["dispatch"]) {
      if (r["path"] == path) return r;
    }
    ADD_FAILURE() << "no dispatch row " << path;
    return nlohmann::json::object();
  };
  Outcome o = Run({"doctor", "--json", "--dir", dir_});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  nlohmann::json crc = row(j, "crc32c");
  EXPECT_EQ(crc["variable"], "FOLIO_CRC");
  EXPECT_EQ(crc["request"], "auto");
  EXPECT_NE(crc["detail"].get<std::string>().find("crc32_iscsi"), std::string::npos);
  EXPECT_EQ(row(j, "copy into folios")["request"], "auto");
  EXPECT_TRUE(row(j, "atomics").contains("chosen"));
  EXPECT_TRUE(row(j, "false-sharing padding").contains("detail"));

  o = Run({"doctor", "--json", "--dir", dir_}, {"FOLIO_CRC=sw", "FOLIO_COPY=glibc"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  EXPECT_EQ(row(j, "crc32c")["chosen"], "sw");
  EXPECT_EQ(row(j, "crc32c")["request"], "sw");
  EXPECT_EQ(row(j, "copy into folios")["chosen"], "glibc");
  EXPECT_EQ(row(j, "copy out of folios")["chosen"], "glibc");
}

// An invalid FOLIO_* value stops any command at start: one line naming it, exit 2.
TEST_F(CliTest, InvalidDispatchVariableIsOneLineExitTwo) {
  for (const auto& [env, needle] : std::vector<std::pair<std::string, std::string>>{
           {"FOLIO_CRC=fast", "folio: FOLIO_CRC=fast: must be auto, hw or sw"},
           {"FOLIO_COPY=turbo", "folio: FOLIO_COPY=turbo: must be auto, glibc"},
           {"FOLIO_ATOMICS=tso", "folio: FOLIO_ATOMICS=tso: must be auto, lse or llsc"}}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"doctor"}, std::vector<std::string>{"bench", "--help"}}) {
      Outcome o = Run(args, {env});
      SCOPED_TRACE(env + " folio " + args[0]);
      EXPECT_EQ(o.exit_code, 2) << o.err;
      EXPECT_EQ(o.out, "");
      EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
      EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
    }
  }
  // A kernel of the other ISA names what this CPU can run instead.
#if defined(__x86_64__)
  Outcome o = Run({"doctor"}, {"FOLIO_COPY=neon"});
#else
  Outcome o = Run({"doctor"}, {"FOLIO_COPY=avx2"});
#endif
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("cannot run that kernel; use auto, glibc"), std::string::npos) << o.err;
}

TEST_F(CliTest, TinyBenchRunsEveryEngine) {
  const std::string job = WriteFile("tiny.fio",
                                    "[global]\nsize=8M\nruntime=1\ntime_based\n"
                                    "[rr]\nrw=randread\nbs=4k\npre_read=1\n"
                                    "[sw]\nrw=write\nbs=64k\n");
  const std::string plot = dir_ + "/plot.svg";
  Outcome o = Run({"bench", "--cache", "64M", "--dir", dir_, "--output-format=json", "--plot",
                   plot, "--seed", "42", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["fio version"], "folio-0.1.0");
  ASSERT_EQ(j["jobs"].size(), 10u) << "2 jobs x 5 engines";
  std::vector<std::string> engines;
  for (const auto& run : j["jobs"]) {
    const std::string dir = run["jobname"] == "rr" ? "read" : "write";
    SCOPED_TRACE(run["jobname"].get<std::string>() + " " + run["engine"].get<std::string>());
    EXPECT_GT(run[dir]["iops"].get<double>(), 0);
    EXPECT_GT(run[dir]["io_bytes"].get<uint64_t>(), 0u);
    EXPECT_TRUE(run[dir]["clat_ns"]["percentile"].contains("99.000000"));
    EXPECT_EQ(run["seed"].get<uint64_t>(), run["jobname"] == "rr" ? 42u : 43u);
    const std::string engine = run["engine"];
    EXPECT_EQ(run.contains("folio"), engine.starts_with("folio:"));
    if (engine == "limit") {
      EXPECT_EQ(run["memory"]["kind"], "buffer");
      EXPECT_EQ(run["memory"]["limit_bytes"].get<uint64_t>(), 8u << 20);
      EXPECT_FALSE(run.contains("hit_ratio"));
    } else if (engine == "kernel") {
      const std::string kind = run["memory"]["kind"];
      EXPECT_TRUE(kind == "cgroup v1" || kind == "cgroup v2" || kind == "machine") << kind;
    } else {
      EXPECT_EQ(run["memory"]["kind"], "cache");
      EXPECT_EQ(run["memory"]["limit_bytes"].get<uint64_t>(), 64u << 20);
    }
    // The read job's cache engines measure a hit ratio (pre_read: the 8M file fits).
    if (run["jobname"] == "rr" && engine != "limit") {
      ASSERT_TRUE(run.contains("hit_ratio"));
      EXPECT_GE(run["hit_ratio"].get<double>(), 0.0);
      EXPECT_LE(run["hit_ratio"].get<double>(), 1.0);
    }
    if (run["jobname"] == "rr") engines.push_back(engine);
  }
  EXPECT_EQ(engines, (std::vector<std::string>{"limit", "kernel", "folio:4k", "folio:fixed:64k",
                                               "folio:dynamic"}));
  const std::string svg = Slurp(plot);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // The data directory was removed: only our own files remain in dir_.
  EXPECT_EQ(std::system(("test -z \"$(ls -d '" + dir_ + "'/folio-bench.* 2>/dev/null)\"").c_str()), 0);
}

// kernel:4k runs the pre-reading job with the file in 4 KiB folios (what the census says, as
// root on a real kernel) and skips the job without pre_read, saying why.
TEST_F(CliTest, KernelWithFourKiBFoliosRunsOnlyPreReadJobs) {
  const std::string job = WriteFile("k4k.fio",
                                    "[global]\nsize=8M\nruntime=1\ntime_based\n"
                                    "[rr]\nrw=randread\nbs=4k\npre_read=1\n"
                                    "[sw]\nrw=write\nbs=64k\n");
  Outcome o = Run({"bench", "--cache", "64M", "--dir", dir_, "--output-format=json", "--engine",
                   "kernel,kernel:4k", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  std::vector<std::string> runs;
  for (const auto& run : j["jobs"]) {
    const std::string name = run["jobname"].get<std::string>() + " " +
                             run["engine"].get<std::string>();
    runs.push_back(name);
    if (name != "rr kernel:4k") continue;
    const std::string notes = run["notes"].dump();
    EXPECT_NE(notes.find("with POSIX_FADV_RANDOM (no readahead, so in 4 KiB folios)"),
              std::string::npos) << notes;
    if (run.contains("kernel_folios")) {
      const nlohmann::json& k = run["kernel_folios"];
      EXPECT_EQ(k["pages"], 2048);
      EXPECT_EQ(k["folios"], k["resident_pages"]) << k.dump();
      EXPECT_EQ(k["pages_by_folio_bytes"].size(), 1u) << k.dump();
      EXPECT_EQ(k["pages_by_folio_bytes"]["4096"], k["resident_pages"]) << k.dump();
    } else {
      EXPECT_NE(notes.find("folios are not known"), std::string::npos) << notes;
    }
  }
  EXPECT_EQ(runs, (std::vector<std::string>{"rr kernel", "rr kernel:4k", "sw kernel"}));
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "kernel,kernel:4k", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("kernel:4k skipped: its 4 KiB folios come from a pre-read without "
                       "readahead, and this job has no pre_read=1"),
            std::string::npos) << o.out;
}

TEST_F(CliTest, TinyDirectBenchAndTable) {
  FOLIO_SKIP_WITHOUT_IO_URING();  // the kernel engine's direct=1 path is io_uring itself
  const std::string job = WriteFile("direct.fio",
                                    "[dr]\nsize=8M\nruntime=1\ntime_based\nrw=randread\nbs=4k\n"
                                    "direct=1\niodepth=8\n");
  Outcome o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "kernel,folio:dynamic",
                   job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("[dr] rw=randread"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("folio:dynamic"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("vs kernel"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Legend"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("O_DIRECT through io_uring, 8 in flight per thread"), std::string::npos)
      << o.out;
  EXPECT_EQ(o.err, "") << "no progress line when stderr is not a TTY";
  // --repeat: three runs per engine, the engines taking turns; each compares its median run.
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "kernel,folio:dynamic",
           "--repeat", "3", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("kernel: the median of 3 runs; IOPS per run, in order: "),
            std::string::npos) << o.out;
  EXPECT_NE(o.out.find("folio:dynamic: the median of 3 runs"), std::string::npos) << o.out;
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "kernel,folio:dynamic",
           "--repeat", "2", "--output-format", "json", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json repeated = nlohmann::json::parse(o.out);
  ASSERT_EQ(repeated["jobs"].size(), 2u) << "one entry per engine: its median run";
  EXPECT_EQ(repeated["jobs"][0]["round_iops"].size(), 2u);
  EXPECT_EQ(repeated["jobs"][1]["round_iops"].size(), 2u);
  // iodepth_batch (fio's alias of iodepth_batch_submit): 4 queued ops per submission.
  const std::string batched = WriteFile("batched.fio",
                                        "[db]\nsize=8M\nruntime=1\ntime_based\nrw=randread\n"
                                        "bs=4k\ndirect=1\niodepth=8\niodepth_batch=4\n");
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "kernel,folio:dynamic",
           "--output-format", "json", batched});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json b = nlohmann::json::parse(o.out);
  ASSERT_EQ(b["jobs"].size(), 2u);
  EXPECT_EQ(b["jobs"][0]["job options"]["iodepth_batch_submit"], "4");
  EXPECT_GT(b["jobs"][1]["read"]["total_ios"].get<uint64_t>(), 0u);
  // The default engines: limit is skipped for direct=1 with a note; cached jobs show vs limit.
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "limit,folio:4k", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("limit skipped"), std::string::npos) << o.out;
  const std::string cached = WriteFile("cached.fio",
                                       "[cr]\nsize=8M\nruntime=1\ntime_based\nrw=randread\n"
                                       "bs=4k\npre_read=1\nrandom_distribution=zipf:1.1\n");
  o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "limit,folio:4k", cached});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("vs limit"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("random_distribution=zipf:1.1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("hit %"), std::string::npos) << o.out;
}

// The path of this process's memory cgroup's parent directory (where the bench makes its
// child), or "" when there is no v1 memory mount or cgroup2.
std::string MemoryCgroupHome() {
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type, opts, rest, v1, v2;
  while (mounts >> dev >> dir >> type >> opts) {
    std::getline(mounts, rest);
    if (type == "cgroup" && ("," + opts + ",").find(",memory,") != std::string::npos) v1 = dir;
    if (type == "cgroup2") v2 = dir;
  }
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string rel = line.substr(b + 1) == "/" ? "" : line.substr(b + 1);
    if (!v1.empty() && ("," + controllers + ",").find(",memory,") != std::string::npos) {
      return v1 + rel;
    }
    if (v1.empty() && !v2.empty() && line.rfind("0::", 0) == 0) return v2 + rel;
  }
  return "";
}

// Equal memory: the kernel engine runs in a memory cgroup capped at --cache (made, applied to
// the page cache, and removed afterwards), or with --kernel-memory all without one.
TEST_F(CliTest, BenchKernelRunsInAMemoryCgroup) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: creating a memory cgroup needs root";
  // A 64M file read at random after pre_read, with 32M of memory: at most about half of it
  // can stay cached, while all memory keeps all of it.
  const std::string job = WriteFile("eq.fio", "[eq]\nsize=64M\nrw=randread\nbs=4k\n"
                                              "pre_read=1\nruntime=1\ntime_based\n");
  Outcome o = Run({"bench", "--cache", "32M", "--dir", dir_, "--engine", "kernel",
                   "--output-format=json", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json run = nlohmann::json::parse(o.out)["jobs"][0];
  const std::string kind = run["memory"]["kind"];
  if (kind == "machine") {
    GTEST_SKIP() << "no memory cgroup here: " << run["memory"]["why"].get<std::string>();
  }
  EXPECT_TRUE(kind == "cgroup v1" || kind == "cgroup v2") << kind;
  EXPECT_EQ(run["memory"]["limit_bytes"].get<uint64_t>(), 32u << 20);
  const std::string cgroup = run["memory"]["cgroup"];
  EXPECT_EQ(cgroup.substr(0, cgroup.rfind('/')), MemoryCgroupHome());
  EXPECT_NE(cgroup.find("/folio-bench."), std::string::npos) << cgroup;
  EXPECT_GT(run["memory"]["peak_bytes"].get<uint64_t>(), 8u << 20) << "the page cache was charged";
  EXPECT_LE(run["memory"]["peak_bytes"].get<uint64_t>(), 32u << 20) << "and capped";
  EXPECT_LT(run["hit_ratio"].get<double>(), 0.75) << "re-reads beyond 32M went to disk";
  EXPECT_NE(access(cgroup.c_str(), F_OK), 0) << cgroup << " was not removed";

  o = Run({"bench", "--cache", "32M", "--dir", dir_, "--engine", "kernel", "--kernel-memory",
           "all", "--output-format=json", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  run = nlohmann::json::parse(o.out)["jobs"][0];
  EXPECT_EQ(run["memory"]["kind"], "machine");
  EXPECT_EQ(run["memory"]["why"], "--kernel-memory all");
  EXPECT_GT(run["hit_ratio"].get<double>(), 0.8) << "all memory holds the whole file";

  ExpectUsageError({"bench", "--kernel-memory", "lots", job},
                   {"--kernel-memory lots: use cache (the default: --cache), all"});
}

// The fio engine runs the job through Debian's fio and reads its JSON, beside Folio's rows.
TEST_F(CliTest, BenchFioEngineRunsRealFio) {
  if (std::system("command -v fio >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no fio binary (apt-get install fio)";
  }
  const std::string job = WriteFile("fio.fio",
                                    "[global]\nsize=8M\nruntime=1\ntime_based\nbs=4k\n"
                                    "[dr]\nrw=randread\ndirect=1\niodepth=8\n"
                                    "[zw]\nrw=randwrite\nrandom_distribution=zipf:1.2\n"
                                    "fsync=16\n");
  Outcome o = Run({"bench", "--cache", "64M", "--dir", dir_, "--engine", "fio,folio:dynamic",
                   "--output-format=json", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["jobs"].size(), 4u);
  for (const auto& run : j["jobs"]) {
    SCOPED_TRACE(run["jobname"].get<std::string>() + " " + run["engine"].get<std::string>());
    const std::string dir = run["jobname"] == "dr" ? "read" : "write";
    EXPECT_GT(run[dir]["iops"].get<double>(), 0);
    EXPECT_GT(run[dir]["clat_ns"]["percentile"]["99.000000"].get<uint64_t>(), 0u);
    if (run["engine"] != "fio") continue;
    const std::string note = run["notes"][0];
    EXPECT_NE(note.find("--ioengine=io_uring"), std::string::npos) << note;
    EXPECT_NE(note.find(dir == "read" ? "--iodepth=8" : "--random_distribution=zipf:1.2"),
              std::string::npos) << note;
    if (dir == "write") {
      EXPECT_GT(run["sync"]["total_ios"].get<uint64_t>(), 0u) << "fsync=16 reached fio";
      const std::string kind = run["memory"]["kind"];
      EXPECT_TRUE(kind == "cgroup v1" || kind == "cgroup v2" || kind == "machine") << kind;
    }
  }
}

// SIGINT in the middle of a kernel run: exit 130 and the cgroup is gone.
TEST_F(CliTest, BenchRemovesItsCgroupOnSigint) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: creating a memory cgroup needs root";
  const std::string home = MemoryCgroupHome();
  if (home.empty()) GTEST_SKIP() << "no memory cgroup controller mounted";
  const std::string job = WriteFile("long.fio", "[long]\nsize=16M\nrw=randread\nbs=4k\n"
                                                "runtime=60\ntime_based\n");
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    ExecFolio({"bench", "--cache", "32M", "--dir", dir_, "--engine", "kernel", job});
    _exit(127);
  }
  const std::string cgroup = home + "/folio-bench." + std::to_string(pid);
  bool seen = false;
  for (int i = 0; i < 300 && !seen; ++i) {  // up to 30 s for the 16M data file and the cgroup
    seen = access(cgroup.c_str(), F_OK) == 0;
    if (!seen) usleep(100000);
  }
  usleep(300000);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << cgroup << " never appeared";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  EXPECT_NE(access(cgroup.c_str(), F_OK), 0) << cgroup << " left behind";
}

}  // namespace

namespace {

TEST_F(CliTest, BenchOnMemDevice) {
  const std::string job = WriteFile("mem.fio",
                                    "[rr]\nrw=randread\nbs=4k\nsize=8M\nruntime=1\ntime_based\n"
                                    "pre_read=1\n"
                                    "[dw]\nrw=randwrite\nbs=4k\nsize=4M\ndirect=1\niodepth=4\n"
                                    "runtime=1\ntime_based\n");
  Outcome o = Run({"bench", "--cache", "64M", "--dir", dir_, "--device", "mem:64M",
                   "--output-format=json", "--seed", "7", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.err, "");
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["device"]["spec"], "mem:64M");
  EXPECT_EQ(j["device"]["bytes"].get<uint64_t>(), 64u << 20);
  EXPECT_EQ(j["device"]["skipped_engines"], nlohmann::json::array({"kernel"}))
      << "kernel leaves the default engines on a mem: device";
  ASSERT_EQ(j["jobs"].size(), 7u) << "rr: limit and the 3 folio engines; dw (direct): the 3";
  for (const auto& run : j["jobs"]) {
    SCOPED_TRACE(run["jobname"].get<std::string>() + " " + run["engine"].get<std::string>());
    EXPECT_NE(run["engine"], "kernel");
    if (run["engine"] == "limit") continue;  // memcpy: no device
    EXPECT_EQ(run["filename"], "mem:64M");
    EXPECT_EQ(run["device"], "mem:64M");
    const bool reads = run["jobname"] == "rr";
    const std::string dir = reads ? "read" : "write";
    EXPECT_GT(run[dir]["iops"].get<double>(), 0);
    EXPECT_GT(run[dir]["io_bytes"].get<uint64_t>(), 0u);
    if (reads) {
      EXPECT_EQ(run["folio"]["cache_used"], true);
    } else {
      // direct=1: the requests went to the device through the io layer.
      EXPECT_EQ(run["folio"]["cache_used"], false);
      EXPECT_GT(run["folio"]["device"]["write_requests"].get<uint64_t>(), 0u);
    }
  }
  // No temp data directory: the device is the data.
  EXPECT_EQ(std::system(("test -z \"$(ls -d '" + dir_ + "'/folio-bench.* 2>/dev/null)\"").c_str()), 0);

  // The table form names the device and the skipped engine. A job without size covers the
  // whole device (bounded: each engine reads it once).
  const std::string once = WriteFile("once.fio", "[once]\nrw=read\nbs=64k\n");
  o = Run({"bench", "--cache", "64M", "--device", "mem:16M", "--engine", "folio:dynamic", once});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("device mem:16M"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("skipped"), std::string::npos) << "--engine chose the engines";
  o = Run({"bench", "--cache", "64M", "--device", "mem:16M", "--output-format=json", once});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["jobs"].size(), 4u);
  EXPECT_EQ(j["jobs"][1]["read"]["io_bytes"].get<uint64_t>(), 16u << 20);
  o = Run({"bench", "--cache", "64M", "--device", "mem:16M", once});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("kernel skipped"), std::string::npos) << o.out;
}

TEST_F(CliTest, BenchOnFileDeviceLaysDownDataForReads) {
  const std::string dev = ZeroFile("dev.img", 8 << 20);
  // Size-based (no runtime): each engine reads the first 4M once.
  const std::string job = WriteFile("file.fio", "[r]\nrw=read\nbs=64k\nsize=4M\n"
                                                "filename=/nonexistent/ignored\n");
  Outcome o = Run({"bench", "--cache", "64M", "--device", "file:" + dev, "--output-format=json",
                   job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["device"]["skipped_engines"].size(), 0u);
  ASSERT_EQ(j["jobs"].size(), 5u) << "the kernel engine runs on a file: device";
  EXPECT_EQ(j["jobs"][1]["engine"], "kernel");
  for (const auto& run : j["jobs"]) {
    SCOPED_TRACE(run["engine"].get<std::string>());
    EXPECT_EQ(run["filename"], "file:" + dev);
    EXPECT_EQ(run["read"]["io_bytes"].get<uint64_t>(), 4u << 20);
  }
  EXPECT_FALSE(AllZero(dev, 0, 4 << 20)) << "data laid down where the job reads";
  EXPECT_TRUE(AllZero(dev, 4 << 20, 8 << 20)) << "nothing beyond the job's size";

  // A write-only job lays nothing down first.
  const std::string dev2 = ZeroFile("dev2.img", 8 << 20);
  const std::string wjob = WriteFile("w.fio", "[w]\nrw=write\nbs=64k\nsize=2M\n");
  o = Run({"bench", "--cache", "64M", "--device", dev2, "--engine", "folio:4k", wjob});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_FALSE(AllZero(dev2, 0, 2 << 20)) << "the job wrote its 2M";
  EXPECT_TRUE(AllZero(dev2, 2 << 20, 8 << 20));
}

TEST_F(CliTest, BenchOnRaidDevice) {
  const std::string a = dir_ + "/m0", b = dir_ + "/m1", c = dir_ + "/m2";
  Outcome o = Run({"raid", "create", "--level", "5", "--chunk", "64K", "--size", "8M",
                   "--assume-clean", a, b, c});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string spec = "raid:" + a + "," + b + "," + c;
  const std::string job = WriteFile("raid.fio",
                                    "[rr]\nrw=randread\nbs=4k\nsize=8M\nruntime=1\ntime_based\n"
                                    "[dw]\nrw=randwrite\nbs=16k\nsize=8M\ndirect=1\niodepth=8\n"
                                    "runtime=1\ntime_based\n");
  o = Run({"bench", "--cache", "64M", "--device", spec, "--engine", "folio:4k,folio:dynamic",
           "--output-format=json", job});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["device"]["spec"], spec);
  ASSERT_EQ(j["jobs"].size(), 4u);
  for (const auto& run : j["jobs"]) {
    SCOPED_TRACE(run["jobname"].get<std::string>() + " " + run["engine"].get<std::string>());
    const std::string dir = run["jobname"] == "rr" ? "read" : "write";
    EXPECT_GT(run[dir]["iops"].get<double>(), 0);
    EXPECT_GT(run["folio"]["device"][dir + "_requests"].get<uint64_t>(), 0u);
  }
  // The volume is stopped clean and unlocked afterwards: status sees it, check finds it
  // consistent (the bench wrote through the RAID layer, parity included).
  o = Run({"raid", "check", "--json", a, b, c});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["mismatches"], 0);
}

TEST_F(CliTest, BenchDeviceBadInput) {
  const std::string job = WriteFile("j.fio", "[j]\nrw=randread\nsize=8M\n");
  ExpectUsageError({"bench", "--device", "nvme:0", job}, {"--device nvme:0", "no such file"});
  ExpectUsageError({"bench", "--device", "raid:" + dir_ + "/only", job},
                   {"raid:", "two or more"});
  ExpectUsageError({"bench", "--device", "mem:3000", job}, {"mem:3000", "multiple of 4K"});
  ExpectUsageError({"bench", "--device", "mem:4M", job},
                   {"job 'j'", "size=8M", "mem:4M", "4M"});
  ExpectUsageError({"bench", "--device", "mem:64M", "--engine", "kernel", job},
                   {"--engine kernel", "mem:64M"});
  ExpectUsageError({"bench", "--device", "mem:64M", "--engine", "folio:4k,kernel", job},
                   {"--engine kernel", "file:"});
}

}  // namespace
