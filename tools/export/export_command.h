// `folio export`: registers the subcommand on the root CLI app (tools/main.cc lists it).
//
// Thread safety: called once from main's thread.
#pragma once

#include "cli/cli.h"

namespace folio::cli {

Command AddExportCommand(CLI::App& root);

}  // namespace folio::cli
