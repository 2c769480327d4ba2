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
  if (starts("dev:")) {
    out.kind = StoreUrl::Kind::kDev;
    out.target = std::string(url.substr(4));
    if (out.target.empty()) {
      return Status::InvalidArgument(fmt::format(
          "store URL '{}': dev: needs a device spec (e.g. dev:file:/data/folio.img)", url));
    }
    return out;
  }
  if (starts("rados:")) {
    FOLIO_RETURN_IF_ERROR(ParseRadosUrl(url).status());
    out.kind = StoreUrl::Kind::kRados;
    out.target = std::string(url);
    return out;
  }
  return Status::InvalidArgument(fmt::format(
      "store URL '{}': must be dir:PATH, dev:SPEC or rados:POOL[?conf=PATH] (e.g. "
      "dir:/var/lib/folio, dev:raid:/d/m1,/d/m2,/d/m3, rados:folio)",
      url));
}

namespace {

Result<std::unique_ptr<BlockDevice>> OpenFor(const StoreUrl& parsed, std::string_view url,
                                             const DeviceOpenFn& open_device) {
  if (!open_device) {
    return Status::InvalidArgument(
        fmt::format("store URL '{}': this program cannot open devices", url));
  }
  return open_device(parsed.target);
}

}  // namespace

Status FormatBlockStore(std::string_view url, std::string_view prefix,
                        const FormatOptions& format, const DeviceOpenFn& open_device) {
  FOLIO_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  if (parsed.kind == StoreUrl::Kind::kDir) return FormatDirStore(parsed.target, prefix, format);
  if (parsed.kind == StoreUrl::Kind::kRados) {
    FOLIO_ASSIGN_OR_RETURN(RadosUrl rados, ParseRadosUrl(parsed.target));
    return FormatRadosStore(rados, prefix, format);
  }
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> device, OpenFor(parsed, url, open_device));
  DevFormatOptions dev;
  dev.force = format.force;
  dev.segment_bytes = format.segment_bytes;
  return FormatDevStore(device.get(), prefix, dev);
}

Result<std::unique_ptr<BlockStore>> OpenBlockStore(std::string_view url,
                                                   const StoreOptions& options,
                                                   const DeviceOpenFn& open_device) {
  FOLIO_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  if (parsed.kind == StoreUrl::Kind::kDir) return OpenDirStore(parsed.target, options);
  if (parsed.kind == StoreUrl::Kind::kRados) {
    FOLIO_ASSIGN_OR_RETURN(RadosUrl rados, ParseRadosUrl(parsed.target));
    return OpenRadosStore(rados, options);
  }
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> device, OpenFor(parsed, url, open_device));
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<DevStore> store,
                         OpenDevStore(std::move(device), std::string(url), options));
  return std::unique_ptr<BlockStore>(std::move(store));
}

}  // namespace folio::store
