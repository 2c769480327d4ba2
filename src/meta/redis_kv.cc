#include "meta/redis_kv.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace folio::meta {

namespace {

// Server pages: at least this many members per round trip, at most kMaxPage (a listing of up
// to 4000 entries is one ZRANGEBYLEX, and its values one HMGET).
constexpr size_t kMinPage = 64;
constexpr size_t kMaxPage = 4000;

std::string LexMin(std::string_view after) {
  return after.empty() ? std::string("-") : "(" + std::string(after);
}

// The smallest string greater than every string starting with p ("" when there is none).
std::string PrefixEnd(std::string p) {
  while (!p.empty() && static_cast<unsigned char>(p.back()) == 0xff) p.pop_back();
  if (p.empty()) return p;
  p.back() = static_cast<char>(static_cast<unsigned char>(p.back()) + 1);
  return p;
}

bool ParseI64(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<std::string> BulkOrNil(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING) return std::string(r->str, r->len);
  return std::nullopt;
}

}  // namespace

Result<RedisReply> RedisKv::WatchedRead(const std::vector<std::string>& keys, RedisCmd read,
                                         bool validate) {
  return RunReads(keys, &read, validate);
}

Status RedisKv::FlushPending() { return RunReads({}, nullptr, false).status(); }

Result<RedisReply> RedisKv::RunReads(const std::vector<std::string>& keys, RedisCmd* read,
                                      bool validate) {
  if (validated_early_ && (!keys.empty() || !pending_.empty())) read_after_validation_ = true;
  // The reads so far are validated with this one only when it watches nothing and something
  // was watched (else there is nothing to validate, or this read would need it too).
  validate = validate && early_validation_ && keys.empty() && read != nullptr &&
             (!watched_.empty() || !pending_.empty());
  std::vector<RedisCmd> cmds;
  RedisCmd watch{"WATCH"};
  for (const std::string& k : keys) {
    if (watched_.insert(k).second) watch.push_back(k);
  }
  for (const Read& p : pending_) {
    if (watched_.insert(p.key).second) watch.push_back(p.key);
  }
  const size_t first = watch.size() > 1 ? 1 : 0;
  if (first == 1) cmds.push_back(std::move(watch));
  for (const Read& p : pending_) {
    cmds.push_back(p.field ? RedisCmd{"HGET", p.key, *p.field} : RedisCmd{"GET", p.key});
  }
  if (validate) {
    cmds.push_back({"MULTI"});
    cmds.push_back({"EXEC"});
  }
  if (read != nullptr) cmds.push_back(std::move(*read));
  std::vector<Read> asked = std::move(pending_);
  pending_.clear();
  pending_ids_.clear();
  if (cmds.empty()) return RedisReply();
  FOLIO_ASSIGN_OR_RETURN(std::vector<RedisReply> replies, conn_.Run(cmds));
  server_reads_ += static_cast<int>(asked.size()) + (read != nullptr ? 1 : 0);
  if (first == 1 && IsError(replies[0].get())) return BadReply("WATCH", replies[0].get());
  if (validate) {
    // EXEC of the empty MULTI: nil when a watched key changed. Either way nothing is watched
    // any more.
    const redisReply* exec = replies[first + asked.size() + 1].get();
    if (exec->type != REDIS_REPLY_NIL && exec->type != REDIS_REPLY_ARRAY) {
      return BadReply("EXEC", exec);
    }
    watched_.clear();
    validated_early_ = true;
    if (exec->type == REDIS_REPLY_NIL) early_conflict_ = true;
  }
  for (size_t i = 0; i < asked.size(); ++i) {
    const redisReply* r = replies[first + i].get();
    const Read& q = asked[i];
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
      return BadReply(std::string(q.field ? "HGET " : "GET ") + q.key, r);
    }
    if (q.field) {
      fetched_fields_[{q.key, *q.field}] = BulkOrNil(r);
    } else {
      fetched_[q.key] = BulkOrNil(r);
    }
  }
  if (read == nullptr) return RedisReply();
  return std::move(replies.back());
}

bool RedisKv::Replaced(const std::string& key) const {
  auto it = strings_.find(key);
  return it != strings_.end() && (it->second.kind == StrOp::kSet || it->second.kind == StrOp::kDel);
}

std::string RedisKv::ReadId(const std::string& key, const std::optional<std::string>& field) {
  return field ? key + '\0' + *field : key;  // no key holds a NUL (prefixes are [A-Za-z0-9._-])
}

Status RedisKv::Prefetch(const std::vector<Read>& reads) {
  for (const Read& r : reads) {
    if (r.field) {
      if (fetched_fields_.count({r.key, *r.field}) != 0) continue;
      if (auto h = hashes_.find(r.key); h != hashes_.end() && h->second.count(*r.field) != 0) {
        continue;  // written by this transaction: HGet answers from the write
      }
    } else {
      if (fetched_.count(r.key) != 0) continue;
      if (Replaced(r.key)) continue;  // written by this transaction: Get answers from the write
    }
    if (pending_ids_.insert(ReadId(r.key, r.field)).second) pending_.push_back(r);
  }
  return Status::OK();
}

// ---- strings --------------------------------------------------------------------------------

Result<std::optional<std::string>> RedisKv::Overlay(const std::string& key,
                                                    std::optional<std::string> server) const {
  auto it = strings_.find(key);
  if (it == strings_.end()) return server;
  const StrOp& op = it->second;
  switch (op.kind) {
    case StrOp::kSet: return std::optional<std::string>(op.value);
    case StrOp::kDel: return std::optional<std::string>();
    case StrOp::kAppend: return std::optional<std::string>(server.value_or("") + op.value);
    case StrOp::kIncr: {
      int64_t v = 0;
      if (server && !ParseI64(*server, &v)) {
        return Status::Corruption(fmt::format("{}: key {} holds '{}', not an integer", url_, key,
                                              *server));
      }
      return std::optional<std::string>(std::to_string(v + op.delta));
    }
  }
  return server;
}

Result<std::optional<std::string>> RedisKv::Get(const std::string& key) {
  if (Replaced(key)) return Overlay(key, std::nullopt);
  if (!pending_.empty() && pending_ids_.count(key) != 0) FOLIO_RETURN_IF_ERROR(FlushPending());
  if (auto f = fetched_.find(key); f != fetched_.end()) return Overlay(key, f->second);
  FOLIO_ASSIGN_OR_RETURN(RedisReply r, WatchedRead({key}, {"GET", key}));
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) return BadReply("GET " + key, r.get());
  return Overlay(key, BulkOrNil(r.get()));
}

Result<std::vector<std::optional<std::string>>> RedisKv::MGet(
    const std::vector<std::string>& keys, bool watch) {
  std::vector<std::optional<std::string>> out(keys.size());
  FOLIO_RETURN_IF_ERROR(MGetEach(keys, watch, [&](size_t i, std::optional<std::string_view> v) {
    if (v) out[i].emplace(*v);
    return Status::OK();
  }));
  return out;
}

Status RedisKv::MGetEach(std::vector<std::string> keys, bool watch,
                         const std::function<Status(size_t, std::optional<std::string_view>)>& fn,
                         bool validate) {
  RedisCmd mget;
  mget.reserve(keys.size() + 1);
  mget.emplace_back("MGET");
  std::vector<size_t> asked;
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool written = Replaced(keys[i]);
    auto f = written ? fetched_.end() : fetched_.find(keys[i]);
    if (written || f != fetched_.end()) {
      FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> v,
                             Overlay(keys[i], written ? std::nullopt : f->second));
      FOLIO_RETURN_IF_ERROR(v ? fn(i, std::string_view(*v)) : fn(i, std::nullopt));
      continue;
    }
    mget.push_back(std::move(keys[i]));  // the keys go out as they are (a listing's thousand)
    asked.push_back(i);
  }
  if (asked.empty()) return Status::OK();
  // The keys asked, kept past the command when they are watched, or when an append or
  // increment of this transaction may apply on top of what the server holds.
  const bool overlaid = !strings_.empty();
  std::vector<std::string> sent;
  if (watch || overlaid) sent.assign(mget.begin() + 1, mget.end());
  FOLIO_ASSIGN_OR_RETURN(RedisReply r,
                         WatchedRead(watch ? sent : std::vector<std::string>(), std::move(mget),
                                     validate));
  if (r->type != REDIS_REPLY_ARRAY || r->elements != asked.size()) return BadReply("MGET", r.get());
  for (size_t j = 0; j < asked.size(); ++j) {
    const size_t i = asked[j];
    const redisReply* e = r->element[j];
    if (overlaid && strings_.count(sent[j]) != 0) {
      FOLIO_ASSIGN_OR_RETURN(std::optional<std::string> v, Overlay(sent[j], BulkOrNil(e)));
      FOLIO_RETURN_IF_ERROR(v ? fn(i, std::string_view(*v)) : fn(i, std::nullopt));
      continue;
    }
    FOLIO_RETURN_IF_ERROR(e->type == REDIS_REPLY_STRING ? fn(i, std::string_view(e->str, e->len))
                                                        : fn(i, std::nullopt));
  }
  return Status::OK();
}

void RedisKv::Set(const std::string& key, std::string value) {
  strings_[key] = StrOp{StrOp::kSet, std::move(value), 0};
}

void RedisKv::Del(const std::string& key) { strings_[key] = StrOp{StrOp::kDel, {}, 0}; }

void RedisKv::Append(const std::string& key, std::string_view suffix) {
  auto [it, fresh] = strings_.try_emplace(key, StrOp{StrOp::kAppend, {}, 0});
  StrOp& op = it->second;
  if (op.kind == StrOp::kDel) op = StrOp{StrOp::kSet, {}, 0};
  op.value.append(suffix);  // kSet and kAppend both extend their bytes
  (void)fresh;
}

void RedisKv::IncrBy(const std::string& key, int64_t delta) {
  auto [it, fresh] = strings_.try_emplace(key, StrOp{StrOp::kIncr, {}, 0});
  StrOp& op = it->second;
  if (op.kind == StrOp::kIncr) {
    op.delta += delta;
  } else if (op.kind == StrOp::kDel) {
    op = StrOp{StrOp::kSet, std::to_string(delta), 0};
  } else if (op.kind == StrOp::kSet) {
    int64_t v = 0;
    (void)ParseI64(op.value, &v);  // the engine only IncrBy's counter keys it Set as integers
    op.value = std::to_string(v + delta);
  }
  (void)fresh;
}

// ---- hashes ---------------------------------------------------------------------------------

Result<std::optional<std::string>> RedisKv::HGet(const std::string& key,
                                                 const std::string& field) {
  if (auto h = hashes_.find(key); h != hashes_.end()) {
    if (auto f = h->second.find(field); f != h->second.end()) return f->second;
  }
  // (A read id is a string built for the lookup: only when something is pending.)
  if (!pending_.empty() && pending_ids_.count(ReadId(key, field)) != 0) {
    FOLIO_RETURN_IF_ERROR(FlushPending());
  }
  if (auto f = fetched_fields_.find({key, field}); f != fetched_fields_.end()) return f->second;
  FOLIO_ASSIGN_OR_RETURN(RedisReply r, WatchedRead({key}, {"HGET", key, field}));
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) return BadReply("HGET " + key, r.get());
  return BulkOrNil(r.get());
}

Result<std::map<std::string, std::string>> RedisKv::HGetAll(const std::string& key) {
  FOLIO_ASSIGN_OR_RETURN(RedisReply r, WatchedRead({key}, {"HGETALL", key}));
  if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) return BadReply("HGETALL " + key, r.get());
  std::map<std::string, std::string> out;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    out.emplace(std::string(r->element[i]->str, r->element[i]->len),
                std::string(r->element[i + 1]->str, r->element[i + 1]->len));
  }
  if (auto h = hashes_.find(key); h != hashes_.end()) {
    for (const auto& [field, value] : h->second) {
      if (value) {
        out[field] = *value;
      } else {
        out.erase(field);
      }
    }
  }
  return out;
}

void RedisKv::HSet(const std::string& key, const std::string& field, std::string value) {
  hashes_[key][field] = std::move(value);
}

void RedisKv::HDel(const std::string& key, const std::string& field) {
  hashes_[key][field] = std::nullopt;
}

// ---- ordered indexes ------------------------------------------------------------------------

bool RedisKv::Hidden(const ZOverlay* z, const std::string& member) const {
  if (z == nullptr) return false;
  if (auto it = z->members.find(member); it != z->members.end()) return !it->second;
  for (const std::string& p : z->removed_prefixes) {
    if (member.starts_with(p)) return true;
  }
  return false;
}

std::vector<std::string> RedisKv::MergeMembers(const ZOverlay* z, std::string_view after,
                                               std::vector<std::string> server,
                                               const std::optional<std::string>& bound,
                                               size_t limit) const {
  std::vector<std::string> out = std::move(server);  // visible server members, sorted
  if (z != nullptr) {
    for (const auto& [m, present] : z->members) {
      if (!present || m <= after) continue;
      if (bound && m > *bound) continue;
      out.push_back(m);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

Result<std::vector<std::string>> RedisKv::ZRange(const std::string& key, std::string_view after,
                                                 size_t limit) {
  return ZRangeWatching(key, {key}, after, limit);
}

Result<std::vector<std::string>> RedisKv::ZRangeWatching(const std::string& key,
                                                         const std::vector<std::string>& watch,
                                                         std::string_view after, size_t limit) {
  const ZOverlay* z = zsets_.count(key) ? &zsets_.at(key) : nullptr;
  const size_t page = std::clamp(limit + 1, kMinPage, kMaxPage);
  std::vector<std::string> visible;
  std::string cursor(after);
  bool done = false;
  while (!done && visible.size() < limit) {
    FOLIO_ASSIGN_OR_RETURN(RedisReply r,
                           WatchedRead(watch, {"ZRANGEBYLEX", key, LexMin(cursor), "+", "LIMIT",
                                               "0", std::to_string(page)}));
    if (r->type != REDIS_REPLY_ARRAY) return BadReply("ZRANGEBYLEX " + key, r.get());
    done = r->elements < page;
    for (size_t i = 0; i < r->elements; ++i) {
      std::string m(r->element[i]->str, r->element[i]->len);
      if (!Hidden(z, m)) visible.push_back(std::move(m));
    }
    if (r->elements > 0) {
      const redisReply* last = r->element[r->elements - 1];
      cursor.assign(last->str, last->len);
    }
  }
  // The last member the server listed bounds the overlay's additions when it has more.
  return MergeMembers(z, after, std::move(visible),
                      done ? std::nullopt : std::optional(cursor), limit);
}

Result<std::vector<std::pair<std::string, std::string>>> RedisKv::ZRangeWithHash(
    const std::string& key, const std::string& hkey, std::string_view after, size_t limit) {
  // Both keys are WATCHed with the first page, so a change to either between the listing and
  // the values (or later) fails the transaction's validation, which re-runs it: a member the
  // hash lacks is Corruption only when nothing changed.
  FOLIO_ASSIGN_OR_RETURN(std::vector<std::string> members,
                         ZRangeWatching(key, {key, hkey}, after, limit));
  const auto* hover = hashes_.count(hkey) ? &hashes_.at(hkey) : nullptr;
  std::vector<std::optional<std::string>> values(members.size());
  std::vector<size_t> asked;  // members whose value the transaction has not written
  for (size_t i = 0; i < members.size(); ++i) {
    if (hover != nullptr) {
      if (auto f = hover->find(members[i]); f != hover->end() && f->second) {
        values[i] = f->second;
        continue;
      }
    }
    asked.push_back(i);
  }
  for (size_t from = 0; from < asked.size(); from += kMaxPage) {
    const size_t n = std::min(kMaxPage, asked.size() - from);
    RedisCmd cmd{"HMGET", hkey};
    for (size_t j = from; j < from + n; ++j) cmd.push_back(members[asked[j]]);
    FOLIO_ASSIGN_OR_RETURN(RedisReply r, WatchedRead({hkey}, std::move(cmd)));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) return BadReply("HMGET " + hkey, r.get());
    for (size_t j = 0; j < n; ++j) values[asked[from + j]] = BulkOrNil(r->element[j]);
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (!values[i]) {
      return Status::Corruption(fmt::format("{}: {} lists '{}' but {} has no value for it", url_,
                                            key, members[i], hkey));
    }
    out.emplace_back(std::move(members[i]), std::move(*values[i]));
  }
  return out;
}

void RedisKv::ZAdd(const std::string& key, const std::string& member) {
  zsets_[key].members[member] = true;
}

void RedisKv::ZRem(const std::string& key, const std::string& member) {
  zsets_[key].members[member] = false;
}

void RedisKv::ZRemPrefix(const std::string& key, const std::string& prefix) {
  ZOverlay& z = zsets_[key];
  for (auto it = z.members.lower_bound(prefix); it != z.members.end() &&
                                                it->first.starts_with(prefix);) {
    it = z.members.erase(it);
  }
  z.removed_prefixes.push_back(prefix);
}

// ---- commit ---------------------------------------------------------------------------------

std::vector<RedisCmd> RedisKv::WriteCommands() const {
  std::vector<RedisCmd> cmds;
  for (const auto& [key, op] : strings_) {
    switch (op.kind) {
      case StrOp::kSet: cmds.push_back({"SET", key, op.value}); break;
      case StrOp::kDel: cmds.push_back({"DEL", key}); break;
      case StrOp::kAppend: cmds.push_back({"APPEND", key, op.value}); break;
      case StrOp::kIncr: cmds.push_back({"INCRBY", key, std::to_string(op.delta)}); break;
    }
  }
  for (const auto& [key, fields] : hashes_) {
    RedisCmd hset{"HSET", key};
    RedisCmd hdel{"HDEL", key};
    for (const auto& [field, value] : fields) {
      if (value) {
        hset.push_back(field);
        hset.push_back(*value);
      } else {
        hdel.push_back(field);
      }
    }
    if (hdel.size() > 2) cmds.push_back(std::move(hdel));
    if (hset.size() > 2) cmds.push_back(std::move(hset));
  }
  for (const auto& [key, z] : zsets_) {
    for (const std::string& p : z.removed_prefixes) {
      const std::string end = PrefixEnd(p);
      cmds.push_back({"ZREMRANGEBYLEX", key, "[" + p, end.empty() ? "+" : "(" + end});
    }
    RedisCmd zadd{"ZADD", key};
    RedisCmd zrem{"ZREM", key};
    for (const auto& [m, present] : z.members) {
      if (present) {
        zadd.push_back("0");
        zadd.push_back(m);
      } else {
        zrem.push_back(m);
      }
    }
    if (zrem.size() > 2) cmds.push_back(std::move(zrem));
    if (zadd.size() > 2) cmds.push_back(std::move(zadd));
  }
  return cmds;
}

}  // namespace folio::meta
