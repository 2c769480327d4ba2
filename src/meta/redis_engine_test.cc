// Redis engine specifics beyond the conformance suite: URL parsing, a server that is down at
// open, and the durability settings reported at open.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "meta/meta_engine.h"
#include "meta/redis_conn.h"
#include "meta/redis_suite.h"
#include "meta/test_services.h"

namespace folio::meta {
namespace {

TEST(RedisUrlTest, ParsesEveryPart) {
  auto u = ParseRedisUrl("redis://al%40ce:p%3Ass@db.example:6380/3?prefix=vol-1");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "db.example");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 3);
  EXPECT_EQ(u->user, "al@ce");
  EXPECT_EQ(u->password, "p:ss");
  EXPECT_EQ(u->prefix, "vol-1");
  EXPECT_EQ(u->Display(), "redis://al@ce@db.example:6380/3?prefix=vol-1");  // no password
  auto d = ParseRedisUrl("redis://secret@localhost");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->password, "secret");
  EXPECT_EQ(d->user, "");
  EXPECT_EQ(d->port, 6379);
  EXPECT_EQ(d->db, 0);
  EXPECT_EQ(d->prefix, "folio");
  EXPECT_EQ(d->poll_us, 200);
  auto p = ParseRedisUrl("redis://h?prefix=v&poll_us=0");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->prefix, "v");
  EXPECT_EQ(p->poll_us, 0);
  EXPECT_EQ(p->Display(), "redis://h:6379/0?prefix=v");  // the client's setting, not the volume's
  for (const char* bad : {"redis://", "redis://h:0", "redis://h:99999", "redis://h/x",
                          "redis://h?prefix=a/b", "redis://h?color=red", "http://h",
                          "redis://u:%zz@h", "redis://h?poll_us=-1", "redis://h?poll_us=x",
                          "redis://h?poll_us=100001"}) {
    auto b = ParseRedisUrl(bad);
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(b.status().message().find("redis://[[USER]:PASSWORD@]HOST"), std::string_view::npos)
        << b.status().ToString();
  }
}

// Replies read by polling the socket, by blocking after the poll gave up, and without polling:
// the same replies, a reply of many reads (1 MiB) and one that comes long after the poll
// (BLPOP's 50 ms timeout) included.
TEST(RedisConnTest, RepliesArriveWhetherPolledOrWaitedFor) {
  test::ServiceInfo env = test::ServiceEnv("redis");
  if (!env.skip.empty()) GTEST_SKIP() << env.skip;
  ASSERT_TRUE(env.error.empty()) << env.error;
  const std::string big(1 << 20, 'b');
  for (int poll_us : {0, 1, 200}) {
    SCOPED_TRACE("poll_us " + std::to_string(poll_us));
    RedisUrl u;
    auto conn = RedisTestConn(
        env.Var("REDIS_URL") + "?prefix=conn-poll&poll_us=" + std::to_string(poll_us), &u);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    EXPECT_EQ(u.poll_us, poll_us);
    const std::string key = "conn-poll:" + std::to_string(poll_us);
    auto r = (*conn)->Run({{"SET", key, big}, {"GET", key}, {"BLPOP", key + ":list", "0.05"},
                           {"DEL", key}, {"GET", key}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 5u);
    EXPECT_EQ(ReplyText((*r)[0].get()), "OK");
    EXPECT_EQ(ReplyText((*r)[1].get()), big);
    EXPECT_TRUE((*r)[2]->type == REDIS_REPLY_NIL || (*r)[2]->type == REDIS_REPLY_ARRAY);
    EXPECT_EQ((*r)[2]->elements, 0u);
    EXPECT_EQ((*r)[3]->integer, 1);
    EXPECT_EQ((*r)[4]->type, REDIS_REPLY_NIL);
    for (int i = 0; i < 100; ++i) {
      auto one = (*conn)->Run1({"ECHO", std::to_string(i)});
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      EXPECT_EQ(ReplyText(one->get()), std::to_string(i));
    }
  }
}

TEST(RedisEngineTest, ServerDownAtOpenIsOneIOErrorNamingTheUrl) {
  MetaOpenOptions options;
  options.reconnect_timeout_ms = 200;
  // Port 1 on loopback: nothing listens there (connection refused at once).
  auto e = OpenMetaEngine("redis://127.0.0.1:1/0", options);
  ASSERT_EQ(e.status().code(), StatusCode::kIOError) << e.status().ToString();
  const std::string msg(e.status().message());
  EXPECT_NE(msg.find("redis://127.0.0.1:1/0"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(RedisEngineTest, ReportsPersistenceSettingsAtOpen) {
  test::ServiceInfo env = test::ServiceEnv("redis");
  if (!env.skip.empty()) GTEST_SKIP() << env.skip;
  ASSERT_TRUE(env.error.empty()) << env.error;
  // The fixture's server runs without persistence (appendonly no, save ""): say so, naming the
  // settings to change.
  std::vector<std::string> lines;
  MetaOpenOptions options;
  options.log = [&](std::string_view line) { lines.emplace_back(line); };
  const std::string url = env.Var("REDIS_URL") + "?prefix=persistence-check";
  auto e = OpenMetaEngine(url, options);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("persistence is off"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("appendonly yes"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("appendfsync always"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace folio::meta
