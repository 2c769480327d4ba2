// Test helper for the RAID and copy commands: runs one command line the way RunCli does and
// captures its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "raid/raid_cmd.h"

namespace folio::cli::test {

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
  nlohmann::json json() const { return nlohmann::json::parse(out); }
};

inline Outcome RunCommand(std::vector<std::string> args) {
  CLI::App root("test", "folio");
  root.require_subcommand(0, 1);
  std::vector<Command> commands = {RegisterRaidCommands(root), RegisterCopyCommand(root)};
  std::vector<const char*> argv = {"folio"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  Outcome o;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  try {
    root.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    for (const Command& c : commands) {
      if (c.app->parsed()) o.code = c.run();
    }
  } catch (const CLI::ParseError& e) {
    o.code = UsageError("folio", e.what());
  }
  o.out = testing::internal::GetCapturedStdout();
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

}  // namespace folio::cli::test
