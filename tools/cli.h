// The `folio` command line: the root CLI11 app, its subcommands, and the dispatch from
// parsed arguments to a command. main() is a thin wrapper that catches every exception.
//
// Thread safety: RunCli is called once from main's thread.
#pragma once

#include <functional>

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

Command AddDoctorCommand(CLI::App& root);
Command AddBenchCommand(CLI::App& root);

// Parses argv and runs the chosen command. Returns the exit code: 0 ok, 1 runtime failure,
// 2 usage error (exactly one line on stderr). --help and --version print to stdout, exit 0.
int RunCli(int argc, char** argv);

}  // namespace folio::cli
