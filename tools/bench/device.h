// `folio bench --device SPEC`: how the bench opens a device spec (file:PATH or PATH,
// raid:PATH,PATH,..., mem:SIZE).
//
// The specs belong to tools/raid (device_open.h), whose library depends on folio_tools, so
// folio_tools cannot call it. Instead the layer that knows the specs installs hooks here at
// startup (main() calls tools/raid's InstallBenchDeviceHooks); without them,
// `bench --device` is a usage error saying this build has no device specs.
//
// Thread safety: SetBenchDeviceHooks is called from main's thread before the commands run;
// the hooks are then only read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "folio/block_device.h"
#include "folio/status.h"

namespace folio::bench {

struct BenchDeviceHooks {
  // Checks `spec` without I/O. Returns the path the kernel engine can open with pread /
  // pwrite (a file: spec's file), or "" when the device is not one file (raid:, mem:).
  // InvalidArgument for a malformed spec (the message names the spec and the accepted forms).
  Result<std::string> (*kernel_path)(std::string_view spec) = nullptr;
  // Opens (and locks) `spec` with at least `queue_depth` requests in flight per thread.
  // Errors are the spec layer's: InvalidArgument, NotFound naming a missing path, Busy
  // naming the process that holds it, IOError.
  Result<std::unique_ptr<BlockDevice>> (*open)(std::string_view spec,
                                               uint32_t queue_depth) = nullptr;

  bool installed() const { return kernel_path != nullptr && open != nullptr; }
};

void SetBenchDeviceHooks(const BenchDeviceHooks& hooks);
// The installed hooks (not installed() when none were).
const BenchDeviceHooks& GetBenchDeviceHooks();

}  // namespace folio::bench
