// The `folio` command line: the root CLI11 app, its subcommands, and the dispatch from
// parsed arguments to a command. main() is a thin wrapper that catches every exception.
//
// Thread safety: RunCli is called once from main's thread.
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

Command AddDoctorCommand(CLI::App& root);
Command AddBenchCommand(CLI::App& root);

// The commands of folio_tools itself: doctor, bench. Other command libraries (raid, export)
// depend on folio_tools, so main() adds their factories to this list rather than folio_tools
// naming them (which would make the libraries depend on each other).
std::vector<CommandFactory> CoreCommands();

// Parses argv and runs the chosen command. Returns the exit code: 0 ok, 1 runtime failure,
// 2 usage error (exactly one line on stderr). --help and --version print to stdout, exit 0.
int RunCli(int argc, char** argv, const std::vector<CommandFactory>& factories);

}  // namespace folio::cli
