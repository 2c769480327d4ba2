// Mount-point plumbing shared by every FUSE server of Folio: checks before mounting, finding a
// FUSE mount and the process serving it, unmounting from any process, and waiting for that
// process to finish its cleanup.
//
// A Folio FUSE mount is named "folio:<pid>" (its fsname, the source column of
// /proc/self/mountinfo) so another shell can find the serving process without talking to it.
//
// Errors meant for a user (exit code 2 in the CLI) are InvalidArgument or NotSupported with a
// one-line message naming the directory and the fix; system failures are IOError.
//
// Thread safety: pure functions over the file system and the process table; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "folio/status.h"

namespace folio::fuse {

// The fsname a Folio FUSE server of process `pid` mounts with.
std::string FsnameForPid(pid_t pid);

// Checks that `dir` can take a mount: it exists, is a directory and is empty. A dead FUSE mount
// there (its server was killed) is reported with the command that clears it.
// `flag` names the option in messages (e.g. "--mount").
Status CheckMountPoint(const std::string& flag, const std::string& dir);

// Checks that /dev/fuse exists and can be opened for reading and writing.
Status CheckFuseDevice();

struct MountEntry {
  std::string mountpoint;  // absolute, unescaped
  std::string fstype;      // "fuse.folio", "fuse", ...
  std::string source;      // fsname, e.g. "folio:1234"
  // The serving process when the source is "folio:<pid>", else 0.
  pid_t pid = 0;
};

// Parses one line of /proc/<pid>/mountinfo (the format of proc(5)); nullopt if malformed.
std::optional<MountEntry> ParseMountInfoLine(const std::string& line);

// The FUSE mount whose mount point is `dir` (after resolving it to an absolute path without
// following a dead mount), or NotFound when none is.
Result<MountEntry> FindFuseMount(const std::string& dir);

enum class UnmountMode {
  kNormal,  // fails with Busy when files are open (or a loop device uses one)
  kLazy,    // detaches now; the file system goes away when its last user closes it
};

// Unmounts the FUSE mount at `dir`: umount2(2) when permitted, else `fusermount3 -u` (the
// unprivileged path). Busy: the message names the directory and suggests --lazy.
Status UnmountPath(const std::string& dir, UnmountMode mode);

// Waits until process `pid` has exited, up to timeout_ms (0: do not wait). Returns OK when it
// is gone (or never existed), Again on timeout.
Status WaitForExit(pid_t pid, uint64_t timeout_ms);

}  // namespace folio::fuse
