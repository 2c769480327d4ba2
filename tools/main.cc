// The `folio` binary: the commands live in libraries (folio_tools: doctor, bench; and, when
// they are built, folio_raid_cli: raid, copy; folio_export_cli: export); main lists them and
// guarantees that no exception escapes: anything thrown is one line and exit code 1.
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli.h"
#include "cli_util.h"
#ifdef FOLIO_HAVE_RAID_CLI
#include "raid/bench_device.h"
#include "raid/raid_cmd.h"
#endif
#ifdef FOLIO_HAVE_EXPORT_CLI
#include "export/export_command.h"
#endif

int main(int argc, char** argv) {
  try {
    std::vector<folio::cli::CommandFactory> commands = folio::cli::CoreCommands();
#ifdef FOLIO_HAVE_RAID_CLI
    commands.push_back(&folio::cli::RegisterRaidCommands);
    commands.push_back(&folio::cli::RegisterCopyCommand);
    folio::cli::InstallBenchDeviceHooks();  // `folio bench --device SPEC`
#endif
#ifdef FOLIO_HAVE_EXPORT_CLI
    commands.push_back(&folio::cli::AddExportCommand);
#endif
    return folio::cli::RunCli(argc, argv, commands);
  } catch (const std::bad_alloc&) {
    return folio::cli::RuntimeError("folio", "out of memory");
  } catch (const std::exception& e) {
    return folio::cli::RuntimeError("folio", std::string("internal error: ") + e.what());
  } catch (...) {
    return folio::cli::RuntimeError("folio", "internal error: unknown exception");
  }
}
