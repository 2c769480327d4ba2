#include "fs/store/store_url.h"

#include <fmt/format.h>

namespace folio::store {

Result<StoreUrl> ParseStoreUrl(std::string_view url) {
  auto starts = [&](std::string_view p) { return url.substr(0, p.size()) == p; };
  StoreUrl out;
  if (starts("dir:")) {
    out.kind = StoreUrl::Kind::kDir;
    out.target = std::string(url.substr(4));
    while (out.target.size() > 1 && out.target.back() == '/') out.target.pop_back();
    if (out.target.empty()) {
      return Status::InvalidArgument(
          fmt::format("store URL '{}': dir: needs a directory (e.g. dir:/var/lib/folio)", url));
    }
    return out;
  }
  return Status::InvalidArgument(
      fmt::format("store URL '{}': must be dir:PATH (e.g. dir:/var/lib/folio)", url));
}

Status FormatBlockStore(std::string_view url, std::string_view prefix,
                        const FormatOptions& format, const DeviceOpenFn& open_device) {
  (void)open_device;
  FOLIO_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  return FormatDirStore(parsed.target, prefix, format);
}

Result<std::unique_ptr<BlockStore>> OpenBlockStore(std::string_view url,
                                                   const StoreOptions& options,
                                                   const DeviceOpenFn& open_device) {
  (void)open_device;
  FOLIO_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  return OpenDirStore(parsed.target, options);
}

}  // namespace folio::store
