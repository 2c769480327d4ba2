// Lost connections on the Redis engine, against Redis servers of the test's own (server_fault.h):
// a crash mid-workload loses nothing committed and halves nothing; a server stopped while an
// engine is open is one IOError line once reconnect_timeout_ms has passed, and the same engine
// serves again once the server is back; a server whose maxmemory-policy may evict keys is
// refused at open. The `redis` fixture says whether servers can be started here (skip if not).
#include "meta/server_fault.h"

namespace folio::meta {
namespace {

// Skips the test when the `redis` fixture could not start a server (not in CI as root).
#define FOLIO_SKIP_WITHOUT_REDIS()                                  \
  do {                                                              \
    const test::ServiceInfo env = test::ServiceEnv("redis");        \
    if (!env.skip.empty()) GTEST_SKIP() << env.skip;                \
    ASSERT_TRUE(env.error.empty()) << env.error;                    \
  } while (0)

TEST(RedisFaultTest, CrashMidWorkloadLosesNothingCommittedAndHalvesNothing) {
  FOLIO_SKIP_WITHOUT_REDIS();
  CrashMidWorkload("redis");
}

TEST(RedisFaultTest, ServerStoppedIsOneIOErrorThenServesOnceBack) {
  FOLIO_SKIP_WITHOUT_REDIS();
  OwnServer server("redis");
  std::string why;
  const std::string url = server.Start(&why);
  ASSERT_FALSE(url.empty()) << why;
  MetaOpenOptions options;
  options.reconnect_timeout_ms = 300;
  options.log = [](std::string_view) {};
  auto engine = OpenMetaEngine(url, options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->Init(MetaEngine::InitMode::kCreate).ok());
  auto put = [&](uint64_t ino) {
    return (*engine)->Transact("put", TxnMode::kWrite,
                               [&](Txn& t) { return t.PutInode(TestInode(ino)); });
  };
  ASSERT_TRUE(put(10).ok());
  ASSERT_TRUE(server.Kill());
  // Every kind of call fails the same way: one line naming the server, nothing applied.
  const Status write = put(11);
  ASSERT_EQ(write.code(), StatusCode::kIOError) << write.ToString();
  Status read = (*engine)->Transact("get", TxnMode::kRead, [](Txn& t) {
    return t.GetInode(InodeId{10}).status();
  });
  ASSERT_EQ(read.code(), StatusCode::kIOError) << read.ToString();
  auto ids = (*engine)->AllocateIds(Counter::kNextInode, 1);
  ASSERT_EQ(ids.status().code(), StatusCode::kIOError) << ids.status().ToString();
  for (const Status& s : {write, read, ids.status()}) {
    const std::string msg(s.message());
    EXPECT_NE(msg.find(url.substr(0, url.rfind('/'))), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  ASSERT_TRUE(server.Restart());
  // The same engine (its pooled connections broken by the crash) serves again.
  ASSERT_TRUE(put(12).ok());
  bool have10 = false, have11 = true, have12 = false;
  ASSERT_TRUE((*engine)->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(auto a, t.GetInode(InodeId{10}));
    FOLIO_ASSIGN_OR_RETURN(auto b, t.GetInode(InodeId{11}));
    FOLIO_ASSIGN_OR_RETURN(auto c, t.GetInode(InodeId{12}));
    have10 = a.has_value();
    have11 = b.has_value();
    have12 = c.has_value();
    return Status::OK();
  }).ok());
  EXPECT_TRUE(have10) << "committed before the crash (appendfsync always)";
  EXPECT_FALSE(have11) << "failed while the server was down, yet applied";
  EXPECT_TRUE(have12);
}

TEST(RedisFaultTest, ServerThatMayEvictKeysIsRefusedAtOpen) {
  FOLIO_SKIP_WITHOUT_REDIS();
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
