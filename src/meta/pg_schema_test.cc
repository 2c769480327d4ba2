// The PostgreSQL schema's chunk layout (version 2) and the upgrade of version 1 volumes, against
// the `pg` fixture's server: an append is a row of chunk_appends and leaves the chunk's list
// as it was; PutChunk folds them; a version 1 volume is refused read-only and upgraded by a
// read-write open with its lists intact.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "meta/meta_conformance.h"
#include "meta/pg_conn.h"
#include "meta/pg_suite.h"
#include "meta/test_services.h"

namespace folio::meta {
namespace {

class PgSchemaTest : public testing::Test {
 protected:
  void SetUp() override {
    factory_ = PgFactory();
    if (std::string skip = factory_.skip(); !skip.empty()) GTEST_SKIP() << skip;
    auto url = factory_.new_url(fmt::format(
        "{}-{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), getpid()));
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    schema_ = PgSchemaOf(url_);
    auto conn = PgTestConn();
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    sql_ = std::move(*conn);
  }
  void TearDown() override {
    if (!url_.empty()) factory_.drop(url_);
  }
  Result<std::unique_ptr<MetaEngine>> Open(bool read_only) {
    MetaOpenOptions o;
    o.read_only = read_only;
    return OpenMetaEngine(url_, o);
  }
  // The only row of a one-column query on the volume's schema ("{}" stands for it), as text.
  std::string One(const std::string& sql) {
    std::string q = sql;
    for (size_t p; (p = q.find("{}")) != std::string::npos;) q.replace(p, 2, schema_);
    auto r = sql_->Simple(q);
    if (!r.ok()) return "error: " + r.status().ToString();
    return r->size() == 1 ? std::string(r->Bytes(0, 0)) : "rows: " + std::to_string(r->size());
  }
  static Status Write(MetaEngine& e, const std::function<Status(Txn&)>& fn) {
    return e.Transact("test", TxnMode::kWrite, fn);
  }
  static Result<std::vector<Slice>> Chunk(MetaEngine& e, uint32_t index) {
    std::vector<Slice> out;
    FOLIO_RETURN_IF_ERROR(e.Transact("test", TxnMode::kRead, [&](Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(out, t.GetChunk(InodeId{5}, index));
      return Status::OK();
    }));
    return out;
  }

  MetaEngineFactory factory_;
  std::string url_, schema_;
  std::unique_ptr<PgConn> sql_;
};

TEST_F(PgSchemaTest, AppendsAreRowsOfTheirOwnThatPutChunkFolds) {
  auto e = Open(false);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE((*e)->Init(MetaEngine::InitMode::kCreate).ok());
  const Slice s1 = TestSlice(0, 4096, 11), s2 = TestSlice(4096, 10, 12),
              s3 = TestSlice(8192, 20, 13), s4 = TestSlice(100, 30, 14);
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.PutChunk(InodeId{5}, 0, {s1}); }).ok());
  ASSERT_TRUE(Write(**e, [&](Txn& t) -> Status {
    const std::vector<Slice> two{s2, s3};
    return t.AppendSlices(InodeId{5}, 0, two);
  }).ok());
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.AppendSlice(InodeId{5}, 0, s4); }).ok());
  EXPECT_EQ(One("SELECT length(slices)::text FROM {}.chunks WHERE ino = 5 AND idx = 0"), "32")
      << "an append rewrote the chunk's list";
  EXPECT_EQ(One("SELECT appends::text FROM {}.chunks WHERE ino = 5 AND idx = 0"), "2");
  EXPECT_EQ(One("SELECT string_agg(n::text || ':' || (length(slices) / 32)::text, ',' ORDER BY n) "
                "FROM {}.chunk_appends"),
            "1:2,2:1");
  auto c = Chunk(**e, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (std::vector<Slice>{s1, s2, s3, s4}));

  // PutChunk writes the list whole and drops the appends; numbering starts again.
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.PutChunk(InodeId{5}, 0, {s4}); }).ok());
  EXPECT_EQ(One("SELECT count(*)::text FROM {}.chunk_appends"), "0");
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.AppendSlice(InodeId{5}, 0, s1); }).ok());
  EXPECT_EQ(One("SELECT string_agg(n::text, ',') FROM {}.chunk_appends"), "1");
  c = Chunk(**e, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (std::vector<Slice>{s4, s1}));
  // A chunk made by an append alone, then deleted: nothing of it stays.
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.AppendSlice(InodeId{5}, 7, s2); }).ok());
  c = Chunk(**e, 7);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<Slice>{s2}));
  ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.PutChunk(InodeId{5}, 7, {}); }).ok());
  EXPECT_EQ(One("SELECT count(*)::text FROM {}.chunks WHERE idx = 7"), "0");
  EXPECT_EQ(One("SELECT count(*)::text FROM {}.chunk_appends WHERE idx = 7"), "0");
}

TEST_F(PgSchemaTest, AVersion1VolumeIsUpgradedByAReadWriteOpenOnly) {
  const Slice s1 = TestSlice(0, 4096, 11), s2 = TestSlice(4096, 10, 12);
  {
    auto e = Open(false);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->Init(MetaEngine::InitMode::kCreate).ok());
    ASSERT_TRUE(Write(**e, [&](Txn& t) { return t.PutChunk(InodeId{5}, 0, {s1, s2}); }).ok());
  }
  // What version 1 was: no chunk_appends, no appends column.
  ASSERT_EQ(One("DROP TABLE {}.chunk_appends; ALTER TABLE {}.chunks DROP COLUMN appends; UPDATE "
                "{}.folio_meta SET value = '1' WHERE name = 'schema_version'; SELECT 'ok'"),
            "ok");

  auto ro = Open(true);
  Status s = ro.ok() ? Chunk(**ro, 0).status() : ro.status();
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.ToString();
  EXPECT_NE(std::string(s.message()).find("version 1"), std::string::npos) << s.ToString();
  EXPECT_EQ(One("SELECT value FROM {}.folio_meta WHERE name = 'schema_version'"), "1")
      << "a read-only open changed the volume";

  auto rw = Open(false);
  ASSERT_TRUE(rw.ok()) << rw.status().ToString();
  auto c = Chunk(**rw, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (std::vector<Slice>{s1, s2}));
  EXPECT_EQ(One("SELECT value FROM {}.folio_meta WHERE name = 'schema_version'"), "2");
  ASSERT_TRUE(Write(**rw, [&](Txn& t) { return t.AppendSlice(InodeId{5}, 0, s1); }).ok());
  c = Chunk(**rw, 0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (std::vector<Slice>{s1, s2, s1}));
  // A second engine finds nothing to upgrade.
  auto again = Open(false);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(Chunk(**again, 0).ok());
}

}  // namespace
}  // namespace folio::meta
