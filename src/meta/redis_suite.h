// The Redis engine's MetaEngine test factory (redis_suite.cc) and helpers for Redis tests.
//
// Thread safety: pure functions.
#pragma once

#include <memory>
#include <string>

#include "meta/meta_conformance.h"
#include "meta/redis_conn.h"

namespace folio::meta {

MetaEngineFactory RedisFactory();
// A connection to the server of a redis:// URL (parsed into *parsed).
Result<std::unique_ptr<RedisConn>> RedisTestConn(const std::string& url, RedisUrl* parsed);
// Removes every key under the URL's prefix.
Status DropRedisPrefix(const std::string& url);

}  // namespace folio::meta
