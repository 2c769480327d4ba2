// Runs the MetaEngine conformance suite (meta_conformance.h) on the PostgreSQL engine, against
// the server the `pg` CTest fixture started (test_services.h). Each test gets its own schema
// (the URL's options=-csearch_path%3DNAME), dropped afterwards.
#include <fmt/format.h>

#include "meta/meta_conformance.h"
#include "meta/pg_conn.h"
#include "meta/pg_suite.h"
#include "meta/test_services.h"

namespace folio::meta {

std::string PgBaseUrl() { return test::ServiceEnv("pg").Var("DATABASE_URL"); }

Result<std::unique_ptr<PgConn>> PgTestConn() { return PgConn::Open(PgBaseUrl(), PgBaseUrl()); }

std::string PgSchemaOf(const std::string& url) {
  const size_t p = url.find("search_path%3D");
  return p == std::string::npos ? "public" : url.substr(p + 14);
}

MetaEngineFactory PgFactory() {
  MetaEngineFactory f;
  f.name = "Postgres";
  f.skip = [] { return test::ServiceEnv("pg").skip; };
  f.new_url = [](const std::string& dir) -> Result<std::string> {
    test::ServiceInfo env = test::ServiceEnv("pg");
    if (!env.error.empty()) return Status::IOError(env.error);
    const std::string schema = fmt::format("t{:x}", std::hash<std::string>()(dir));
    FOLIO_ASSIGN_OR_RETURN(auto conn, PgTestConn());
    FOLIO_RETURN_IF_ERROR(conn->Simple("CREATE SCHEMA " + schema).status());
    return fmt::format("{}?options=-csearch_path%3D{}", env.Var("DATABASE_URL"), schema);
  };
  f.write_raw_chunk = [](const std::string& url, InodeId ino, uint32_t index,
                         std::string_view bytes) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto conn, PgTestConn());
    return conn
        ->Exec(fmt::format("INSERT INTO {}.chunks(ino, idx, slices) VALUES($1, $2, $3) ON "
                           "CONFLICT(ino, idx) DO UPDATE SET slices = excluded.slices",
                           PgSchemaOf(url)),
               {PgParam::U(Raw(ino)), PgParam::I(index), PgParam::B(bytes)})
        .status();
  };
  f.drop = [](const std::string& url) {
    auto conn = PgTestConn();
    if (conn.ok()) (void)(*conn)->Simple("DROP SCHEMA IF EXISTS " + PgSchemaOf(url) + " CASCADE");
  };
  return f;
}

namespace {
INSTANTIATE_TEST_SUITE_P(Postgres, MetaEngineTest, testing::Values(PgFactory()), MetaFactoryName);
}  // namespace

}  // namespace folio::meta
