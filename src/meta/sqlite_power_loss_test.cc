// Power cuts under the SQLite engine (PowerLossVfs drops the writes no fsync covered, or a
// random subset of them): with synchronous=FULL every committed transaction survives; with
// NORMAL every transaction before the last Sync() survives, later ones may be lost, and what
// survives is always a prefix of the commits (never a later one without an earlier one, never
// a database that does not open or fails PRAGMA integrity_check).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <string>

#include "base/test_seed.h"
#include "meta/meta_conformance.h"
#include "meta/meta_engine.h"
#include "meta/sqlite_power_loss_vfs.h"

namespace folio::meta {
namespace {

using test::PowerLossVfs;

class SqlitePowerLossTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "folio-powerloss-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/meta.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<MetaEngine> Open(const std::string& synchronous) {
    MetaOpenOptions o;
    o.sqlite_synchronous = synchronous;
    o.sqlite_vfs = PowerLossVfs::kName;
    PowerLossVfs::Get();
    auto e = OpenMetaEngine("sqlite:" + path_, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }
  static void Commit(MetaEngine* e, uint64_t ino) {
    Status s = e->Transact("put", TxnMode::kWrite,
                           [&](Txn& t) { return t.PutInode(TestInode(ino)); });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // After the power cut: how many of inodes 2..2+n-1 are there, checking they are a prefix.
  size_t SurvivingPrefix(size_t n) {
    {
      sqlite3* db = nullptr;
      EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      EXPECT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
      EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
      EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
      sqlite3_finalize(st);
      sqlite3_close(db);
    }
    auto e = OpenMetaEngine("sqlite:" + path_, {});
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return 0;
    size_t prefix = 0;
    bool gap = false;
    Status s = (*e)->Transact("check", TxnMode::kRead, [&](Txn& t) -> Status {
      for (size_t i = 0; i < n; ++i) {
        FOLIO_ASSIGN_OR_RETURN(std::optional<Inode> got, t.GetInode(InodeId{2 + i}));
        if (got && gap) {
          ADD_FAILURE() << "inode " << 2 + i << " survived, an earlier commit did not";
        }
        if (got && !gap) prefix++;
        if (!got) gap = true;
      }
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return prefix;
  }
  // Commits `synced` transactions, Sync(), `more` transactions, then cuts the power (seed 0:
  // every unsynced write lost; else a random subset kept) and returns the surviving prefix.
  size_t Run(const std::string& synchronous, size_t synced, size_t more, uint64_t seed) {
    std::filesystem::remove(path_);
    std::unique_ptr<MetaEngine> e = Open(synchronous);
    if (!e) return 0;
    EXPECT_TRUE(e->Init(MetaEngine::InitMode::kCreate).ok());
    EXPECT_TRUE(e->Sync().ok());
    for (size_t i = 0; i < synced; ++i) Commit(e.get(), 2 + i);
    Status s = e->Sync();
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < more; ++i) Commit(e.get(), 2 + synced + i);
    auto image = PowerLossVfs::Get().Image(path_, seed);
    e.reset();  // closing checkpoints, which the power cut did not let happen
    EXPECT_TRUE(PowerLossVfs::Get().WriteImage(path_, image).ok());
    return SurvivingPrefix(synced + more);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqlitePowerLossTest, FullKeepsEveryCommittedTransaction) {
  EXPECT_EQ(Run("full", 20, 20, 0), 40u);
}

TEST_F(SqlitePowerLossTest, NormalKeepsWhatSyncMadeDurableAndLosesTheRest) {
  const uint64_t syncs_before = PowerLossVfs::Get().syncs();
  // Every unsynced write dropped: exactly the transactions before Sync survive (20 small
  // transactions stay far below the auto-checkpoint, which would sync).
  EXPECT_EQ(Run("normal", 20, 20, 0), 20u);
  EXPECT_GT(PowerLossVfs::Get().syncs(), syncs_before);
}

TEST_F(SqlitePowerLossTest, NormalSurvivesAnySubsetOfUnsyncedWritesAsAPrefix) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 12; ++i) {
    const uint64_t image_seed = rng() | 1;  // never 0 (0 drops every unsynced write)
    const size_t kept = Run("normal", 10, 30, image_seed);
    EXPECT_GE(kept, 10u);
    EXPECT_LE(kept, 40u);
  }
}

TEST_F(SqlitePowerLossTest, SyncWithNothingNewIsFree) {
  std::unique_ptr<MetaEngine> e = Open("normal");
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->Init(MetaEngine::InitMode::kCreate).ok());
  Commit(e.get(), 2);
  ASSERT_TRUE(e->Sync().ok());
  const uint64_t fsyncs = e->Stats().fsyncs;
  ASSERT_TRUE(e->Sync().ok());
  EXPECT_EQ(e->Stats().fsyncs, fsyncs);
  Commit(e.get(), 3);
  ASSERT_TRUE(e->Sync().ok());
  EXPECT_EQ(e->Stats().fsyncs, fsyncs + 1);
}

}  // namespace
}  // namespace folio::meta
