#include "cli/cli.h"

#include <CLI/CLI.hpp>

#include <exception>
#include <new>
#include <string>
#include <vector>

#include "base/dispatch.h"
#include "cli/cli_util.h"

namespace folio::cli {

namespace {

// The subcommand named on the command line (the first argument that is one), or "".
std::string NamedSubcommand(const CLI::App& root, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    for (const CLI::App* sub : root.get_subcommands({})) {
      if (sub->get_name() == arg) return arg;
    }
    return "";
  }
  return "";
}

}  // namespace

int RunCli(int argc, char** argv, const std::vector<CommandFactory>& factories) {
  // The FOLIO_* implementation choices (base/dispatch.h) are made once, before anything runs.
  if (Status s = InitDispatchFromEnvironment(); !s.ok()) return UsageError("folio", s.message());
  CLI::App root("Folio: a user-space storage stack built on dynamic folios "
                "(power-of-two runs of 4 KiB pages, sized per access).",
                "folio");
  root.set_version_flag("--version", "folio " + std::string(kVersion));
  // At most one command. A missing one is reported after parsing: CLI11's own "required"
  // check would hide an unknown flag behind "A subcommand is required".
  root.require_subcommand(0, 1);
  root.footer("Run 'folio <command> --help' for a command's options.");

  std::vector<Command> commands;
  for (CommandFactory add : factories) commands.push_back(add(root));

  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return root.exit(e);  // --help / --version: stdout, exit 0
    std::string sub = NamedSubcommand(root, argc, argv);
    std::string where = sub.empty() ? "folio" : "folio " + sub;
    return UsageError("folio", std::string(e.what()) + "; run '" + where + " --help'");
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return UsageError("folio", "no command given; run 'folio --help' for the list");
}

int RunMain(int argc, char** argv, const std::vector<CommandFactory>& factories) {
  try {
    return RunCli(argc, argv, factories);
  } catch (const std::bad_alloc&) {
    return RuntimeError("folio", "out of memory");
  } catch (const std::exception& e) {
    return RuntimeError("folio", std::string("internal error: ") + e.what());
  } catch (...) {
    return RuntimeError("folio", "internal error: unknown exception");
  }
}

}  // namespace folio::cli
