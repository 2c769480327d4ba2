// Device specs as `folio export` takes them, and opening them as locked volumes. Parsing and
// opening are the RAID commands' (tools/raid/device_open.h), so every command accepts the same
// forms and takes the same member locks:
//
//   file:PATH or PATH       a regular file or block device (O_DIRECT, io_uring)
//   mem:SIZE                a memory device (tests, experiments)
//   raid:PATH,PATH,...      a RAID volume assembled from its members' superblocks
//
// A RAID volume gets a RaidRunner (raid_volume.h): a pending resync or rebuild runs in the
// background while the volume is served, and `.control` commands fail or replace members.
//
// Thread safety: pure parsing; OpenVolume from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "folio/block_device.h"
#include "folio/status.h"
#include "raid/device_open.h"

namespace folio::cli {

class RaidRunner;

struct DeviceSpec {
  std::string text;       // as given
  DeviceSpecText parsed;  // paths absolute

  // The spec with absolute paths ("file:/d/x.img", "raid:/d/m0,/d/m1", "mem:64M").
  std::string Canonical() const;
  // The volume's default file name: the basename of the file (or of the first RAID member),
  // "mem0", "mem1", ... for memory devices (index = position among the specs).
  std::string DefaultName(size_t index) const;
};

// Parses one spec and makes its paths absolute (a daemon changes to "/"). Errors:
// InvalidArgument naming the spec and the accepted forms; NotFound for a missing path.
Result<DeviceSpec> ParseDeviceSpec(std::string_view text);

struct OpenedVolume {
  DeviceSpec spec;
  // Declared before the device so it is destroyed after it: it holds the locks of members
  // added by replace.
  std::shared_ptr<RaidRunner> raid;
  std::unique_ptr<BlockDevice> device;  // what the page cache reads and writes
};

// Locks and opens the spec's device(s); a RAID volume starts its pending sync. Errors:
// NotFound for a missing path, Busy naming the process that holds a path, InvalidArgument for
// an unusable device or array, IOError.
Result<OpenedVolume> OpenVolume(const DeviceSpec& spec);

}  // namespace folio::cli
