// The `folio` binary: the list of its commands, each in its own library (folio_tools: doctor,
// bench; folio_raid_cli: raid, copy; folio_export_cli: export; folio_fs_cli: fs). A new
// command is one line here. RunMain (cli/cli.h) parses, dispatches and catches every exception.
#include <vector>

#include "cli/cli.h"
#include "core_commands.h"
#include "export/export_command.h"
#include "fs/fs_cli.h"
#include "raid/raid_cmd.h"

int main(int argc, char** argv) {
  using namespace folio::cli;
  const std::vector<CommandFactory> commands = {
      &AddDoctorCommand,     &AddBenchCommand,    &RegisterRaidCommands,
      &RegisterCopyCommand,  &AddExportCommand,   &AddFsCommand,
  };
  return RunMain(argc, argv, commands);
}
