// A formatted Folio FS volume opened by the CLI: its metadata engine, format record and block
// store (a dev: store's device spec is opened through cli/device_spec.h's DeviceOpener, so it
// takes the same forms and locks as every other command).
//
// Thread safety: plain values; the engine and the store are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "fs/store/store_url.h"
#include "meta/meta_engine.h"

namespace folio::cli {

struct FsVolume {
  std::unique_ptr<meta::MetaEngine> meta;
  meta::FormatRecord format;
  std::unique_ptr<store::BlockStore> store;
};

enum class StoreAccess {
  kOpen,  // open the store (locking a dev: store's device)
  kNone,  // metadata only (status: works while a mount holds the store)
};

// Opens the engine at meta_url, reads its format record and (kOpen) opens the store it names.
// Errors: InvalidArgument for a bad URL or a database without a volume (naming `folio fs
// format`), NotSupported for a newer format, the store's errors naming the volume.
// meta_options: how the engine is opened (read_only is taken from the argument).
Result<FsVolume> OpenFsVolume(const std::string& meta_url, bool read_only,
                              StoreAccess store = StoreAccess::kOpen,
                              meta::MetaOpenOptions meta_options = {});

}  // namespace folio::cli
