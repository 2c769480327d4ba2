// `folio raid ...` and `folio copy`: the command-line face of the RAID layer.
//
//   folio raid create --level 5 --chunk 64K --unit 16K|dynamic [--size SIZE] [--assume-clean]
//                     [--wait] [--force] MEMBER...
//   folio raid status [--json] MEMBER...        (reads only; no member lock, never writes)
//   folio raid check | repair | resync | rebuild [--json] [--sync-window md|SIZE] ... MEMBER...
//                                               (in the foreground until done or --for)
//   folio raid fail --member PATH MEMBER...
//   folio raid replace --old PATH|--slot N --new PATH [--wait] MEMBER...
//   folio raid resync-bench [--members N] [--size SIZE] [--units 4K,16K,64K,dynamic]
//                           [--window md|SIZE] [--model none|hdd] [--json]
//   folio copy SRC DST
//
// Exit codes follow tools/cli_util.h: 0 ok (check exits 0 whether or not it found
// mismatches), 1 when the operation could not run, 2 for bad input (one line on stderr).
//
// Thread safety: commands run once, on main's thread.
#pragma once

#include "cli/cli.h"

namespace folio::cli {

// Adds `raid` and its subcommands to root; the returned command runs the one parsed.
Command RegisterRaidCommands(CLI::App& root);
// Adds `copy` to root.
Command RegisterCopyCommand(CLI::App& root);

// Adds `resync-bench` under the `raid` command (raid_bench.cc).
Command AddResyncBenchCommand(CLI::App& raid);

}  // namespace folio::cli
