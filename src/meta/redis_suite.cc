// Runs the MetaEngine conformance suite (meta_conformance.h) on the Redis engine, against the
// server the `redis` CTest fixture started (test_services.h). Each test gets its own key
// prefix in database 0, removed afterwards.
#include <fmt/format.h>

#include "meta/meta_conformance.h"
#include "meta/redis_conn.h"
#include "meta/redis_suite.h"
#include "meta/redis_txn.h"
#include "meta/test_services.h"

namespace folio::meta {

Result<std::unique_ptr<RedisConn>> RedisTestConn(const std::string& url, RedisUrl* parsed) {
  FOLIO_ASSIGN_OR_RETURN(*parsed, ParseRedisUrl(url));
  return RedisConn::Open(*parsed, 10000);
}

Status DropRedisPrefix(const std::string& url) {
  RedisUrl u;
  FOLIO_ASSIGN_OR_RETURN(auto conn, RedisTestConn(url, &u));
  return UnlinkKeys(*conn, u.prefix + ":*");
}

MetaEngineFactory RedisFactory() {
  MetaEngineFactory f;
  f.name = "Redis";
  f.skip = [] { return test::ServiceEnv("redis").skip; };
  f.new_url = [](const std::string& dir) -> Result<std::string> {
    test::ServiceInfo env = test::ServiceEnv("redis");
    if (!env.error.empty()) return Status::IOError(env.error);
    return fmt::format("{}?prefix=t{:x}", env.Var("REDIS_URL"), std::hash<std::string>()(dir));
  };
  f.write_raw_chunk = [](const std::string& url, InodeId ino, uint32_t index,
                         std::string_view bytes) -> Status {
    RedisUrl u;
    FOLIO_ASSIGN_OR_RETURN(auto conn, RedisTestConn(url, &u));
    const RedisKeys keys(u.prefix);
    FOLIO_ASSIGN_OR_RETURN(auto r, conn->Run({{"SET", keys.Chunk(ino, index), std::string(bytes)},
                                              {"ZADD", keys.Chunks(ino), "0", Be32(index)}}));
    return IsError(r[0].get()) ? Status::IOError(std::string(ReplyText(r[0].get()))) : Status::OK();
  };
  f.drop = [](const std::string& url) { (void)DropRedisPrefix(url); };
  return f;
}

namespace {
INSTANTIATE_TEST_SUITE_P(Redis, MetaEngineTest, testing::Values(RedisFactory()), MetaFactoryName);
}  // namespace

}  // namespace folio::meta
