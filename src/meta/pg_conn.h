// PgConn: one libpq connection of the PostgreSQL metadata engine, with its prepared statements
// (prepared on first use, by SQL text) and the mapping of SQLSTATEs to what the engine does:
//   40001 serialization failure, 40P01 deadlock, 23505 unique violation (a race between two
//   inserts): a conflict, the transaction re-runs (conflict() is set);
//   a lost connection: broken() is set, the engine replaces the connection;
//   anything else: IOError "<url>: <statement>: <server message>".
// Parameters and results use libpq's binary format: integers are int8 (every integer column
// of the schema is BIGINT), names and blobs bytea, strings text.
//
// Round trips: statements that return nothing the caller needs (a transaction's BEGIN, its
// writes, COMMIT) are queued (Queue) and go out with the next statement that returns rows, or
// with Flush, as one libpq pipeline: one round trip for all of them. A queued statement's error
// is returned by the call that sends it; the statements after a failed one in the same pipeline
// are not run (the server aborts the pipeline), so the transaction is left in error as if the
// failing statement had run alone.
//
// Thread safety: none; one thread at a time (the engine's pool).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/poll_wait.h"
#include "folio/status.h"

namespace folio::meta {

// One statement parameter, binary.
struct PgParam {
  unsigned int type = 0;  // OID: 20 int8, 17 bytea, 25 text
  std::string bytes;
  static PgParam I(int64_t v);
  static PgParam U(uint64_t v) { return I(static_cast<int64_t>(v)); }  // bit for bit
  static PgParam B(std::string_view v) { return PgParam{17, std::string(v)}; }
  static PgParam T(std::string_view v) { return PgParam{25, std::string(v)}; }
};

// The rows of a statement's result. Move-only.
class PgRows {
 public:
  explicit PgRows(PGresult* r) : r_(r) {}
  PgRows(PgRows&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgRows& operator=(PgRows&&) = delete;
  ~PgRows() { PQclear(r_); }
  int size() const { return PQntuples(r_); }
  PGresult* raw() const { return r_; }
  bool Null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  int64_t Int(int row, int col) const;  // an int8 column
  uint64_t U64(int row, int col) const { return static_cast<uint64_t>(Int(row, col)); }
  std::string_view Bytes(int row, int col) const {
    return std::string_view(PQgetvalue(r_, row, col), PQgetlength(r_, row, col));
  }

 private:
  PGresult* r_;
};

class PgConn {
 public:
  // Connects and learns its Identity. Waiting for a pipeline's results, the connection polls
  // its socket (base/poll_wait.h) for up to poll_us before libpq blocks, as RedisConn does
  // (0: never). Errors: IOError naming `display` (the URL without its password).
  static Result<std::unique_ptr<PgConn>> Open(const std::string& conninfo,
                                              const std::string& display,
                                              int poll_us = static_cast<int>(kDefaultPollUs));
  ~PgConn() { PQfinish(conn_); }
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs a prepared statement (prepared on first use), after what is queued, in one round trip.
  Result<PgRows> Exec(std::string_view sql, const std::vector<PgParam>& params = {});
  // Runs SQL without parameters (BEGIN, COMMIT, DDL; several statements allowed); the rows of
  // the last one, in text format. What is queued is sent first.
  Result<PgRows> Simple(std::string_view sql);
  // Queues a statement that returns no rows: prepared (on first use) with `params`, or, with
  // prepared = false, one parameterless statement such as BEGIN or COMMIT. Sent by the next
  // Exec, Simple or Flush (or here, once kQueueMax statements wait). Errors: IOError on a
  // connection already lost (or lost sending a full queue), a queued statement's error.
  Status Queue(std::string_view sql, std::vector<PgParam> params, bool prepared = true);
  // Sends what is queued, in one round trip. OK when nothing is queued.
  Status Flush();
  // Forgets what is queued (the transaction it belonged to is abandoned).
  void DiscardQueued() { queued_.clear(); }
  size_t queued() const { return queued_.size(); }
  static constexpr size_t kQueueMax = 64;

  bool broken() const { return broken_; }
  bool conflict() const { return conflict_; }
  void clear_conflict() { conflict_ = false; }
  // Whether the connection is idle outside a transaction.
  bool idle() const { return PQtransactionStatus(conn_) == PQTRANS_IDLE; }
  // Whether a statement failed inside the open transaction (it can only roll back).
  bool in_error() const { return PQtransactionStatus(conn_) == PQTRANS_INERROR; }
  const std::string& display() const { return display_; }

  // Who this connection is, for a commit whose reply it lost (pg_engine.cc): its commit
  // marker's key (txn_markers.conn, NewConnectionId) and its server process, whose pid and
  // start time tell, from another connection, whether that process is still running.
  struct Identity {
    uint64_t id = 0;
    int64_t backend_pid = 0;
    std::string backend_start;  // pg_stat_activity.backend_start as text
  };
  const Identity& identity() const { return identity_; }
  // The marker value of this connection's next write transaction: 1, 2, ...
  uint64_t NextCommitSeq() { return ++commit_seq_; }

 private:
  PgConn(PGconn* c, std::string display, int poll_us)
      : conn_(c), display_(std::move(display)), poll_ns_(int64_t{poll_us} * 1000) {}
  struct Statement {
    std::string sql;
    std::vector<PgParam> params;
    bool prepared = true;
  };
  // OK for a result of status `want`; else the mapped error (sets conflict_ / broken_).
  Status Check(PGresult* r, std::string_view sql);
  // Sends queued_, then `last` if given, as one pipeline; clears queued_. The rows of `last`
  // (of the last queued statement without it); the first error otherwise.
  Result<PgRows> RunPipeline(const Statement* last);
  Status LostWhileSending();

  PGconn* conn_;
  std::string display_;
  int64_t poll_ns_;  // polling for a pipeline's results before blocking (Open's poll_us)
  std::unordered_map<std::string, std::string> prepared_;  // SQL -> statement name
  uint64_t next_statement_ = 0;                             // names s0, s1, ...
  std::vector<Statement> queued_;
  bool broken_ = false;
  bool conflict_ = false;
  Identity identity_;
  uint64_t commit_seq_ = 0;
};

// The URL without its password (userinfo and password= parameter), for messages.
std::string PgDisplayUrl(std::string_view url);

// Takes Folio's own parameter poll_us=N (0..kMaxPollUs, default kDefaultPollUs: see
// PgConn::Open) out of a postgres:// URL's query, which then goes to libpq as it is. Errors: InvalidArgument naming
// the value.
Result<int> TakePgPollUs(std::string* url);

}  // namespace folio::meta
