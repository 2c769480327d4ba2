// The commands of folio_tools (tools/doctor.cc, tools/bench/bench_command.cc).
//
//   folio doctor [--dir DIR] [--json]     what this machine offers Folio
//   folio bench [flags] JOB.fio           fio job files through every engine, side by side
//
// Thread safety: called once from main's thread.
#pragma once

#include "cli/cli.h"

namespace folio::cli {

Command AddDoctorCommand(CLI::App& root);
Command AddBenchCommand(CLI::App& root);

}  // namespace folio::cli
