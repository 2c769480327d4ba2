// The fixture of the tests that run the built `folio` binary (FOLIO_BINARY): a temp directory,
// a Run that captures exit code, stdout and stderr, and the check every bad input must pass
// (exit 2 or 1, exactly one line on stderr naming the thing and the fix: one_line_test_util.h).
//
// Thread safety: one test at a time (fork + exec of the binary).
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "one_line_test_util.h"

namespace folio::cli::test {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::string& path) {
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

  // In a child process: becomes the folio binary running args. A cross build runs the binary
  // through its emulator (FOLIO_EMULATOR: cmake/qemu-aarch64.sh; "" natively): the kernel
  // cannot run an aarch64 binary itself. Returns only when exec failed.
  static void ExecFolio(const std::vector<std::string>& args) {
    const std::string emulator = FOLIO_EMULATOR;
    std::vector<char*> argv;
    if (!emulator.empty()) argv.push_back(const_cast<char*>(emulator.c_str()));
    argv.push_back(const_cast<char*>(FOLIO_BINARY));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
  }

  // Runs the folio binary with args (and `env`, NAME=VALUE entries set in the child only);
  // stdout / stderr go through files (no pipe deadlock).
  Outcome Run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    const std::string out_path = dir_ + "/stdout", err_path = dir_ + "/stderr";
    pid_t pid = fork();
    if (pid == 0) {
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, 1);
      dup2(err, 2);
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      ExecFolio(args);
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
    ExpectError(2, args, needles);
  }
  // A runtime failure: exit 1 and exactly one stderr line containing every needle.
  void ExpectRuntimeError(const std::vector<std::string>& args,
                          const std::vector<std::string>& needles) {
    ExpectError(1, args, needles);
  }
  void ExpectError(int exit_code, const std::vector<std::string>& args,
                   const std::vector<std::string>& needles) {
    Outcome o = Run(args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    SCOPED_TRACE("folio" + cmd);
    EXPECT_EQ(o.exit_code, exit_code) << o.err;
    const std::string err = WithoutUringFallbackWarning(o.err);
    ASSERT_FALSE(err.empty()) << o.err;
    EXPECT_EQ(err.back(), '\n');
    EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line only:\n" << o.err;
    for (const std::string& n : needles) EXPECT_NE(err.find(n), std::string::npos) << o.err;
  }

  // A file of `bytes` zero bytes.
  std::string ZeroFile(const std::string& name, off_t bytes) {
    const std::string path = WriteFile(name, "");
    EXPECT_EQ(truncate(path.c_str(), bytes), 0) << path;
    return path;
  }

  std::string dir_;
};

}  // namespace folio::cli::test
