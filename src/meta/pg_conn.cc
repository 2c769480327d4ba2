#include "meta/pg_conn.h"

#include <fmt/format.h>

#include <cstring>

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
  // password=... among the parameters
  const size_t q = s.find('?');
  if (q != std::string::npos) {
    std::string kept;
    std::string_view rest = std::string_view(s).substr(q + 1);
    while (!rest.empty()) {
      const size_t amp = rest.find('&');
      const std::string_view kv = rest.substr(0, amp);
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
      if (kv.starts_with("password=")) continue;
      kept += (kept.empty() ? "" : "&") + std::string(kv);
    }
    s = s.substr(0, q) + (kept.empty() ? "" : "?" + kept);
  }
  return s;
}

Result<std::unique_ptr<PgConn>> PgConn::Open(const std::string& conninfo,
                                             const std::string& display) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (c == nullptr) return Status::IOError(display + ": out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    Status s = Status::IOError(fmt::format("{}: cannot connect: {} (is the PostgreSQL server "
                                           "running?)",
                                           display, OneLine(PQerrorMessage(c))));
    PQfinish(c);
    return s;
  }
  std::unique_ptr<PgConn> conn(new PgConn(c, display));
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
  auto it = prepared_.find(std::string(sql));
  if (it == prepared_.end()) {
    const std::string name = fmt::format("s{}", prepared_.size());
    std::vector<Oid> types;
    for (const PgParam& p : params) types.push_back(p.type);
    PgRows r(PQprepare(conn_, name.c_str(), std::string(sql).c_str(),
                       static_cast<int>(types.size()), types.data()));
    FOLIO_RETURN_IF_ERROR(Check(r.raw(), sql));
    it = prepared_.emplace(std::string(sql), name).first;
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (const PgParam& p : params) {
    values.push_back(p.bytes.data());
    lengths.push_back(static_cast<int>(p.bytes.size()));
    formats.push_back(1);
  }
  PgRows r(PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                          values.data(), lengths.data(), formats.data(), /*resultFormat=*/1));
  FOLIO_RETURN_IF_ERROR(Check(r.raw(), sql));
  return r;
}

Result<PgRows> PgConn::Simple(std::string_view sql) {
  if (broken_) return Status::IOError(display_ + ": connection lost");
  PgRows r(PQexec(conn_, std::string(sql).c_str()));
  FOLIO_RETURN_IF_ERROR(Check(r.raw(), sql));
  return r;
}

}  // namespace folio::meta
