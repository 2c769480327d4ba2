// Test helper for the RAID and copy commands: runs one command line in-process through RunMain
// (the `folio` binary's dispatch, with only these commands) and captures its exit code, stdout
// and stderr.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
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

}  // namespace folio::cli::test
