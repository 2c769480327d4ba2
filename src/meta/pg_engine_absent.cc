// OpenPgEngine in a build without the PostgreSQL engine (FOLIO_POSTGRES=OFF, e.g. the arm64
// cross build: see src/meta/CMakeLists.txt): postgres:// URLs are one NotSupported line (the URL
// is not repeated: it may hold a password).
#include "meta/pg_engine.h"
#include "meta/scratch.h"

namespace folio::meta {

namespace {

Status NoPostgres() {
  return Status::NotSupported(
      "postgres:// metadata URLs: this folio was built without the PostgreSQL engine "
      "(FOLIO_POSTGRES=OFF); build it with -DFOLIO_POSTGRES=ON (needs libpq-dev)");
}

}  // namespace

Result<std::unique_ptr<MetaEngine>> OpenPgEngine(std::string_view, const MetaOpenOptions&) {
  return NoPostgres();
}

Status CreatePgSchema(std::string_view, std::string_view) { return NoPostgres(); }
Status DropPgSchema(std::string_view, std::string_view) { return NoPostgres(); }

}  // namespace folio::meta
