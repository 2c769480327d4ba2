// What is particular to the SQLite engine and OpenMetaEngine: URLs, foreign and newer
// databases, files that are never created by opening, WAL mode, locks held by another process.
#include "meta/sqlite_engine.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "meta/meta_conformance.h"
#include "meta/meta_url.h"
#include "meta/sqlite_conn.h"
#include "meta/sqlite_wal_gather.h"

namespace folio::meta {
namespace {

class SqliteEngineTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "folio-sqlite-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/meta.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs SQL on the file with a plain sqlite3 connection.
  void RawSql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::unique_ptr<MetaEngine> Formatted(const MetaOpenOptions& options = {}) {
    auto e = OpenMetaEngine("sqlite:" + path_, options);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return nullptr;
    EXPECT_TRUE((*e)->Init(MetaEngine::InitMode::kCreate).ok());
    return std::move(*e);
  }

  std::string dir_;
  std::string path_;
};

void ExpectError(std::string_view url, StatusCode code, std::string_view text) {
  auto e = OpenMetaEngine(url, {});
  ASSERT_FALSE(e.ok()) << url;
  EXPECT_EQ(e.status().code(), code) << e.status().ToString();
  EXPECT_NE(e.status().message().find(text), std::string_view::npos) << e.status().ToString();
}

TEST_F(SqliteEngineTest, BadUrlsAreClearErrors) {
  ExpectError("sqlite:", StatusCode::kInvalidArgument, "empty path");
  ExpectError("sqlite:" + dir_, StatusCode::kInvalidArgument, "is a directory");
  ExpectError("sqlite:" + dir_ + "/missing/meta.db", StatusCode::kInvalidArgument,
              "does not exist; create it first");
  ExpectError("mysql://host/db", StatusCode::kInvalidArgument,
              "unknown metadata engine 'mysql'; known: sqlite:PATH");
  ExpectError("/just/a/path", StatusCode::kInvalidArgument, "not a metadata URL");
  ExpectError("sqlite:/dev/null", StatusCode::kInvalidArgument, "not a regular file");
  MetaOpenOptions bad;
  bad.sqlite_synchronous = "off";
  auto e = OpenMetaEngine("sqlite:" + path_, bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("synchronous 'off' must be full or normal"),
            std::string_view::npos);
  EXPECT_EQ(MetaSchemes().size(), 4u);  // sqlite, redis, postgres, postgresql
}

TEST_F(SqliteEngineTest, OpeningAMissingFileCreatesNothing) {
  auto e = OpenMetaEngine("sqlite:" + path_, {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->url(), "sqlite:" + path_);
  ASSERT_TRUE((*e)->Transact("status", TxnMode::kRead, [](Txn& t) {
    return t.GetFormat().status();
  }).ok());
  EXPECT_FALSE(std::filesystem::exists(path_));
  ASSERT_TRUE((*e)->Init(MetaEngine::InitMode::kCreate).ok());
  EXPECT_TRUE(std::filesystem::exists(path_));
}

TEST_F(SqliteEngineTest, RelativePathsBecomeAbsolute) {
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  auto e = OpenMetaEngine("sqlite:meta.db", {});
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->url(), "sqlite:" + path_);
}

TEST_F(SqliteEngineTest, ForeignDatabasesAreNotFolioVolumes) {
  RawSql("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT); "
         "INSERT INTO customers VALUES(1, 'x');");
  const auto size_before = std::filesystem::file_size(path_);
  ExpectError("sqlite:" + path_, StatusCode::kInvalidArgument,
              "not a Folio volume (an SQLite database with tables customers)");
  EXPECT_EQ(std::filesystem::file_size(path_), size_before);
  // Not an SQLite file at all.
  std::ofstream(dir_ + "/text.db") << "hello, this is not a database, just some text\n";
  ExpectError("sqlite:" + dir_ + "/text.db", StatusCode::kInvalidArgument, "not a Folio volume");
}

TEST_F(SqliteEngineTest, InitRefusesAForeignDatabaseThatAppearedAfterOpen) {
  auto e = OpenMetaEngine("sqlite:" + path_, {});
  ASSERT_TRUE(e.ok());
  RawSql("CREATE TABLE other(x)");
  for (auto mode : {MetaEngine::InitMode::kCreate, MetaEngine::InitMode::kWipe}) {
    Status s = (*e)->Init(mode);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("not a Folio volume"), std::string_view::npos);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);  // only its own table
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SqliteEngineTest, NewerSchemaVersionIsRefused) {
  ASSERT_NE(Formatted(), nullptr);
  RawSql("UPDATE folio_meta SET value = '2' WHERE name = 'schema_version'");
  ExpectError("sqlite:" + path_, StatusCode::kNotSupported,
              "schema version 2 is newer than this build of Folio reads (1); use a newer folio");
}

TEST_F(SqliteEngineTest, UsesWalMode) {
  ASSERT_NE(Formatted(), nullptr);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A reader connection drops its page cache after every commit; the writer's survives its own.
// So a read while the writer is idle runs on the writer connection, and sees every commit.
TEST_F(SqliteEngineTest, ReadsRunOnTheIdleWriterAndSeeEveryCommit) {
  auto engine = Formatted();
  ASSERT_NE(engine, nullptr);
  const uint64_t before = engine->Stats().reads_on_writer;
  for (uint64_t i = 2; i < 12; ++i) {
    ASSERT_TRUE(engine->Transact("create", TxnMode::kWrite, [&](Txn& t) {
      return t.PutInode(TestInode(i));
    }).ok());
    std::optional<Inode> got;
    ASSERT_TRUE(engine->Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(got, t.GetInode(InodeId{i}));
      return Status::OK();
    }).ok());
    EXPECT_TRUE(got.has_value()) << i;
  }
  EXPECT_EQ(engine->Stats().reads_on_writer - before, 10u);
  // Still a read-only transaction there.
  Status w = engine->Transact("lookup", TxnMode::kRead,
                              [](Txn& t) { return t.PutInode(TestInode(99)); });
  EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << w.ToString();
  std::optional<Inode> gone = TestInode(1);
  ASSERT_TRUE(engine->Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(gone, t.GetInode(InodeId{99}));
    return Status::OK();
  }).ok());
  EXPECT_FALSE(gone.has_value());
}

// Checkpoints run on the checkpointer thread, not inside the commits, once per 1000 frames the
// WAL grew by (not once per commit past 1000 frames, as SQLite's own hook does): after 3000
// commits one has run, a few at most, and it copied the commits into the database file.
TEST_F(SqliteEngineTest, TheWalIsCheckpointedInTheBackground) {
  MetaOpenOptions options;
  options.sqlite_synchronous = "normal";  // commits without an fsync each: a quick test
  auto engine = Formatted(options);
  ASSERT_NE(engine, nullptr);
  const uint64_t formatted = std::filesystem::file_size(path_);
  for (uint64_t i = 2; i < 3000; ++i) {
    ASSERT_TRUE(engine->Transact("create", TxnMode::kWrite, [&](Txn& t) {
      return t.PutInode(TestInode(i));
    }).ok());
  }
  for (int i = 0; i < 500 && engine->Stats().checkpoints == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(engine->Stats().checkpoints, 1u);
  EXPECT_LE(engine->Stats().checkpoints, 10u);
  // A checkpoint that copied nothing (a connection that never learnt the database is in WAL
  // mode does that, and says OK) leaves the file at its formatted size: 3000 inodes are more.
  EXPECT_GT(std::filesystem::file_size(path_), formatted + 64 * 1024)
      << "the checkpoints copied nothing into the database file";
  std::optional<Inode> got;
  ASSERT_TRUE(engine->Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(got, t.GetInode(InodeId{2999}));
    return Status::OK();
  }).ok());
  EXPECT_TRUE(got.has_value());
}

// Each commit's WAL frames reach the file in one write (sqlite_wal_gather.h): a transaction
// that changes several pages is several frames, a header and a page each, which SQLite writes
// one call each. What a reader connection then sees is every commit, complete.
TEST_F(SqliteEngineTest, ACommitsWalFramesAreOneWrite) {
  MetaOpenOptions options;
  options.sqlite_synchronous = "normal";  // no fsync in a commit: the frames are the writes
  auto engine = Formatted(options);
  ASSERT_NE(engine, nullptr);
  const WalGatherStats before = GetWalGatherStats();
  constexpr uint64_t kCommits = 200;
  for (uint64_t i = 0; i < kCommits; ++i) {
    ASSERT_TRUE(engine->Transact("create", TxnMode::kWrite, [&](Txn& t) -> Status {
      // Three inodes far apart, and a counter: several pages per commit.
      for (uint64_t k : {2 + i, 100000 + i, 200000 + i}) {
        FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(k)));
      }
      return t.AddToCounter(Counter::kUsedInodes, 3);
    }).ok());
  }
  const WalGatherStats after = GetWalGatherStats();
  const uint64_t in = after.writes_in - before.writes_in;
  const uint64_t out = after.writes_out - before.writes_out;
  // Other tests of this process may write WALs meanwhile (none run in parallel in a gtest
  // binary): the counts are this engine's. Two writes per frame in, one write per commit out
  // (a checkpoint's restart of the WAL may add the odd one).
  EXPECT_GE(in, 2 * 2 * kCommits) << "in " << in << ", out " << out;
  EXPECT_LE(out, kCommits + kCommits / 10) << "in " << in << ", out " << out;
  EXPECT_GE(out, kCommits);
  // A second connection (a plain one, without the shim) reads every commit.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM inodes", -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_GE(sqlite3_column_int64(stmt, 0), static_cast<int64_t>(3 * kCommits));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// Transactions larger than SQLite's page cache spill pages to the WAL before their commit and
// rewrite some of those frames in place (a page changed again, then the checksums of the
// frames after it): with the gathering shim below every connection, such a transaction must
// commit (a gathered write longer than the unix VFS writes in one call came back as
// SQLITE_FULL) and must survive a crash of the process that committed it (synchronous=NORMAL:
// nothing fsynced, the WAL only in the kernel's page cache). The child commits three such
// transactions and _exits without closing anything; the parent finds all three.
TEST_F(SqliteEngineTest, LargeTransactionsCommitAndSurviveACrashOfTheProcess) {
  { ASSERT_NE(Formatted(), nullptr); }
  constexpr uint64_t kPerTxn = 80000, kRewritten = 8000, kTxns = 3;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    MetaOpenOptions options;
    options.sqlite_synchronous = "normal";
    auto e = OpenMetaEngine("sqlite:" + path_, options);
    if (!e.ok()) _exit(2);
    for (uint64_t k = 0; k < kTxns; ++k) {
      Status s = (*e)->Transact("bulk", TxnMode::kWrite, [&](Txn& t) -> Status {
        for (uint64_t i = 0; i < kPerTxn; ++i) {
          FOLIO_RETURN_IF_ERROR(t.PutInode(TestInode(1000000 * (k + 1) + i)));
        }
        for (uint64_t i = 0; i < kRewritten; ++i) {  // pages spilled already, changed again
          Inode again = TestInode(1000000 * (k + 1) + i);
          again.size_bytes = 4096 + i;
          FOLIO_RETURN_IF_ERROR(t.PutInode(again));
        }
        return Status::OK();
      });
      if (!s.ok()) {
        std::fprintf(stderr, "child: transaction %llu: %s\n",
                     static_cast<unsigned long long>(k), s.ToString().c_str());
        _exit(3);
      }
    }
    _exit(0);  // no close, no checkpoint: what a kill -9 leaves
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "a large transaction failed in the child";
  auto e = OpenMetaEngine("sqlite:" + path_, {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  for (uint64_t k = 0; k < kTxns; ++k) {
    ASSERT_TRUE((*e)->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
      for (uint64_t i : {uint64_t{0}, kRewritten - 1, kRewritten, kPerTxn - 1}) {
        FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> got, t.GetInode(InodeId{1000000 * (k + 1) + i}));
        EXPECT_TRUE(got.has_value()) << k << " " << i;
        if (got) {
          const uint64_t want = i < kRewritten ? 4096 + i
                                               : TestInode(1000000 * (k + 1) + i).size_bytes;
          EXPECT_EQ(got->size_bytes, want) << k << " " << i;
        }
      }
      return Status::OK();
    }).ok());
  }
  Result<std::unique_ptr<SqliteConn>> raw = SqliteConn::Open(path_, SQLITE_OPEN_READONLY, "t", 1000, "");
  ASSERT_TRUE(raw.ok());
  Result<int64_t> n = (*raw)->QueryInt("SELECT count(*) FROM inodes WHERE ino >= 1000000");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, static_cast<int64_t>(kTxns * kPerTxn));
}

// A steady stream of commits (a mount under `cp -a`, mdtest) never leaves a moment at which
// everything in the WAL is in the database, which is when SQLite starts the WAL over: the
// checkpointer makes one, so the WAL file stays near kRestartFrames (4096) frames instead of
// growing by every commit (60000 commits of ~2 frames: ~500 MB).
TEST_F(SqliteEngineTest, TheWalStartsOverUnderASteadyStreamOfCommits) {
  MetaOpenOptions options;
  options.sqlite_synchronous = "normal";
  auto engine = Formatted(options);
  ASSERT_NE(engine, nullptr);
  constexpr uint64_t kCommits = 30000;
  for (uint64_t i = 2; i < kCommits; ++i) {
    ASSERT_TRUE(engine->Transact("create", TxnMode::kWrite, [&](Txn& t) {
      return t.PutInode(TestInode(i));
    }).ok());
  }
  const MetaStats st = engine->Stats();
  EXPECT_GE(st.wal_restarts, 2u) << st.checkpoints << " checkpoints, WAL at " << st.wal_frames
                                 << " frames";
  // A WAL frame is a database page after a 24-byte header; the page size is in the WAL's own
  // 32-byte header, big-endian at offset 8.
  std::ifstream wal(path_ + "-wal", std::ios::binary);
  unsigned char header[32] = {};
  ASSERT_TRUE(wal.read(reinterpret_cast<char*>(header), sizeof(header)));
  const uint64_t page_bytes = (uint64_t{header[8]} << 24) | (uint64_t{header[9]} << 16) |
                              (uint64_t{header[10]} << 8) | header[11];
  ASSERT_GE(page_bytes, 512u);
  const uint64_t frame_bytes = page_bytes + 24;
  EXPECT_LT(std::filesystem::file_size(path_ + "-wal"), 12000 * frame_bytes)
      << "the WAL grew with the commits";
  EXPECT_LT(st.wal_frames, 12000u);
  std::optional<Inode> got;
  ASSERT_TRUE(engine->Transact("lookup", TxnMode::kRead, [&](Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(got, t.GetInode(InodeId{kCommits - 1}));
    return Status::OK();
  }).ok());
  EXPECT_TRUE(got.has_value());
  engine.reset();
  // Everything is in the database once the engine is closed.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM inodes", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_GE(sqlite3_column_int64(stmt, 0), static_cast<int64_t>(kCommits - 2));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// A child process takes the write lock, tells the parent, holds it for hold_ms, commits.
pid_t HoldWriteLock(const std::string& path, int hold_ms, int ready_fd) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  sqlite3* db = nullptr;
  int rc = sqlite3_open(path.c_str(), &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  const char c = rc == SQLITE_OK ? 'y' : 'n';
  if (write(ready_fd, &c, 1) != 1) _exit(3);
  usleep(hold_ms * 1000);
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  _exit(rc == SQLITE_OK ? 0 : 2);
}

TEST_F(SqliteEngineTest, AnotherProcessHoldingTheLockIsWaitedFor) {
  auto engine = Formatted();
  ASSERT_NE(engine, nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = HoldWriteLock(path_, 300, fds[1]);
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  Status s = engine->Transact("create", TxnMode::kWrite,
                              [](Txn& t) { return t.PutInode(TestInode(2)); });
  EXPECT_TRUE(s.ok()) << s.ToString();  // waited, never "database is locked"
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(fds[0]);
  close(fds[1]);
}

TEST_F(SqliteEngineTest, BusyOnlyAfterTheTimeout) {
  MetaOpenOptions options;
  options.busy_timeout_ms = 100;
  auto engine = Formatted(options);
  ASSERT_NE(engine, nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = HoldWriteLock(path_, 3000, fds[1]);
  char c = 0;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  Status s = engine->Transact("create", TxnMode::kWrite,
                              [](Txn& t) { return t.PutInode(TestInode(2)); });
  EXPECT_EQ(s.code(), StatusCode::kBusy) << s.ToString();
  EXPECT_NE(s.message().find("for 100 ms (busy_timeout_ms); nothing was applied"),
            std::string_view::npos)
      << s.ToString();
  // Reads are not blocked by the writer (WAL).
  Status r = engine->Transact("lookup", TxnMode::kRead,
                              [](Txn& t) { return t.GetInode(kRootInode).status(); });
  EXPECT_TRUE(r.ok()) << r.ToString();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(fds[0]);
  close(fds[1]);
  s = engine->Transact("create", TxnMode::kWrite,
                       [](Txn& t) { return t.PutInode(TestInode(2)); });
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(SqliteEngineTest, ReadOnlyEngineRefusesWrites) {
  ASSERT_NE(Formatted(), nullptr);
  MetaOpenOptions ro;
  ro.read_only = true;
  auto e = OpenMetaEngine("sqlite:" + path_, ro);
  ASSERT_TRUE(e.ok());
  Status s = (*e)->Transact("create", TxnMode::kWrite,
                            [](Txn& t) { return t.PutInode(TestInode(2)); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*e)->AllocateIds(Counter::kNextInode, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE((*e)->Transact("lookup", TxnMode::kRead, [](Txn& t) {
    return t.GetInode(kRootInode).status();
  }).ok());
}

}  // namespace
}  // namespace folio::meta
