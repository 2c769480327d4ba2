// Test helpers for the RAID and copy commands: runs one command line in-process through RunMain
// (the `folio` binary's dispatch, with only these commands) and captures its exit code, stdout
// and stderr; file contents. One-line errors: OneLine (one_line_test_util.h).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "io/io_test_util.h"
#include "one_line_test_util.h"  // tools/
#include "raid/raid_cmd.h"

namespace folio::cli::test {

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
  nlohmann::json json() const { return nlohmann::json::parse(out); }
};

inline Outcome RunCommand(std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("folio")};
  for (std::string& a : args) argv.push_back(a.data());
  Outcome o;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  o.code = RunMain(static_cast<int>(argv.size()), argv.data(),
                   {&RegisterRaidCommands, &RegisterCopyCommand});
  o.out = testing::internal::GetCapturedStdout();
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

using io_test::TempDir;

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A file of `bytes` pseudo-random bytes from `seed`.
inline void WriteRandomFile(const std::string& path, size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string data(bytes, 0);
  for (char& c : data) c = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary) << data;
}

}  // namespace folio::cli::test
