// Runs the MetaEngine conformance suite (meta_conformance.h) on the SQLite engine.
#include <sqlite3.h>

#include "meta/meta_conformance.h"

namespace folio::meta {
namespace {

Status WriteRawChunk(const std::string& url, InodeId ino, uint32_t index, std::string_view bytes) {
  const std::string path = url.substr(url.find(':') + 1);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_stmt* stmt = nullptr;
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10000);
    rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO chunks(ino, idx, slices) VALUES(?, ?, ?)",
                            -1, &stmt, nullptr);
  }
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(stmt, 1, static_cast<int64_t>(Raw(ino)));
    sqlite3_bind_int64(stmt, 2, index);
    sqlite3_bind_blob64(stmt, 3, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  Status s = rc == SQLITE_OK ? Status::OK() : Status::IOError(sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  sqlite3_close_v2(db);
  return s;
}

MetaEngineFactory SqliteFactory() {
  MetaEngineFactory f;
  f.name = "Sqlite";
  f.new_url = [](const std::string& dir) -> Result<std::string> {
    return "sqlite:" + dir + "/meta.db";
  };
  f.write_raw_chunk = &WriteRawChunk;
  return f;
}

INSTANTIATE_TEST_SUITE_P(Sqlite, MetaEngineTest, testing::Values(SqliteFactory()),
                         MetaFactoryName);

}  // namespace
}  // namespace folio::meta
