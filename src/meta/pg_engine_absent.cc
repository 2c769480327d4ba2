// OpenPgEngine in a build without the PostgreSQL engine (FOLIO_POSTGRES=OFF, e.g. the arm64
// cross build: see src/meta/CMakeLists.txt): postgres:// URLs are one NotSupported line (the URL
// is not repeated: it may hold a password).
#include "meta/pg_engine.h"

namespace folio::meta {

Result<std::unique_ptr<MetaEngine>> OpenPgEngine(std::string_view, const MetaOpenOptions&) {
  return Status::NotSupported(
      "postgres:// metadata URLs: this folio was built without the PostgreSQL engine "
      "(FOLIO_POSTGRES=OFF); build it with -DFOLIO_POSTGRES=ON (needs libpq-dev)");
}

}  // namespace folio::meta
