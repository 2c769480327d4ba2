// Redis engine specifics beyond the conformance suite: URL parsing, a server that is down at
// open, the durability settings reported at open, and a listing's read transaction validated
// by its last read.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
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

// A volume's directory of kFiles files under a fresh prefix, and a second engine on it (another
// client) that changes the directory while the first one's transaction runs.
class RedisListingTest : public testing::Test {
 protected:
  static constexpr uint64_t kDir = 100;
  static constexpr int kFiles = 100;  // more than RedisTxn::kWatchedGetInodesMax

  void SetUp() override {
    const std::string why = test::ServiceEnv("redis").skip;
    if (!why.empty()) GTEST_SKIP() << why;
    auto url = RedisFactory().new_url(
        (std::filesystem::temp_directory_path() / testing::UnitTest::GetInstance()
                                                       ->current_test_info()
                                                       ->name())
            .string());
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    (void)DropRedisPrefix(url_);
    auto e = OpenMetaEngine(url_, MetaOpenOptions{});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    ASSERT_TRUE(engine_->Init(MetaEngine::InitMode::kCreate).ok());
    auto o = OpenMetaEngine(url_, MetaOpenOptions{});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    other_ = std::move(*o);
    Status s = engine_->Transact("setup", TxnMode::kWrite, [](Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(t.PutInode(Dir(kFiles)));
      for (int i = 0; i < kFiles; ++i) {
        FOLIO_RETURN_IF_ERROR(AddFile(t, i));
      }
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    engine_.reset();
    other_.reset();
    if (!url_.empty()) (void)DropRedisPrefix(url_);
  }

  static Inode Dir(uint64_t entries) {
    Inode d;
    d.ino = InodeId{kDir};
    d.type = FileType::kDirectory;
    d.mode = 0755;
    d.nlink = 2;
    d.size_bytes = entries;
    d.parent = InodeId{kDir};
    return d;
  }
  static Status AddFile(Txn& t, int i) {
    Inode f;
    f.ino = InodeId{1000 + static_cast<uint64_t>(i)};
    f.mode = 0644;
    f.size_bytes = static_cast<uint64_t>(i);
    FOLIO_RETURN_IF_ERROR(t.PutInode(f));
    return t.PutEntry(Entry{InodeId{kDir}, "f" + std::to_string(1000 + i), f.ino,
                            FileType::kRegular});
  }
  // What another client does meanwhile: one more file, and the directory's count with it.
  void AddOneElsewhere() {
    Status s = other_->Transact("add", TxnMode::kWrite, [](Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(AddFile(t, kFiles));
      return t.PutInode(Dir(kFiles + 1));
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // The listing with every entry's inode (a readdir with attributes).
  static Status List(Txn& t, std::vector<Entry>* entries,
                     std::vector<std::optional<Inode>>* inodes) {
    FOLIO_ASSIGN_OR_RETURN(*entries, t.ListEntries(InodeId{kDir}, "", 1000));
    std::vector<InodeId> inos;
    for (const Entry& e : *entries) inos.push_back(e.ino);
    FOLIO_ASSIGN_OR_RETURN(*inodes, t.GetInodes(inos));
    return Status::OK();
  }
  uint64_t Retries(std::string_view op) const {
    for (const MetaOpStats& o : engine_->Stats().ops) {
      if (o.op == op) return o.retries;
    }
    return 0;
  }

  std::string url_;
  std::unique_ptr<MetaEngine> engine_;
  std::unique_ptr<MetaEngine> other_;
};

TEST_F(RedisListingTest, AListingsAttributesCarryItsValidation) {
  std::vector<Entry> entries;
  std::vector<std::optional<Inode>> inodes;
  const uint64_t before = engine_->Stats().round_trips;
  Status s = engine_->Transact("list", TxnMode::kRead,
                               [&](Txn& t) { return List(t, &entries, &inodes); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The names (ZRANGEBYLEX), their values (HMGET), the inodes (MGET) behind the validation
  // (MULTI / EXEC): three round trips, not four.
  EXPECT_EQ(engine_->Stats().round_trips - before, 3u);
  ASSERT_EQ(entries.size(), static_cast<size_t>(kFiles));
  for (size_t i = 0; i < entries.size(); ++i) {
    ASSERT_TRUE(inodes[i].has_value()) << entries[i].name;
    EXPECT_EQ(inodes[i]->size_bytes, i) << entries[i].name;
  }
}

TEST_F(RedisListingTest, AChangeBeforeTheCarryingReadRunsTheTransactionAgain) {
  int runs = 0;
  std::vector<Entry> entries;
  std::vector<std::optional<Inode>> inodes;
  Status s = engine_->Transact("list", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(entries, t.ListEntries(InodeId{kDir}, "", 1000));
    if (runs++ == 0) AddOneElsewhere();  // between the listing and its attributes
    std::vector<InodeId> inos;
    for (const Entry& e : entries) inos.push_back(e.ino);
    FOLIO_ASSIGN_OR_RETURN(inodes, t.GetInodes(inos));
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(Retries("list"), 1u);
  EXPECT_EQ(entries.size(), static_cast<size_t>(kFiles + 1));
  EXPECT_EQ(inodes.size(), entries.size());
}

TEST_F(RedisListingTest, AReadAfterTheCarryingReadRunsAgainInOneSnapshot) {
  int runs = 0;
  std::vector<Entry> entries;
  std::vector<std::optional<Inode>> inodes;
  std::optional<Inode> dir;
  Status s = engine_->Transact("list", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_RETURN_IF_ERROR(List(t, &entries, &inodes));
    // After the validation went out: a change here would be missed by a listing validated
    // early and a directory read after it.
    if (runs++ == 0) AddOneElsewhere();
    FOLIO_ASSIGN_OR_RETURN(dir, t.GetInode(InodeId{kDir}));
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(dir.has_value());
  EXPECT_EQ(entries.size(), dir->size_bytes) << "the listing and its directory disagree";
  EXPECT_EQ(entries.size(), static_cast<size_t>(kFiles + 1));
  EXPECT_EQ(runs, 2);
  // Without the carrying read the second run is validated at its end as before.
  int again = 0;
  s = engine_->Transact("list-again", TxnMode::kRead, [&](Txn& t) -> Status {
    ++again;
    FOLIO_RETURN_IF_ERROR(List(t, &entries, &inodes));
    FOLIO_ASSIGN_OR_RETURN(dir, t.GetInode(InodeId{kDir}));
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(again, 2);  // the first run read on after the carrying read
  EXPECT_EQ(entries.size(), dir->size_bytes);
}

}  // namespace
}  // namespace folio::meta
