// The `.control` protocol of `folio export`, defined once for both of its sides: how another
// `folio` process changes a RAID volume that a running export serves.
//
//   sender    `folio raid fail / replace` on members whose locks an export holds:
//             FindExportHolding(members) finds the export's process and mount point (from the
//             lock holder's command line: the `export` command and its --mount flag), then
//             SendControlCommand writes FormatControlCommand(command) + "\n" to
//             MOUNT/.control in one write(2).
//   receiver  the export's file system (src/fuse/export_fs.h) hands each write of its
//             .control file to the export, which ParseControlCommand()s the line and runs it
//             on the volume holding the member; its error becomes the write's errno (the
//             message goes to the export's log).
//
// Command lines (words separated by blanks; member paths absolute, symlinks resolved):
//
//   fail MEMBER        mark MEMBER failed; the array runs degraded
//   replace OLD NEW    fail OLD if it is still in the array, put NEW (created when missing)
//                      in its slot and rebuild onto it in the background
//
// Thread safety: pure functions, except FindExportHolding (reads /proc) and SendControlCommand
// (writes the control file), which are safe from any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::cli {

// The export command's name and the flag that names its mount point, as the command
// registers them and as FindExportHolding reads them back from its command line.
inline constexpr char kExportCommandName[] = "export";
inline constexpr char kExportMountFlag[] = "--mount";

struct ControlCommand {
  enum class Verb { kFail, kReplace };
  Verb verb = Verb::kFail;
  std::string member;      // fail: the member; replace: the member replaced
  std::string new_member;  // replace: the member put in its slot

  static ControlCommand Fail(std::string member);
  static ControlCommand Replace(std::string old_member, std::string new_member);
};

// The command's line, without the trailing newline: "fail /d/m1", "replace /d/m1 /d/m9".
std::string FormatControlCommand(const ControlCommand& command);

// Parses one line (a trailing newline and surrounding blanks are ignored). Errors:
// InvalidArgument "'LINE': unknown command; use 'fail MEMBER' or 'replace OLD NEW' ...".
Result<ControlCommand> ParseControlCommand(std::string_view line);

// `path` absolute with symlinks resolved when it exists, else as given: how both sides name
// a member, so a relative path or a symlink on the sender's side matches the array's member.
std::string ResolvedPath(const std::string& path);

struct ExportProcess {
  pid_t pid = 0;
  std::string mountpoint;  // absolute
};

// The `folio export` process (not this one) holding the device lock of one of `paths`, or
// nullopt when none does (no holder, or the holder is not an export with --mount).
std::optional<ExportProcess> FindExportHolding(const std::vector<std::string>& paths);

// Writes the command to the export's control file. Errors: InvalidArgument for a member path
// with a blank or a newline (the line could not be parsed back); the open's or write's errno
// (e.g. InvalidArgument when the export refused the command, NotFound when the mount has no
// control file) naming the control file, the command and the export's process.
Status SendControlCommand(const ExportProcess& to, const ControlCommand& command);

}  // namespace folio::cli
