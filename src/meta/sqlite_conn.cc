#include "meta/sqlite_conn.h"

#include <fmt/format.h>

#include <cstring>

#include "meta/sqlite_wal_gather.h"

namespace folio::meta {

SqliteStmt::~SqliteStmt() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

SqliteStmt& SqliteStmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

SqliteStmt& SqliteStmt::BindBlob(int i, std::string_view v) {
  // An empty blob must still be a blob, not NULL: SQLite binds NULL for a null pointer.
  static const char kEmpty = 0;
  sqlite3_bind_blob64(stmt_, i, v.empty() ? &kEmpty : v.data(), v.size(), SQLITE_TRANSIENT);
  return *this;
}

SqliteStmt& SqliteStmt::BindText(int i, std::string_view v) {
  sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Result<bool> SqliteStmt::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return conn_->Error(rc, sqlite3_sql(stmt_));
}

Status SqliteStmt::Run() {
  auto r = Step();
  if (!r.ok()) return r.status();
  return Status::OK();
}

std::string_view SqliteStmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr || n <= 0) return {};
  return {static_cast<const char*>(p), static_cast<size_t>(n)};
}

Result<std::unique_ptr<SqliteConn>> SqliteConn::Open(const std::string& path, int flags,
                                                     std::string url, int64_t busy_timeout_ms,
                                                     const std::string& vfs) {
  // Every connection writes its WAL through the gathering shim (sqlite_wal_gather.h).
  FOLIO_ASSIGN_OR_RETURN(std::string gather, WalGatherVfs(vfs));
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, gather.c_str());
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Status::IOError(fmt::format("{}: cannot open the database: {}", url, msg));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(std::min<int64_t>(busy_timeout_ms, INT32_MAX)));
  return std::unique_ptr<SqliteConn>(new SqliteConn(db, std::move(url)));
}

SqliteConn::~SqliteConn() {
  for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status SqliteConn::Exec(const char* sql) {
  if (std::strchr(sql, ';') == nullptr) {
    FOLIO_ASSIGN_OR_RETURN(SqliteStmt stmt, Prepare(sql));
    return stmt.Run();
  }
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return Status::OK();
}

Result<SqliteStmt> SqliteConn::Prepare(std::string_view sql) {
  auto it = stmts_.find(sql);
  if (it == stmts_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sql);
    it = stmts_.emplace(std::string(sql), stmt).first;
  }
  return SqliteStmt(this, it->second);
}

Result<int64_t> SqliteConn::QueryInt(const char* sql) {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt stmt, Prepare(sql));
  FOLIO_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Status::Corruption(fmt::format("{}: {} returned no row", url_, sql));
  return stmt.Int(0);
}

Status SqliteConn::Error(int rc, std::string_view what) {
  const int primary = rc & 0xff;
  std::string msg = fmt::format("{}: {}: {}", url_, what, sqlite3_errmsg(db_));
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      ++busy_results_;
      return Status::Busy(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_FULL:
      return Status::NoSpace(msg);
    default:
      return Status::IOError(msg);
  }
}

}  // namespace folio::meta
