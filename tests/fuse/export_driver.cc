// A `folio` with only the export command, for the fuse tests to run while the command is not
// yet wired into the main binary (the tests prefer the real `folio` when it has `export`).
#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "cli_util.h"
#include "export/export_command.h"

int main(int argc, char** argv) {
  try {
    CLI::App root("folio (export only; a test driver)", "folio");
    root.require_subcommand(1);
    folio::cli::Command export_command = folio::cli::AddExportCommand(root);
    try {
      root.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return root.exit(e);
      return folio::cli::UsageError("folio", std::string(e.what()) + "; run 'folio export --help'");
    }
    return export_command.run();
  } catch (const std::exception& e) {
    return folio::cli::RuntimeError("folio", std::string("internal error: ") + e.what());
  }
}
