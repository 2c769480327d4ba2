// FormatRadosStore / OpenRadosStore in a build without librados (FOLIO_RADOS=OFF, e.g. the arm64
// cross build: see src/fs/store/CMakeLists.txt): rados: store URLs parse, then are one
// NotSupported line naming the option.
#include "fs/store/rados_store.h"

namespace folio::store {
namespace {

Status NoRados(const RadosUrl& url) {
  return Status::NotSupported("rados:" + url.pool +
                              ": this folio was built without the RADOS store (FOLIO_RADOS=OFF); "
                              "build it with -DFOLIO_RADOS=ON (needs librados-dev)");
}

}  // namespace

Status FormatRadosStore(const RadosUrl& url, std::string_view, const FormatOptions&) {
  return NoRados(url);
}

Result<std::unique_ptr<BlockStore>> OpenRadosStore(const RadosUrl& url, const StoreOptions&) {
  return NoRados(url);
}

}  // namespace folio::store
