// The PostgreSQL engine's MetaEngine test factory (pg_suite.cc) and helpers for its tests.
//
// Thread safety: pure functions.
#pragma once

#include <memory>
#include <string>

#include "meta/meta_conformance.h"
#include "meta/pg_conn.h"

namespace folio::meta {

MetaEngineFactory PgFactory();
// DATABASE_URL of the fixture's server, and a connection to it.
std::string PgBaseUrl();
Result<std::unique_ptr<PgConn>> PgTestConn();
// The schema a test URL names (its search_path), "public" when none.
std::string PgSchemaOf(const std::string& url);

}  // namespace folio::meta
