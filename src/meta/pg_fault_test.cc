// Lost connections on the PostgreSQL engine, against PostgreSQL servers of the test's own
// (server_fault.h, durable settings): a crash (immediate shutdown) mid-workload loses nothing
// committed and halves nothing; a server stopped while an engine is open is one IOError line
// once reconnect_timeout_ms has passed, and the same engine serves again once the server is
// back; a server down at open is one IOError line naming the URL without its password; a COMMIT
// lost in a crash is not taken for the later transaction that got its transaction id. The `pg`
// fixture says whether servers can be started here (skip if not).
#include "meta/pg_conn.h"
#include "meta/server_fault.h"

namespace folio::meta {
namespace {

TEST(PgFaultTest, CrashMidWorkloadLosesNothingCommittedAndHalvesNothing) {
  FOLIO_SKIP_WITHOUT_SERVER("pg");
  CrashMidWorkload("pg");
}

// The transaction id (32 bits, as text) of the one open transaction that has one, other than
// the caller's; "" if none.
std::string OtherTransactionId(const std::string& url) {
  auto conn = PgConn::Open(url, url);
  if (!conn.ok()) return "";
  auto r = (*conn)->Simple(
      "SELECT backend_xid::text FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> "
      "pg_backend_pid()");
  return r.ok() && r->size() == 1 ? std::string(r->Bytes(0, 0)) : "";
}

// Commits a transaction that takes a transaction id; returns that id (32 bits, as text).
std::string CommitATransaction(const std::string& url) {
  auto conn = PgConn::Open(url, url);
  if (!conn.ok() || !(*conn)->Simple("BEGIN").ok()) return "";
  auto r = (*conn)->Simple("SELECT (pg_current_xact_id()::text::int8 % 4294967296)::text");
  if (!r.ok() || r->size() != 1 || !(*conn)->Simple("COMMIT").ok()) return "";
  return std::string(r->Bytes(0, 0));
}

// PostgreSQL hands a crashed transaction's id, when none of its WAL reached the disk, to a
// later transaction: asked with txid_status, that id says "committed" for a transaction that
// never was (this lost a committed write in CrashMidWorkload). Here fn writes (and reads, which
// sends the write), then the server
// is crashed before the engine sends COMMIT, and after the restart another connection commits
// a transaction, which takes the same id. The engine must see that its own COMMIT never
// arrived and run fn again. Repeated (up to kRounds) until the id was taken again: when the
// write's WAL went to disk with another flush, the id is not reused.
TEST(PgFaultTest, CommitLostInACrashIsNotTakenForALaterTransactionWithItsId) {
  FOLIO_SKIP_WITHOUT_SERVER("pg");
  constexpr int kRounds = 5;
  OwnServer server("pg");
  std::string url;
  std::unique_ptr<MetaEngine> engine = StartAndOpen(server, 60000, &url);
  ASSERT_NE(engine, nullptr);
  int reused = 0;
  for (int round = 0; round < kRounds && reused == 0; ++round) {
    const InodeId ino{100 + static_cast<uint64_t>(round)};
    int runs = 0;
    std::string crashed_id, later_id;
    const Status s = engine->Transact("lost-commit", TxnMode::kWrite, [&](Txn& t) -> Status {
      ++runs;
      FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(Raw(ino))));
      // Writes wait to go out with the next read or the commit (PgConn::Queue): this read
      // sends the write, so the server's transaction holds an id when the server crashes.
      FOLIO_RETURN_IF_ERROR(t.GetInode(ino).status());
      if (runs == 1) {
        crashed_id = OtherTransactionId(url);
        if (!server.CrashAndRestart(std::chrono::milliseconds(0))) {
          return Status::IOError("the test's server did not restart");
        }
        later_id = CommitATransaction(url);
      }
      return Status::OK();
    });
    ASSERT_TRUE(s.ok()) << "round " << round << ": " << s.ToString();
    ASSERT_FALSE(crashed_id.empty()) << "round " << round;
    ASSERT_FALSE(later_id.empty()) << "round " << round;
    if (crashed_id == later_id) ++reused;
    EXPECT_EQ(runs, 2) << "round " << round << ": the crash came before COMMIT was sent, so fn "
                       << "must run again (transaction id " << crashed_id << ", the later one's "
                       << later_id << ")";
    bool present = false;
    ASSERT_TRUE(engine->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(auto n, t.GetInode(ino));
      present = n.has_value();
      return Status::OK();
    }).ok());
    EXPECT_TRUE(present) << "round " << round << ": Transact returned OK, inode " << Raw(ino)
                         << " is not there";
  }
  EXPECT_EQ(reused, 1) << "in " << kRounds << " rounds, no crashed transaction's id was reused: "
                       << "the case this test is about did not happen";
}

TEST(PgFaultTest, ServerStoppedIsOneIOErrorThenServesOnceBack) {
  FOLIO_SKIP_WITHOUT_SERVER("pg");
  ServerStoppedThenBack("pg");
}

TEST(PgFaultTest, ServerDownAtOpenIsOneIOErrorNamingTheUrlWithoutItsPassword) {
  MetaOpenOptions options;
  options.reconnect_timeout_ms = 200;
  auto e = OpenMetaEngine("postgres://folio:secret@127.0.0.1:1/vol", options);
  ASSERT_EQ(e.status().code(), StatusCode::kIOError) << e.status().ToString();
  const std::string msg(e.status().message());
  EXPECT_NE(msg.find("postgres://folio@127.0.0.1:1/vol"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("secret"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

}  // namespace
}  // namespace folio::meta
