// Device specs: how every `folio` command names a device, parsed and opened in one place.
//
//   file:PATH or PATH       a regular file or block device (O_DIRECT by default, io_uring)
//   raid:PATH,PATH,...      a RAID volume assembled from its members' superblocks (a member
//                           may be written file:PATH too)
//   mem:SIZE                a memory device of SIZE (a non-zero multiple of 4K, at most this
//                           machine's memory)
//
// Every path is locked (base/device_lock.h) while its device is open, so two Folio processes
// never use one file or member at once; a lock held elsewhere is Busy naming the holder's PID
// and command line. A RAID volume is stopped (flushed, marked clean) when the device returned
// by OpenDevice is destroyed, before its locks are released. Read-only opens take no locks:
// they look at devices another process may be running.
//
// Messages name the spec as typed, the problem and the fix ("mem:3000: SIZE must be a non-zero
// multiple of 4K (e.g. mem:64M)"); a command whose spec came from a flag or a named argument
// puts that name in front with ForSpec ("--device mem:3000: ..."). Errors are InvalidArgument
// or NotFound for a spec the user must change (exit 2), Busy / IOError otherwise (exit 1).
//
// Thread safety: parsing is pure and thread-safe; an opened device is a BlockDevice
// (thread-safe); the open functions may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_lock.h"
#include "folio/block_device.h"
#include "folio/raid.h"
#include "folio/status.h"

namespace folio::cli {

// The accepted forms, for messages: "use file:PATH (or a bare PATH), raid:PATH,PATH,... or
// mem:SIZE".
inline constexpr std::string_view kDeviceSpecForms =
    "use file:PATH (or a bare PATH), raid:PATH,PATH,... or mem:SIZE";
// The forms for help texts: "file:PATH or PATH, raid:PATH,PATH,..., mem:SIZE".
inline constexpr char kDeviceSpecSyntax[] = "file:PATH or PATH, raid:PATH,PATH,..., mem:SIZE";

struct DeviceSpec {
  enum class Kind { kFile, kRaid, kMem };

  std::string text;                // as given
  Kind kind = Kind::kFile;
  std::vector<std::string> paths;  // kFile: one; kRaid: the members (two or more)
  uint64_t mem_bytes = 0;          // kMem

  // The spec from its parts ("file:/d/x.img", "raid:/d/m0,/d/m1", "mem:64M"); after
  // ResolveDevicePaths, with absolute paths.
  std::string Canonical() const;
  // A file: spec's path (what a tool that preads and pwrites itself can open), else "".
  std::string file_path() const { return kind == Kind::kFile ? paths[0] : std::string(); }
};

// Parses a spec without I/O (a mem: size is checked against this machine's memory).
// InvalidArgument "TEXT: problem; fix" for an empty spec or path, an empty raid: member (",,",
// a trailing comma), a raid: of fewer than two members, a bad or too large mem: size.
Result<DeviceSpec> ParseDeviceSpec(std::string_view text);

// Checks that every path of the spec exists and is not a directory, and makes it absolute
// with symlinks resolved (a daemon changes to "/" before opening). Errors: NotFound "TEXT:
// PATH: no such file or device; use file:PATH ..."; InvalidArgument for a directory.
Status ResolveDevicePaths(DeviceSpec* spec);

struct DeviceOpenOptions {
  bool direct = true;         // O_DIRECT (false: buffered through the kernel page cache)
  bool read_only = false;     // open read-only and without locks
  FileEngine engine = FileEngine::kAuto;
  uint32_t queue_depth = 64;  // requests in flight per thread
  uint64_t max_request_bytes = 1ull << 20;
  // Non-zero: a missing file (a file: spec, a RAID member given to OpenMembers) is created
  // with this size. Zero: a missing file is NotFound.
  uint64_t create_bytes = 0;
  RaidOptions raid;           // for raid: specs
};

// Opens a parsed spec, locking its paths: a file device, a memory device, or a RAID volume
// assembled from its members (stopped when the device is destroyed). Errors: NotFound for a
// missing path, InvalidArgument for a directory or an unusable array, Busy naming the
// process that holds a path, IOError; each names the spec.
Result<std::unique_ptr<BlockDevice>> OpenDevice(const DeviceSpec& spec,
                                                const DeviceOpenOptions& options);
// ParseDeviceSpec, then OpenDevice.
Result<std::unique_ptr<BlockDevice>> OpenDevice(std::string_view text,
                                                const DeviceOpenOptions& options);

// OpenDevice with `options`, as the function a library that is handed device specs calls
// (the dev: block store's store::DeviceOpenFn, src/fs/store/store_url.h): the store names
// devices as the command line does and opens them with the same locks.
std::function<Result<std::unique_ptr<BlockDevice>>(std::string_view spec)> DeviceOpener(
    const DeviceOpenOptions& options);

// The RaidDevice behind a device OpenDevice returned for a raid: spec, or null.
RaidDevice* AsRaid(BlockDevice* device);

// Opens RAID members by path, for create / assemble / replace / inspect. A path listed twice
// is InvalidArgument. Missing files are created with options.create_bytes when it is non-zero,
// else NotFound naming the member; a directory is InvalidArgument. Every path is checked
// before any is opened. Unless options.read_only, each member is locked and, once all of
// them opened, the locks are appended to *locks; a failure leaves *locks unchanged and
// nothing locked.
// REQUIRES: locks != nullptr unless options.read_only.
Result<std::vector<RaidMember>> OpenMembers(const std::vector<std::string>& paths,
                                            const DeviceOpenOptions& options,
                                            std::vector<DeviceLock>* locks);

// Wraps a device with the locks that must live as long as it (and, for a RAID device, a Stop
// at destruction).
std::unique_ptr<BlockDevice> WithLocks(std::unique_ptr<BlockDevice> device,
                                       std::vector<DeviceLock> locks);

// The process holding `path`'s device lock, e.g. "process 4242 (folio raid resync /d/m0 ...)",
// or "" when none does (or it cannot be told).
std::string LockHolder(const std::string& path);
// The PID of the process holding `path`'s device lock, or 0 when none does (or it cannot be
// told, e.g. the path is missing).
pid_t LockHolderPid(const std::string& path);
// The argument vector of process `pid` from /proc (empty when it cannot be read).
std::vector<std::string> ProcessArguments(pid_t pid);

// `status` with "NAME " in front of its message, for a spec given as a flag or a named
// argument: ForSpec("--device", s) turns "mem:3: ..." into "--device mem:3: ...".
Status ForSpec(std::string_view name, const Status& status);

}  // namespace folio::cli
