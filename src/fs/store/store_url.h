// Opening and formatting a block store from its URL:
//
//   dir:PATH    a directory tree (dir_store.h)
//   dev:SPEC    a log-structured store on the Folio device SPEC (dev_store.h): file:PATH,
//               mem:SIZE, raid:PATH,PATH,... as the CLI's device specs are written
//   rados:POOL[?conf=PATH&user=NAME&timeout=SECONDS]   a Ceph RADOS pool (rados_store.h)
//
// The store library does not parse device specs: the caller passes a DeviceOpenFn that opens
// one, so this layer depends on no tool code. The command line passes cli::DeviceOpener
// (tools/cli/device_spec.h), the one parser and opener of device specs, with its locks.
//
// Thread safety: pure functions; the returned store is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "folio/block_device.h"
#include "fs/store/block_store.h"
#include "fs/store/dev_store.h"
#include "fs/store/dir_store.h"
#include "fs/store/rados_store.h"

namespace folio::store {

// Opens a device spec for a device-backed store.
using DeviceOpenFn =
    std::function<Result<std::unique_ptr<BlockDevice>>(std::string_view device_spec)>;

struct StoreUrl {
  enum class Kind { kDir, kDev, kRados };
  Kind kind = Kind::kDir;
  std::string target;  // dir: the path; dev: the device spec; rados: the whole URL
};

// Errors: InvalidArgument naming the URL and the accepted forms.
Result<StoreUrl> ParseStoreUrl(std::string_view url);

// Formats the store a URL names for volume prefix `prefix` (FormatDirStore, or
// FormatDevStore on the device open_device opens).
Status FormatBlockStore(std::string_view url, std::string_view prefix,
                        const FormatOptions& format, const DeviceOpenFn& open_device);

// Opens the store a URL names (options.prefix selects the volume). A dev: store owns the
// device open_device returned (closing the store closes it).
Result<std::unique_ptr<BlockStore>> OpenBlockStore(std::string_view url,
                                                   const StoreOptions& options,
                                                   const DeviceOpenFn& open_device);

}  // namespace folio::store
