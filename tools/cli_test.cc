// Integration test of the `folio` binary: exit codes and one-line errors for bad input,
// doctor's JSON, and tiny bench runs through every engine.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/folio-cli-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }

  // Runs the folio binary with args; stdout / stderr go through files (no pipe deadlock).
  Outcome Run(const std::vector<std::string>& args) {
    const std::string out_path = dir_ + "/stdout", err_path = dir_ + "/stderr";
    pid_t pid = fork();
    if (pid == 0) {
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> argv{const_cast<char*>(FOLIO_BINARY)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(FOLIO_BINARY, argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Outcome o;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = Slurp(out_path);
    o.err = Slurp(err_path);
    return o;
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // A usage error: exit 2 and exactly one stderr line containing every needle.
  void ExpectUsageError(const std::vector<std::string>& args,
                        const std::vector<std::string>& needles) {
    Outcome o = Run(args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    SCOPED_TRACE("folio" + cmd);
    EXPECT_EQ(o.exit_code, 2) << o.err;
    ASSERT_FALSE(o.err.empty());
    EXPECT_EQ(o.err.back(), '\n');
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "one line only:\n" << o.err;
    for (const std::string& n : needles) EXPECT_NE(o.err.find(n), std::string::npos) << o.err;
  }

  std::string dir_;
};

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
  ASSERT_EQ(j["jobs"].size(), 8u) << "2 jobs x 4 engines";
  std::vector<std::string> engines;
  for (const auto& run : j["jobs"]) {
    const std::string dir = run["jobname"] == "rr" ? "read" : "write";
    SCOPED_TRACE(run["jobname"].get<std::string>() + " " + run["engine"].get<std::string>());
    EXPECT_GT(run[dir]["iops"].get<double>(), 0);
    EXPECT_GT(run[dir]["io_bytes"].get<uint64_t>(), 0u);
    EXPECT_TRUE(run[dir]["clat_ns"]["percentile"].contains("99.000000"));
    EXPECT_EQ(run["seed"].get<uint64_t>(), run["jobname"] == "rr" ? 42u : 43u);
    EXPECT_EQ(run.contains("folio"), run["engine"] != "kernel");
    if (run["jobname"] == "rr") engines.push_back(run["engine"]);
  }
  EXPECT_EQ(engines, (std::vector<std::string>{"kernel", "folio:4k", "folio:fixed:64k",
                                               "folio:dynamic"}));
  const std::string svg = Slurp(plot);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // The data directory was removed: only our own files remain in dir_.
  EXPECT_EQ(std::system(("test -z \"$(ls -d '" + dir_ + "'/folio-bench.* 2>/dev/null)\"").c_str()), 0);
}

TEST_F(CliTest, TinyDirectBenchAndTable) {
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
  EXPECT_EQ(o.err, "") << "no progress line when stderr is not a TTY";
}

}  // namespace
