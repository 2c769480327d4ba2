// PgConn's queued statements (libpq pipeline mode), against the `pg` fixture's server: queued
// writes go out in order with the next read or Flush; a failed one fails the call that sends
// it, nothing after it in the pipeline runs, and a statement whose Prepare was aborted is
// prepared again on its next use; a long queue goes out on its own.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "meta/pg_conn.h"
#include "meta/pg_suite.h"
#include "meta/test_services.h"

namespace folio::meta {
namespace {

using P = PgParam;

class PgConnTest : public testing::Test {
 protected:
  void SetUp() override {
    const test::ServiceInfo env = test::ServiceEnv("pg");
    if (!env.skip.empty()) GTEST_SKIP() << env.skip;
    ASSERT_TRUE(env.error.empty()) << env.error;
    auto c = PgTestConn();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    conn_ = std::move(*c);
    table_ = fmt::format("pgconn_test_{}", getpid());
    ASSERT_TRUE(conn_->Simple(fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0}(k BIGINT "
                                          "PRIMARY KEY, v BIGINT NOT NULL)",
                                          table_))
                    .ok());
  }
  void TearDown() override {
    if (conn_ == nullptr) return;
    auto c = PgTestConn();
    if (c.ok()) (void)(*c)->Simple("DROP TABLE IF EXISTS " + table_);
  }
  std::string Insert() const { return fmt::format("INSERT INTO {} VALUES($1, $2)", table_); }
  // v of row k on a connection of its own (what is committed); -1 when absent.
  int64_t Committed(int64_t k) {
    auto c = PgTestConn();
    if (!c.ok()) return -2;
    auto r = (*c)->Exec(fmt::format("SELECT v FROM {} WHERE k = $1", table_), {P::I(k)});
    return r.ok() && r->size() == 1 ? r->Int(0, 0) : -1;
  }

  std::unique_ptr<PgConn> conn_;
  std::string table_;
};

// Folio's poll_us parameter is taken out of the URL before libpq sees it (libpq refuses
// parameters it does not know); the others stay in their order.
TEST(PgUrlTest, PollUsIsTakenOutOfTheQuery) {
  std::string u = "postgres://u:secret@h:5432/db?sslmode=disable&poll_us=0&options=-cx%3D1";
  auto p = TakePgPollUs(&u);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, 0);
  EXPECT_EQ(u, "postgres://u:secret@h:5432/db?sslmode=disable&options=-cx%3D1");
  u = "postgres://u@h/db?poll_us=100000";
  ASSERT_TRUE(TakePgPollUs(&u).ok());
  EXPECT_EQ(u, "postgres://u@h/db");
  u = "postgres://u@h/db";
  auto d = TakePgPollUs(&u);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, 200);
  EXPECT_EQ(u, "postgres://u@h/db");
  for (const char* bad : {"postgres://u:pw@h/db?poll_us=-1", "postgres://u:pw@h/db?poll_us=x",
                          "postgres://u:pw@h/db?poll_us=100001", "postgres://u:pw@h/db?poll_us="}) {
    std::string b = bad;
    auto r = TakePgPollUs(&b);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("poll_us"), std::string_view::npos) << bad;
    EXPECT_EQ(r.status().message().find("pw"), std::string_view::npos) << r.status().ToString();
  }
}

// Results read by polling, by blocking after the poll gave up (pg_sleep outlasts it), and
// without polling: the same results.
TEST(PgConnPollTest, ResultsArriveWhetherPolledOrWaitedFor) {
  const test::ServiceInfo env = test::ServiceEnv("pg");
  if (!env.skip.empty()) GTEST_SKIP() << env.skip;
  ASSERT_TRUE(env.error.empty()) << env.error;
  for (int poll_us : {0, 1, 200}) {
    SCOPED_TRACE("poll_us " + std::to_string(poll_us));
    auto c = PgConn::Open(PgBaseUrl(), PgBaseUrl(), poll_us);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int i = 0; i < 50; ++i) {
      auto r = (*c)->Exec("SELECT $1::int8 + 1", {P::I(i)});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->size(), 1);
      EXPECT_EQ(r->Int(0, 0), i + 1);
    }
    auto slow = (*c)->Exec("SELECT 7::int8 FROM pg_sleep(0.05)");
    ASSERT_TRUE(slow.ok()) << slow.status().ToString();
    ASSERT_EQ(slow->size(), 1);
    EXPECT_EQ(slow->Int(0, 0), 7);
  }
}

TEST_F(PgConnTest, QueuedWritesGoOutInOrderWithTheNextRead) {
  ASSERT_TRUE(conn_->Queue("BEGIN", {}, /*prepared=*/false).ok());
  ASSERT_TRUE(conn_->Queue(Insert(), {P::I(1), P::I(10)}).ok());
  ASSERT_TRUE(conn_->Queue(fmt::format("UPDATE {} SET v = v * 2 WHERE k = $1", table_), {P::I(1)})
                  .ok());
  EXPECT_EQ(conn_->queued(), 3u);
  EXPECT_EQ(Committed(1), -1) << "a queued write went out before a read or Flush";
  auto r = conn_->Exec(fmt::format("SELECT v FROM {} WHERE k = $1", table_), {P::I(1)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1);
  EXPECT_EQ(r->Int(0, 0), 20) << "the update ran before the insert";
  EXPECT_EQ(conn_->queued(), 0u);
  EXPECT_FALSE(conn_->idle()) << "BEGIN did not open a transaction";
  EXPECT_EQ(Committed(1), -1) << "uncommitted rows are visible";
  ASSERT_TRUE(conn_->Queue("COMMIT", {}, /*prepared=*/false).ok());
  ASSERT_TRUE(conn_->Flush().ok());
  EXPECT_TRUE(conn_->idle());
  EXPECT_EQ(Committed(1), 20);
}

TEST_F(PgConnTest, AFailedQueuedWriteFailsTheCallThatSendsItAndNothingAfterItRuns) {
  ASSERT_TRUE(conn_->Exec(Insert(), {P::I(1), P::I(1)}).ok());
  // A unique violation is a conflict (the engine re-runs the transaction).
  const std::string other_insert =
      fmt::format("INSERT INTO {} VALUES($1, $2) ON CONFLICT(k) DO NOTHING", table_);
  ASSERT_TRUE(conn_->Queue("BEGIN", {}, false).ok());
  ASSERT_TRUE(conn_->Queue(Insert(), {P::I(2), P::I(2)}).ok());
  ASSERT_TRUE(conn_->Queue(Insert(), {P::I(1), P::I(5)}).ok());  // duplicate key
  ASSERT_TRUE(conn_->Queue(other_insert, {P::I(3), P::I(3)}).ok());  // Prepare never runs
  auto r = conn_->Exec(fmt::format("SELECT count(*)::int8 FROM {}", table_));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBusy) << r.status().ToString();
  EXPECT_TRUE(conn_->conflict());
  EXPECT_FALSE(conn_->broken());
  EXPECT_TRUE(conn_->in_error());
  ASSERT_TRUE(conn_->Simple("ROLLBACK").ok());
  conn_->clear_conflict();
  EXPECT_EQ(Committed(2), -1);
  EXPECT_EQ(Committed(3), -1);
  // The aborted Prepare was forgotten: the statement is prepared again and runs.
  ASSERT_TRUE(conn_->Queue(other_insert, {P::I(3), P::I(30)}).ok());
  const Status flushed = conn_->Flush();
  ASSERT_TRUE(flushed.ok()) << flushed.ToString();
  EXPECT_EQ(Committed(3), 30);

  // Any other error is an IOError naming the statement, and the transaction is in error.
  ASSERT_TRUE(conn_->Queue("BEGIN", {}, false).ok());
  ASSERT_TRUE(conn_->Queue("INSERT INTO no_such_table_here VALUES($1)", {P::I(1)}).ok());
  ASSERT_TRUE(conn_->Queue(Insert(), {P::I(4), P::I(4)}).ok());
  const Status s = conn_->Queue("COMMIT", {}, false).ok() ? conn_->Flush() : Status::OK();
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  EXPECT_NE(std::string(s.message()).find("no_such_table_here"), std::string::npos)
      << s.ToString();
  EXPECT_FALSE(conn_->conflict());
  EXPECT_TRUE(conn_->in_error()) << "COMMIT ran after a failed statement";
  ASSERT_TRUE(conn_->Simple("ROLLBACK").ok());
  EXPECT_EQ(Committed(4), -1);
}

TEST_F(PgConnTest, ALongQueueGoesOutOnItsOwnAndKeepsItsOrder) {
  constexpr int kRows = 3 * static_cast<int>(PgConn::kQueueMax) + 5;
  ASSERT_TRUE(conn_->Queue("BEGIN", {}, false).ok());
  for (int i = 0; i < kRows; ++i) {
    ASSERT_TRUE(conn_->Queue(Insert(), {P::I(i), P::I(i)}).ok());
    ASSERT_TRUE(conn_->Queue(fmt::format("UPDATE {} SET v = v + 1000 WHERE k = $1", table_),
                             {P::I(i)})
                    .ok());
    EXPECT_LT(conn_->queued(), PgConn::kQueueMax);
  }
  ASSERT_TRUE(conn_->Queue("COMMIT", {}, false).ok());
  ASSERT_TRUE(conn_->Flush().ok());
  auto r = conn_->Exec(fmt::format("SELECT count(*)::int8, sum(v)::int8 FROM {}", table_));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Int(0, 0), kRows);
  EXPECT_EQ(r->Int(0, 1), int64_t{kRows} * (kRows - 1) / 2 + int64_t{kRows} * 1000);
}

}  // namespace
}  // namespace folio::meta
