// Lost connections on the Redis engine, against Redis servers of the test's own (server_fault.h):
// a crash mid-workload loses nothing committed and halves nothing; a server stopped while an
// engine is open is one IOError line once reconnect_timeout_ms has passed, and the same engine
// serves again once the server is back; a server whose maxmemory-policy may evict keys is
// refused at open. The `redis` fixture says whether servers can be started here (skip if not).
#include "meta/server_fault.h"

namespace folio::meta {
namespace {

TEST(RedisFaultTest, CrashMidWorkloadLosesNothingCommittedAndHalvesNothing) {
  FOLIO_SKIP_WITHOUT_SERVER("redis");
  CrashMidWorkload("redis");
}

TEST(RedisFaultTest, ServerStoppedIsOneIOErrorThenServesOnceBack) {
  FOLIO_SKIP_WITHOUT_SERVER("redis");
  ServerStoppedThenBack("redis");
}

TEST(RedisFaultTest, ServerThatMayEvictKeysIsRefusedAtOpen) {
  FOLIO_SKIP_WITHOUT_SERVER("redis");
  OwnServer server("redis");
  std::string why;
  const std::string url = server.Start(&why);
  ASSERT_FALSE(url.empty()) << why;
  std::vector<std::string> lines;
  MetaOpenOptions options;
  options.log = [&](std::string_view l) { lines.emplace_back(l); };
  auto fine = OpenMetaEngine(url, options);  // appendonly yes, appendfsync always
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_TRUE(lines.empty()) << lines[0];
  fine->reset();
  const std::string port = url.substr(url.rfind(':') + 1, url.rfind('/') - url.rfind(':') - 1);
  ASSERT_EQ(Sh("redis-cli -p " + port + " config set appendfsync everysec >/dev/null"), 0);
  ASSERT_TRUE(OpenMetaEngine(url, options).ok());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("appendfsync is everysec"), std::string::npos) << lines[0];
  ASSERT_EQ(Sh("redis-cli -p " + port + " config set maxmemory-policy allkeys-lru >/dev/null"), 0);
  auto refused = OpenMetaEngine(url, options);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("maxmemory-policy is allkeys-lru"),
            std::string_view::npos);
  EXPECT_NE(refused.status().message().find("noeviction"), std::string_view::npos);
}

}  // namespace
}  // namespace folio::meta
