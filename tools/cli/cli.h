// The `folio` command line: the root CLI11 app, its subcommands, and the dispatch from
// parsed arguments to a command. Each command lives in its own library and is added by a
// CommandFactory; main() (tools/main.cc) lists the factories and calls RunMain.
//
// Thread safety: RunMain / RunCli are called once from main's thread.
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace folio::cli {

// A subcommand: its CLI11 app (owned by the root app) and the function that runs it with
// the parsed arguments, returning the process exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Adds a subcommand to the root app.
using CommandFactory = Command (*)(CLI::App& root);

// Parses argv and runs the chosen command. Returns the exit code: 0 ok, 1 runtime failure,
// 2 usage error (exactly one line on stderr). --help and --version print to stdout, exit 0.
int RunCli(int argc, char** argv, const std::vector<CommandFactory>& factories);

// RunCli, with the guarantee that no exception escapes: anything thrown (out of memory, a
// bug) is one line on stderr and exit code 1.
int RunMain(int argc, char** argv, const std::vector<CommandFactory>& factories);

}  // namespace folio::cli
