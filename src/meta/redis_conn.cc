#include "meta/redis_conn.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <charconv>

#include "base/poll_wait.h"
#include "meta/server_util.h"

namespace folio::meta {
namespace {

bool PrefixCharsOk(std::string_view p) {
  if (p.empty() || p.size() > 64 || p == "." || p == "..") return false;
  for (char c : p) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = Hex(in[i + 1]);
    const int lo = Hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

bool ParseInt(std::string_view s, int lo, int hi, int* out) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

void AppendDecimal(std::string* out, char kind, size_t n) {
  char buf[24];
  buf[0] = kind;
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n);
  *end++ = '\r';
  *end++ = '\n';
  out->append(buf, static_cast<size_t>(end - buf));
}

// One command in RESP: *N then $LEN ARG for each argument.
void AppendResp(std::string* out, const RedisCmd& cmd) {
  size_t need = 16;
  for (const std::string& a : cmd) need += a.size() + 16;
  out->reserve(out->size() + need);
  AppendDecimal(out, '*', cmd.size());
  for (const std::string& a : cmd) {
    AppendDecimal(out, '$', a.size());
    out->append(a);
    out->append("\r\n", 2);
  }
}

timeval Tv(int64_t ms) {
  timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

}  // namespace

std::string RedisUrl::Display() const {
  std::string s = "redis://";
  if (!user.empty()) s += user + "@";
  s += fmt::format("{}:{}/{}", host, port, db);
  if (prefix != "folio") s += "?prefix=" + prefix;
  return s;
}

Result<RedisUrl> ParseRedisUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format(
        "'{}': {}; use redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=NAME][&poll_us=N]", url,
        why));
  };
  std::string_view rest = url;
  if (!rest.starts_with("redis://")) return bad("not a redis:// URL");
  rest.remove_prefix(8);
  RedisUrl u;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view kv = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (kv.starts_with("poll_us=")) {
        const std::optional<uint32_t> poll_us = ParsePollUs(kv.substr(8));
        if (!poll_us) return bad(fmt::format("poll_us '{}' is not 0..{}", kv.substr(8), kMaxPollUs));
        u.poll_us = static_cast<int>(*poll_us);
        continue;
      }
      if (!kv.starts_with("prefix=")) return bad(fmt::format("unknown parameter '{}'", kv));
      u.prefix = std::string(kv.substr(7));
      if (!PrefixCharsOk(u.prefix)) {
        return bad(fmt::format("prefix '{}' must be 1..64 of [A-Za-z0-9._-]", u.prefix));
      }
    }
  }
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view auth = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = auth.find(':');
    if (!PercentDecode(auth.substr(0, colon), &u.user)) return bad("bad %-escape in the user");
    if (colon != std::string_view::npos && !PercentDecode(auth.substr(colon + 1), &u.password)) {
      return bad("bad %-escape in the password");
    }
    if (colon == std::string_view::npos) {  // redis://PASSWORD@host is common shorthand
      u.password = u.user;
      u.user.clear();
    }
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty() && !ParseInt(db, 0, 1 << 20, &u.db)) {
      return bad(fmt::format("database '{}' is not a number", db));
    }
  }
  if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos &&
                                            rest.find(']') == std::string_view::npos) {
    if (!ParseInt(rest.substr(colon + 1), 1, 65535, &u.port)) {
      return bad(fmt::format("port '{}' is not 1..65535", rest.substr(colon + 1)));
    }
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad("no host");
  u.host = std::string(rest);
  return u;
}

Result<std::unique_ptr<RedisConn>> RedisConn::Open(const RedisUrl& url, int64_t timeout_ms) {
  const std::string display = url.Display();
  redisContext* ctx = redisConnectWithTimeout(url.host.c_str(), url.port, Tv(timeout_ms));
  if (ctx == nullptr) return Status::IOError(fmt::format("{}: out of memory", display));
  if (ctx->err != 0) {
    Status s = Status::IOError(
        fmt::format("{}: cannot connect: {} (is the Redis server running?)", display, ctx->errstr));
    redisFree(ctx);
    return s;
  }
  redisSetTimeout(ctx, Tv(timeout_ms));
  // hiredis frees its read buffer whenever it is empty and more than 16 KiB of it is unused:
  // after every reply of a 1000-entry listing (~80 KiB), to allocate it again for the next.
  // Kept up to 1 MiB. (Alone this made no difference the bench could show; the
  // malloc_consolidate in a readdir's profile comes from its large vectors, not from here.)
  ctx->reader->maxbuf = size_t{1} << 20;
  ctx->reader->fn = RedisReplyFunctions();  // no reply has been read yet
  std::unique_ptr<RedisConn> conn(new RedisConn(ctx, display, NewConnectionId(), url.poll_us));
  if (!url.password.empty()) {
    RedisCmd auth = url.user.empty() ? RedisCmd{"AUTH", url.password}
                                     : RedisCmd{"AUTH", url.user, url.password};
    FOLIO_ASSIGN_OR_RETURN(RedisReply r, conn->Run1(auth));
    if (IsError(r.get())) {
      return Status::IOError(fmt::format("{}: AUTH failed: {}", display, ReplyText(r.get())));
    }
  }
  if (url.db != 0) {
    FOLIO_ASSIGN_OR_RETURN(RedisReply r, conn->Run1({"SELECT", std::to_string(url.db)}));
    if (IsError(r.get())) {
      return Status::IOError(
          fmt::format("{}: SELECT {} failed: {}", display, url.db, ReplyText(r.get())));
    }
  }
  return conn;
}

RedisConn::~RedisConn() { redisFree(ctx_); }

Status RedisConn::Fail(std::string_view what) {
  broken_ = true;
  return Status::IOError(fmt::format("{}: {}: {} (connection lost)", display_, what,
                                     ctx_->err != 0 ? ctx_->errstr : "no reply"));
}

int RedisConn::NextReply(void** reply, bool poll) {
  *reply = nullptr;
  if (redisGetReplyFromReader(ctx_, reply) != REDIS_OK) return REDIS_ERR;
  if (*reply != nullptr) return REDIS_OK;
  if (!poll) return redisGetReply(ctx_, reply);
  bool failed = false;
  const bool got = PollFor(poll_ns_, [&] {
    char buf[16384];
    const ssize_t n = ::recv(ctx_->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      // A reader error: the blocking read below meets it again and reports it.
      if (redisReaderFeed(ctx_->reader, buf, static_cast<size_t>(n)) != REDIS_OK) {
        return PollStep::kGiveUp;
      }
      if (redisGetReplyFromReader(ctx_, reply) != REDIS_OK) {
        failed = true;
        return PollStep::kGiveUp;
      }
      return *reply != nullptr ? PollStep::kDone : PollStep::kProgress;
    }
    // End of stream or an error: the blocking read below meets it again and reports it.
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return PollStep::kGiveUp;
    }
    return PollStep::kNothing;
  });
  if (failed) return REDIS_ERR;
  if (got) return REDIS_OK;
  return redisGetReply(ctx_, reply);
}

Result<std::vector<RedisReply>> RedisConn::Run(const std::vector<RedisCmd>& cmds) {
  if (broken_) return Status::IOError(fmt::format("{}: connection lost", display_));
  const bool unwatch = unwatch_pending_;
  unwatch_pending_ = false;
  // The pipeline in RESP, formatted here in one buffer (hiredis's own formatting costs a
  // printf-style call per argument: an eighth of a 1000-entry readdir's client CPU).
  std::string wire;
  if (unwatch) AppendResp(&wire, {"UNWATCH"});
  for (const RedisCmd& cmd : cmds) AppendResp(&wire, cmd);
  if (redisAppendFormattedCommand(ctx_, wire.data(), wire.size()) != REDIS_OK) {
    return Fail("sending");
  }
  for (int done = 0; done == 0;) {
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) return Fail("sending");
  }
  if (round_trips_ != nullptr) round_trips_->fetch_add(1, std::memory_order_relaxed);
  std::vector<RedisReply> out;
  out.reserve(cmds.size());
  for (size_t i = 0; i < cmds.size() + (unwatch ? 1 : 0); ++i) {
    void* reply = nullptr;
    if (NextReply(&reply, poll_ns_ > 0) != REDIS_OK || reply == nullptr) {
      return Fail("reading a reply");
    }
    RedisReply r(static_cast<redisReply*>(reply));
    if (unwatch && i == 0) continue;
    out.push_back(std::move(r));
  }
  for (const RedisReply& r : out) {
    // A restarted server refuses every command while it loads its data: not an answer (nothing
    // ran), so this connection counts as lost and the engine retries on a new one.
    if (IsError(r.get()) && ReplyText(r.get()).starts_with("LOADING")) {
      broken_ = true;
      return Status::IOError(fmt::format("{}: the server is loading its data (restarted): {}",
                                         display_, ReplyText(r.get())));
    }
  }
  return out;
}

Result<RedisReply> RedisConn::Run1(const RedisCmd& cmd) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<RedisReply> r, Run({cmd}));
  return std::move(r[0]);
}

Status ScanKeys(RedisConn& conn, const std::string& pattern,
                const std::function<Result<bool>(const RedisCmd& keys)>& batch) {
  std::string cursor = "0";
  do {
    FOLIO_ASSIGN_OR_RETURN(auto r,
                           conn.Run1({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      return UnexpectedReply(conn.display(), "SCAN", r.get());
    }
    cursor = std::string(ReplyText(r->element[0]));
    RedisCmd keys;
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      keys.emplace_back(ReplyText(r->element[1]->element[i]));
    }
    FOLIO_ASSIGN_OR_RETURN(bool more, batch(keys));
    if (!more) return Status::OK();
  } while (cursor != "0");
  return Status::OK();
}

Status UnlinkKeys(RedisConn& conn, const std::string& pattern) {
  return ScanKeys(conn, pattern, [&](const RedisCmd& keys) -> Result<bool> {
    if (keys.empty()) return true;
    RedisCmd del{"UNLINK"};
    del.insert(del.end(), keys.begin(), keys.end());
    FOLIO_ASSIGN_OR_RETURN(auto r, conn.Run1(del));
    if (IsError(r.get())) return UnexpectedReply(conn.display(), "UNLINK", r.get());
    return true;
  });
}

std::string_view ReplyText(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    return std::string_view(r->str, r->len);
  }
  return {};
}

bool IsError(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_ERROR; }

Status UnexpectedReply(std::string_view url, std::string_view what, const redisReply* r) {
  if (IsError(r)) return Status::IOError(fmt::format("{}: {}: {}", url, what, ReplyText(r)));
  return Status::IOError(
      fmt::format("{}: {}: unexpected reply type {}", url, what, r != nullptr ? r->type : -1));
}

}  // namespace folio::meta
