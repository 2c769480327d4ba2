// Device specs of `folio copy`, `folio raid ...` and `folio bench --device`, and opening them:
//
//   file:PATH or PATH       a regular file or block device (O_DIRECT, io_uring)
//   raid:PATH,PATH,...      a RAID volume assembled from its members' superblocks
//   mem:SIZE                a memory device (tests, experiments)
//
// Every path is locked (base/device_lock.h) while the device is open, so two Folio processes
// never use one member at once. A RAID volume is stopped (flushed, marked clean) when the
// returned device is destroyed.
//
// Thread safety: pure parsing; the opened device is a BlockDevice (thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/device_lock.h"
#include "folio/block_device.h"
#include "folio/raid.h"
#include "folio/status.h"

namespace folio::cli {

struct DeviceSpecText {
  enum class Kind { kFile, kRaid, kMem };
  Kind kind = Kind::kFile;
  std::vector<std::string> paths;  // kFile: one; kRaid: the members
  uint64_t mem_bytes = 0;
};

// Parses a spec. InvalidArgument names the spec and the accepted forms.
Result<DeviceSpecText> ParseDeviceSpecText(std::string_view text);

struct OpenDeviceOptions {
  bool create = false;         // file: create a missing file of create_bytes
  uint64_t create_bytes = 0;
  bool direct = true;          // O_DIRECT for files
  FileEngine engine = FileEngine::kAuto;
  uint32_t queue_depth = 64;
  uint64_t max_request_bytes = 1ull << 20;
  RaidOptions raid;            // for raid: specs
};

// Opens a spec (locking its paths). Errors: NotFound for a missing path, Busy naming the
// process that holds a path, InvalidArgument for a bad spec or array, IOError.
Result<std::unique_ptr<BlockDevice>> OpenDeviceSpec(std::string_view text,
                                                    const OpenDeviceOptions& options);

// The RaidDevice behind a device OpenDeviceSpec returned for a raid: spec, or null.
RaidDevice* AsRaid(BlockDevice* device);

// Opens RAID members by path for create / assemble, locking each. Missing files are created
// with create_bytes when it is non-zero; otherwise they are NotFound naming the path and the
// fix. The locks are appended to *locks.
Result<std::vector<RaidMember>> OpenMembers(const std::vector<std::string>& paths,
                                            const OpenDeviceOptions& options,
                                            uint64_t create_bytes,
                                            std::vector<DeviceLock>* locks);

// Opens RAID members by path read-only and without their locks, for looking at an array that
// another process may be running (folio raid status). Errors: NotFound naming a missing path,
// InvalidArgument for a path listed twice, IOError.
Result<std::vector<RaidMember>> OpenMembersReadOnly(const std::vector<std::string>& paths,
                                                    const OpenDeviceOptions& options);

// The process holding `path`'s device lock, e.g. "process 4242 (folio raid resync /d/m0 ...)",
// or "" when none does (or it cannot be told).
std::string LockHolder(const std::string& path);

// Wraps a device with the locks that must live as long as it (and, for a RAID device, a Stop
// at destruction).
std::unique_ptr<BlockDevice> WithLocks(std::unique_ptr<BlockDevice> device,
                                       std::vector<DeviceLock> locks);

}  // namespace folio::cli
