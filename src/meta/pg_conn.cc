#include "meta/pg_conn.h"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <optional>

#include "base/poll_wait.h"
#include "meta/server_util.h"

namespace folio::meta {
namespace {

bool IsConflictState(const char* state) {
  return state != nullptr && (std::strcmp(state, "40001") == 0 ||
                              std::strcmp(state, "40P01") == 0 || std::strcmp(state, "23505") == 0);
}

std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// The URL without the query parameters (KEY=VALUE) that drop says to take out; the others stay
// in their order.
std::string DropQueryParams(std::string_view url,
                            const std::function<bool(std::string_view kv)>& drop) {
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return std::string(url);
  std::string kept;
  std::string_view rest = url.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view kv = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (drop(kv)) continue;
    kept += (kept.empty() ? "" : "&") + std::string(kv);
  }
  return std::string(url.substr(0, q)) + (kept.empty() ? "" : "?" + kept);
}

}  // namespace

PgParam PgParam::I(int64_t v) {
  std::string b(8, '\0');
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(u >> (8 * (7 - i)));
  return PgParam{20, std::move(b)};
}

int64_t PgRows::Int(int row, int col) const {
  const char* p = PQgetvalue(r_, row, col);
  if (PQgetlength(r_, row, col) != 8) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return static_cast<int64_t>(v);
}

std::string PgDisplayUrl(std::string_view url) {
  std::string s(url);
  const size_t scheme = s.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = s.find('@', start);
    const size_t slash = s.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = s.find(':', start);
      if (colon != std::string::npos && colon < at) s.erase(colon, at - colon);
    }
  }
  return DropQueryParams(s, [](std::string_view kv) { return kv.starts_with("password="); });
}

Result<int> TakePgPollUs(std::string* url) {
  int poll_us = static_cast<int>(kDefaultPollUs);
  std::optional<std::string> bad;
  std::string without = DropQueryParams(*url, [&](std::string_view kv) {
    if (!kv.starts_with("poll_us=")) return false;
    const std::string_view v = kv.substr(8);
    if (const std::optional<uint32_t> parsed = ParsePollUs(v)) {
      poll_us = static_cast<int>(*parsed);
    } else {
      bad = std::string(v);
    }
    return true;
  });
  if (bad) {
    return Status::InvalidArgument(fmt::format(
        "'{}': poll_us '{}' is not 0..{} (microseconds of polling for a reply)",
        PgDisplayUrl(*url), *bad, kMaxPollUs));
  }
  *url = std::move(without);
  return poll_us;
}

Result<std::unique_ptr<PgConn>> PgConn::Open(const std::string& conninfo,
                                             const std::string& display, int poll_us) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (c == nullptr) return Status::IOError(display + ": out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    Status s = Status::IOError(fmt::format("{}: cannot connect: {} (is the PostgreSQL server "
                                           "running?)",
                                           display, OneLine(PQerrorMessage(c))));
    PQfinish(c);
    return s;
  }
  std::unique_ptr<PgConn> conn(new PgConn(c, display, poll_us));
  FOLIO_ASSIGN_OR_RETURN(PgRows me, conn->Exec("SELECT pg_backend_pid()::int8, backend_start::text "
                                               "FROM pg_stat_activity WHERE pid = "
                                               "pg_backend_pid()"));
  if (me.size() != 1 || me.Null(0, 1)) {
    return Status::IOError(display + ": pg_stat_activity does not show this connection");
  }
  conn->identity_ = Identity{NewConnectionId(), me.Int(0, 0), std::string(me.Bytes(0, 1))};
  return conn;
}

Status PgConn::Check(PGresult* r, std::string_view sql) {
  const ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::OK();
  if (r == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    broken_ = true;
    return Status::IOError(fmt::format("{}: connection lost: {}", display_,
                                       OneLine(PQerrorMessage(conn_))));
  }
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string msg =
      OneLine(r != nullptr ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
  if (IsConflictState(state)) {
    conflict_ = true;
    return Status::Busy(fmt::format("{}: conflict ({}): {}", display_, state, msg));
  }
  const std::string_view head = sql.substr(0, std::min<size_t>(sql.size(), 60));
  return Status::IOError(fmt::format("{}: {}: {}", display_, head, msg));
}

Result<PgRows> PgConn::Exec(std::string_view sql, const std::vector<PgParam>& params) {
  if (broken_) return Status::IOError(display_ + ": connection lost");
  // After the queued statements, or alone: a pipeline of one is one round trip, its Prepare
  // (on first use) included.
  const Statement last{std::string(sql), params, /*prepared=*/true};
  return RunPipeline(&last);
}

Result<PgRows> PgConn::Simple(std::string_view sql) {
  if (broken_) return Status::IOError(display_ + ": connection lost");
  FOLIO_RETURN_IF_ERROR(Flush());
  PgRows r(PQexec(conn_, std::string(sql).c_str()));
  FOLIO_RETURN_IF_ERROR(Check(r.raw(), sql));
  return r;
}

Status PgConn::Queue(std::string_view sql, std::vector<PgParam> params, bool prepared) {
  if (broken_) return Status::IOError(display_ + ": connection lost");
  queued_.push_back(Statement{std::string(sql), std::move(params), prepared});
  return queued_.size() >= kQueueMax ? Flush() : Status::OK();
}

Status PgConn::Flush() {
  if (queued_.empty()) return Status::OK();
  return RunPipeline(nullptr).status();
}

Status PgConn::LostWhileSending() {
  broken_ = true;
  return Status::IOError(
      fmt::format("{}: connection lost: {}", display_, OneLine(PQerrorMessage(conn_))));
}

// libpq's pipeline mode: every statement (and the Prepare of one not prepared yet) is sent,
// then one Sync; the results come back in order, each command's followed by a NULL, the Sync's
// last. The server runs nothing after a failed command until the Sync (PGRES_PIPELINE_ABORTED).
// The results are small (a command tag per write; rows only for the last statement), so
// sending everything before reading cannot fill both sockets' buffers.
Result<PgRows> PgConn::RunPipeline(const Statement* last) {
  std::vector<Statement> stmts = std::move(queued_);
  queued_.clear();
  if (broken_) return Status::IOError(display_ + ": connection lost");
  if (last != nullptr) stmts.push_back(*last);
  if (stmts.empty()) return PgRows(nullptr);
  if (PQenterPipelineMode(conn_) != 1) return LostWhileSending();
  struct Sent {
    size_t stmt;
    bool prepare;  // the Prepare of stmt (its Execute is the next command)
  };
  std::vector<Sent> sent;
  std::vector<Oid> types;
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const Statement& st = stmts[i];
    if (!st.prepared) {
      if (PQsendQueryParams(conn_, st.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1) !=
          1) {
        return LostWhileSending();
      }
      sent.push_back({i, false});
      continue;
    }
    auto it = prepared_.find(st.sql);
    if (it == prepared_.end()) {
      const std::string name = fmt::format("s{}", next_statement_++);
      types.clear();
      for (const PgParam& p : st.params) types.push_back(p.type);
      if (PQsendPrepare(conn_, name.c_str(), st.sql.c_str(), static_cast<int>(types.size()),
                        types.data()) != 1) {
        return LostWhileSending();
      }
      sent.push_back({i, true});
      it = prepared_.emplace(st.sql, name).first;  // forgotten below if the Prepare fails
    }
    values.clear();
    lengths.clear();
    formats.clear();
    for (const PgParam& p : st.params) {
      values.push_back(p.bytes.data());
      lengths.push_back(static_cast<int>(p.bytes.size()));
      formats.push_back(1);
    }
    if (PQsendQueryPrepared(conn_, it->second.c_str(), static_cast<int>(st.params.size()),
                            values.data(), lengths.data(), formats.data(),
                            /*resultFormat=*/1) != 1) {
      return LostWhileSending();
    }
    sent.push_back({i, false});
  }
  if (PQpipelineSync(conn_) != 1) return LostWhileSending();
  // Poll for the results before PQgetResult blocks (libpq's socket is non-blocking; a read
  // error stops the polling and PQgetResult reports it).
  if (PQisBusy(conn_) == 1) {
    PollFor(poll_ns_, [this] {
      if (PQconsumeInput(conn_) != 1) return PollStep::kGiveUp;
      return PQisBusy(conn_) == 1 ? PollStep::kNothing : PollStep::kDone;
    });
  }

  Status first_error;
  std::optional<PgRows> rows;
  for (const Sent& s : sent) {
    const std::string& sql = stmts[s.stmt].sql;
    PgRows r(PQgetResult(conn_));
    const ExecStatusType st = PQresultStatus(r.raw());
    if (r.raw() == nullptr || st != PGRES_PIPELINE_ABORTED) {
      Status c = Check(r.raw(), sql);
      if (broken_) return c;
      if (!c.ok() && first_error.ok()) first_error = std::move(c);
    }
    if (s.prepare && st != PGRES_COMMAND_OK) prepared_.erase(sql);
    PGresult* end = PQgetResult(conn_);  // the command's NULL
    if (end != nullptr) {
      PQclear(end);
      broken_ = true;
      return Status::IOError(display_ + ": unexpected extra result in a pipeline");
    }
    if (!s.prepare && s.stmt + 1 == stmts.size()) rows.emplace(std::move(r));
  }
  PgRows sync(PQgetResult(conn_));
  if (PQresultStatus(sync.raw()) != PGRES_PIPELINE_SYNC || PQexitPipelineMode(conn_) != 1) {
    return LostWhileSending();
  }
  if (!first_error.ok()) return first_error;
  if (!rows) return PgRows(nullptr);
  return std::move(*rows);
}

}  // namespace folio::meta
