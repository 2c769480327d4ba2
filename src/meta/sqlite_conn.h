// SqliteConn: one libsqlite3 connection of the SQLite metadata engine, with its cache of
// prepared statements (prepared once per connection, reset after each use) and the mapping of
// SQLite result codes to Status.
//
// Thread safety: none. A connection is used by one thread at a time (the engine hands out the
// writer connection under its writer mutex and reader connections from a pool).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "folio/status.h"

namespace folio::meta {

class SqliteConn;

// A prepared statement borrowed from a connection's cache. Resets the statement and clears its
// bindings when destroyed, so the next user finds it clean. Move-only.
class SqliteStmt {
 public:
  SqliteStmt(SqliteConn* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  SqliteStmt(SqliteStmt&& o) noexcept : conn_(o.conn_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  SqliteStmt& operator=(SqliteStmt&&) = delete;
  ~SqliteStmt();

  // Parameters are 1-based, as in SQLite. Unsigned 64-bit values are stored bit for bit as
  // SQLite's signed integers (ids stay below 2^63, so they order correctly).
  SqliteStmt& Bind(int i, int64_t v);
  SqliteStmt& BindU64(int i, uint64_t v) { return Bind(i, static_cast<int64_t>(v)); }
  SqliteStmt& BindBlob(int i, std::string_view v);
  SqliteStmt& BindText(int i, std::string_view v);

  // Returns true for a row, false when done; an error Status otherwise (Busy for
  // SQLITE_BUSY / SQLITE_LOCKED).
  Result<bool> Step();
  // Steps a statement that returns no rows.
  Status Run();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  uint64_t U64(int col) const { return static_cast<uint64_t>(Int(col)); }
  std::string_view Blob(int col) const;

 private:
  SqliteConn* conn_;
  sqlite3_stmt* stmt_;
};

class SqliteConn {
 public:
  // Opens `path` with SQLITE_OPEN_* `flags`, sets the busy timeout and returns the connection.
  // `url` names the database in every message; `vfs` names the SQLite VFS (empty: default).
  static Result<std::unique_ptr<SqliteConn>> Open(const std::string& path, int flags,
                                                  std::string url, int64_t busy_timeout_ms,
                                                  const std::string& vfs = {});
  ~SqliteConn();
  SqliteConn(const SqliteConn&) = delete;
  SqliteConn& operator=(const SqliteConn&) = delete;

  // Runs SQL that returns no rows (several statements allowed, separated by ';'). A single
  // statement (BEGIN, COMMIT, SAVEPOINT ...: every transaction runs several) goes through the
  // statement cache: parsing it again each time was a fifth of a lookup's CPU.
  Status Exec(const char* sql);
  // The cached statement for `sql` (prepared on first use).
  Result<SqliteStmt> Prepare(std::string_view sql);
  // Runs a query returning one integer (PRAGMA user_version, SELECT count(*) ...).
  Result<int64_t> QueryInt(const char* sql);

  // Status for SQLite result `rc`: "<url>: <what>: <sqlite message>". Busy for SQLITE_BUSY /
  // SQLITE_LOCKED, Corruption for SQLITE_CORRUPT / SQLITE_NOTADB, NoSpace for SQLITE_FULL,
  // IOError otherwise. Counts busy results (see busy_results()).
  Status Error(int rc, std::string_view what);

  // How many Busy results this connection returned; the engine compares it before and after
  // fn to tell a lock conflict (retry fn) from fn's own error.
  uint64_t busy_results() const { return busy_results_; }
  // True when no transaction is open (SQLite rolls one back by itself after some errors).
  bool autocommit() const { return sqlite3_get_autocommit(db_) != 0; }
  sqlite3* db() const { return db_; }
  const std::string& url() const { return url_; }

 private:
  SqliteConn(sqlite3* db, std::string url) : db_(db), url_(std::move(url)) {}

  sqlite3* db_;
  std::string url_;
  // Looked up by string_view (no std::string built per statement).
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> stmts_;
  uint64_t busy_results_ = 0;
};

}  // namespace folio::meta
