// raid: specs in a build without the RAID layer (src/raid not built): an honest error.
#include "export/device_spec.h"

namespace folio::cli {

Result<OpenedVolume> OpenRaidVolume(const DeviceSpec& spec) {
  return Status::NotSupported("device spec '" + spec.text +
                              "': this build has no RAID layer (src/raid)");
}

}  // namespace folio::cli
