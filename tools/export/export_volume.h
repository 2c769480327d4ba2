// The volumes of `folio export`: a device spec (cli/device_spec.h, the forms every command
// takes) opened and locked as one served volume, and the file name it gets in the mount.
//
// A RAID volume gets a RaidRunner (raid_volume.h): a pending resync or rebuild runs in the
// background while the volume is served, and `.control` commands fail or replace members.
//
// Thread safety: DefaultVolumeName is pure; OpenVolume from one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cli/device_spec.h"
#include "folio/block_device.h"
#include "folio/status.h"

namespace folio::cli {

class RaidRunner;

// The volume's default file name: the basename of the file (or of the first RAID member),
// "mem0", "mem1", ... for memory devices (index = position among the specs).
std::string DefaultVolumeName(const DeviceSpec& spec, size_t index);

struct OpenedVolume {
  DeviceSpec spec;
  // Declared before the device so it is destroyed after it: it holds the locks of members
  // added by replace.
  std::shared_ptr<RaidRunner> raid;
  std::unique_ptr<BlockDevice> device;  // what the page cache reads and writes
};

// Locks and opens the spec's device(s) (paths resolved by ResolveDevicePaths); a RAID volume
// starts its pending sync. Errors: as OpenDevice's.
Result<OpenedVolume> OpenVolume(const DeviceSpec& spec);

}  // namespace folio::cli
