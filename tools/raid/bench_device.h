// `folio bench --device SPEC`: the device specs of device_open.h, handed to the bench
// (folio_tools, which cannot depend on this library) through bench/device.h's hooks.
//
// Thread safety: InstallBenchDeviceHooks is called once from main's thread before the
// commands run.
#pragma once

namespace folio::cli {

// Installs the hooks through which `folio bench --device` checks and opens device specs.
void InstallBenchDeviceHooks();

}  // namespace folio::cli
