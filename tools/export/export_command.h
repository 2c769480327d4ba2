// `folio export`: registers the subcommand on the root CLI app. Wiring it into the `folio`
// binary is one line in RunCli (tools/cli.cc): commands.push_back(AddExportCommand(root));
//
// Thread safety: called once from main's thread.
#pragma once

#include "cli.h"

namespace folio::cli {

Command AddExportCommand(CLI::App& root);

}  // namespace folio::cli
