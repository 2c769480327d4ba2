#include "meta/redis_engine.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "base/check.h"
#include "base/may_block.h"
#include "meta/empty_txn.h"
#include "meta/meta_stats.h"
#include "meta/redis_conn.h"
#include "meta/redis_kv.h"
#include "meta/redis_txn.h"
#include "meta/server_util.h"

namespace folio::meta {
namespace {

constexpr const char* kSchemaVersion = "1";
constexpr int64_t kCommandTimeoutMs = 15000;

class RedisEngine final : public MetaEngine {
 public:
  RedisEngine(RedisUrl url, const MetaOpenOptions& options)
      : url_(std::move(url)), display_(url_.Display()), keys_(url_.prefix), options_(options) {}

  Status Start();
  Status Transact(std::string_view op, TxnMode mode,
                  const std::function<Status(Txn&)>& fn) override;
  Result<uint64_t> AllocateIds(Counter c, uint64_t n) override;
  Status Init(InitMode mode) override;
  // Durability is the server's (appendonly / appendfsync, reported at open): nothing to do.
  Status Sync() override { return Status::OK(); }
  MetaStats Stats() const override {
    MetaStats s;
    s.ops = ops_.Snapshot();
    s.commits = commits_.load(std::memory_order_relaxed);
    s.round_trips = round_trips_.load(std::memory_order_relaxed);
    return s;
  }
  std::string url() const override { return display_; }

 private:
  // A pooled connection, returned on destruction unless broken.
  class Lease {
   public:
    Lease(RedisEngine* e, std::unique_ptr<RedisConn> c) : e_(e), c_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (c_ != nullptr) e_->Release(std::move(c_));
    }
    RedisConn& operator*() const { return *c_; }
    RedisConn* operator->() const { return c_.get(); }

   private:
    RedisEngine* e_;
    std::unique_ptr<RedisConn> c_;
  };

  Result<Lease> Acquire();
  void Release(std::unique_ptr<RedisConn> conn);
  // Acquire, retried with backoff until `deadline` while the server is unreachable.
  Result<Lease> AcquireUntil(SteadyClock::time_point deadline);
  Status CheckServer(RedisConn& conn);
  // Whether the schema marker is there (sets ready_); NotSupported for a newer version.
  Result<bool> ProbeSchema(RedisConn& conn);
  // One run of fn and its commit or validation. early_validation: a read may carry the
  // validation (RedisKv::MGetEach); *read_on is set when one did and fn read on after it (run
  // again without).
  AttemptOutcome Attempt(RedisConn& conn, TxnMode mode, const std::function<Status(Txn&)>& fn,
                         bool early_validation, Status* result, uint64_t* commit_seq,
                         bool* read_on);
  AttemptOutcome Commit(RedisConn& conn, RedisKv& kv, Status* result, uint64_t* commit_seq);
  // After a connection failed with EXEC sent: did the server apply commit `seq` of `conn_id`?
  Result<bool> CommittedInDoubt(uint64_t conn_id, uint64_t seq, SteadyClock::time_point deadline);
  Status InitLocked(RedisConn& conn, InitMode mode);
  Result<bool> PrefixHasKeys(RedisConn& conn);

  Status NoSchema() const {
    return Status::InvalidArgument(fmt::format(
        "{}: no Folio volume under prefix '{}' yet (Init creates the schema)", display_,
        url_.prefix));
  }

  const RedisUrl url_;
  const std::string display_;
  const RedisKeys keys_;
  const MetaOpenOptions options_;
  std::atomic<bool> ready_{false};

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<RedisConn>> idle_;  // GUARDED_BY(pool_mu_)

  OpStatsTable ops_;
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<uint64_t> commit_attempts_{0};
  std::atomic<uint64_t> commit_seq_{0};
  std::mutex init_mu_;
};

// ---- connections ----------------------------------------------------------------------------

Result<RedisEngine::Lease> RedisEngine::Acquire() {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(c));
    }
  }
  FOLIO_ASSIGN_OR_RETURN(auto c, RedisConn::Open(url_, kCommandTimeoutMs));
  c->set_round_trip_counter(&round_trips_);
  return Lease(this, std::move(c));
}

void RedisEngine::Release(std::unique_ptr<RedisConn> conn) {
  if (conn->broken()) return;
  std::lock_guard lock(pool_mu_);
  if (idle_.size() < kIdleConnectionsMax) idle_.push_back(std::move(conn));
}

Result<RedisEngine::Lease> RedisEngine::AcquireUntil(SteadyClock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    auto lease = Acquire();
    if (lease.ok() || SteadyClock::now() >= deadline) return lease;
    JitterBackoff(attempt, 10'000, 500'000);
  }
}

Status RedisEngine::Start() {
  FOLIO_ASSIGN_OR_RETURN(Lease conn, Acquire());
  FOLIO_RETURN_IF_ERROR(CheckServer(*conn));
  return ProbeSchema(*conn).status();
}

Status RedisEngine::CheckServer(RedisConn& conn) {
  FOLIO_ASSIGN_OR_RETURN(auto r, conn.Run({{"CONFIG", "GET", "maxmemory-policy"},
                                           {"CONFIG", "GET", "appendonly"},
                                           {"CONFIG", "GET", "appendfsync"},
                                           {"CONFIG", "GET", "save"}}));
  auto value = [&](size_t i) -> std::optional<std::string> {
    const redisReply* x = r[i].get();
    if (x->type != REDIS_REPLY_ARRAY || x->elements != 2) return std::nullopt;
    return std::string(ReplyText(x->element[1]));
  };
  // Once per process and server (not per volume prefix).
  const std::string once = fmt::format("{}:{}", url_.host, url_.port);
  if (!value(0) || !value(1) || !value(2)) {
    if (options_.log || FirstTimeInProcess(once + "/config")) {
      MetaLog(options_, fmt::format("warning: {}: the server refuses CONFIG GET, so Folio cannot "
                                    "check it; make sure maxmemory-policy is noeviction and "
                                    "appendonly yes with appendfsync always",
                                    display_));
    }
    return Status::OK();
  }
  if (value(0)->starts_with("allkeys-")) {
    return Status::InvalidArgument(fmt::format(
        "{}: maxmemory-policy is {}: the server may evict Folio's keys and lose metadata; set "
        "maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction)",
        display_, *value(0)));
  }
  std::string warning;
  if (*value(1) != "yes") {
    warning = value(3)->empty()
                  ? fmt::format("{}: persistence is off (appendonly no, save \"\"): a restart of "
                                "the server loses all metadata; set appendonly yes and "
                                "appendfsync always",
                                display_)
                  : fmt::format("{}: appendonly is no: a crash of the server loses the metadata "
                                "changed since its last snapshot (save {}); set appendonly yes "
                                "and appendfsync always",
                                display_, *value(3));
  } else if (*value(2) != "always") {
    warning = fmt::format("{}: appendfsync is {}: a crash of the server may lose the last "
                          "second of committed metadata; set appendfsync always",
                          display_, *value(2));
  }
  if (!warning.empty() && (options_.log || FirstTimeInProcess(once + "/durability"))) {
    MetaLog(options_, "warning: " + warning);
  }
  return Status::OK();
}

Result<bool> RedisEngine::ProbeSchema(RedisConn& conn) {
  FOLIO_ASSIGN_OR_RETURN(auto r, conn.Run1({"HGET", keys_.Meta(), "schema_version"}));
  if (r->type == REDIS_REPLY_NIL) return false;
  if (r->type != REDIS_REPLY_STRING) return UnexpectedReply(display_, "HGET meta", r.get());
  if (ReplyText(r.get()) != kSchemaVersion) {
    return Status::NotSupported(fmt::format(
        "{}: Redis schema version {} is newer than this build of Folio reads ({}); use a newer "
        "folio",
        display_, ReplyText(r.get()), kSchemaVersion));
  }
  ready_.store(true);
  return true;
}

// ---- transactions ---------------------------------------------------------------------------

Status RedisEngine::Transact(std::string_view op, TxnMode mode,
                             const std::function<Status(Txn&)>& fn) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::Transact called from inside fn");
  MayBlock();  // round trips to the server
  OpTimer timer(ops_.Get(op));
  if (mode == TxnMode::kWrite && options_.read_only) {
    return timer.Finish(Status::InvalidArgument(
        fmt::format("{}: a write transaction on an engine opened read-only", display_)));
  }
  const auto reconnect_deadline = DeadlineAfterMs(options_.reconnect_timeout_ms);
  int conflicts = 0;
  // A read carrying the validation (RedisKv::MGetEach) until an attempt read on after it.
  bool early_validation = mode == TxnMode::kRead;
  for (int attempt = 0;; ++attempt) {
    auto conn = AcquireUntil(reconnect_deadline);
    if (!conn.ok()) return timer.Finish(conn.status());
    if (!ready_.load()) {
      auto ready = ProbeSchema(**conn);
      if (!ready.ok() && !(*conn)->broken()) return timer.Finish(ready.status());
      if (ready.ok() && !*ready) {
        if (mode == TxnMode::kWrite) return timer.Finish(NoSchema());
        EmptyTxn txn(NoSchema());
        InFnGuard in_fn(this);
        return timer.Finish(fn(txn));
      }
    }
    Status result;
    uint64_t seq = 0;
    bool read_on = false;
    AttemptOutcome o =
        (*conn)->broken()
            ? AttemptOutcome::kLostConnection
            : Attempt(**conn, mode, fn, early_validation, &result, &seq, &read_on);
    if (o == AttemptOutcome::kDone) return timer.Finish(std::move(result));
    if (read_on) {  // not one snapshot: again at once, validated at the end
      early_validation = false;
      timer.Retry();
      continue;
    }
    if (o == AttemptOutcome::kLostConnection) {
      const uint64_t conn_id = (*conn)->id();
      if (seq != 0) {  // EXEC went out: learn whether it was applied
        auto applied = CommittedInDoubt(conn_id, seq, reconnect_deadline);
        if (!applied.ok()) return timer.Finish(applied.status());
        if (*applied) {
          commits_.fetch_add(1, std::memory_order_relaxed);
          return timer.Finish(Status::OK());
        }
      }
      if (SteadyClock::now() >= reconnect_deadline) {
        return timer.Finish(result.ok() ? Status::IOError(display_ + ": connection lost")
                                        : result.WithContext("nothing was applied"));
      }
      timer.Retry();
      JitterBackoff(attempt, 10'000, 500'000);
      continue;
    }
    if (++conflicts > options_.max_retries) {
      return timer.Finish(Status::Busy(fmt::format(
          "{}: gave up after {} conflict retries; nothing was applied", display_, conflicts - 1)));
    }
    timer.Retry();
    JitterBackoff(conflicts);
  }
}

AttemptOutcome RedisEngine::Attempt(RedisConn& conn, TxnMode mode,
                                    const std::function<Status(Txn&)>& fn,
                                    bool early_validation, Status* result, uint64_t* commit_seq,
                                    bool* read_on) {
  RedisKv kv(conn, display_, early_validation && mode == TxnMode::kRead);
  RedisTxn txn(kv, keys_, mode, display_, conn);
  {
    InFnGuard in_fn(this);
    *result = fn(txn);
  }
  if (conn.broken()) return AttemptOutcome::kLostConnection;  // fn saw an IOError: nothing was sent
  if (kv.validated_early()) {
    // A read carried the validation (kRead only, so there are no writes): what fn returns
    // stands if that EXEC went through and nothing was read after it.
    if (kv.watched_any()) conn.set_unwatch_pending();
    if (kv.read_after_validation()) {
      *read_on = true;
      return AttemptOutcome::kConflict;
    }
    return kv.early_conflict() ? AttemptOutcome::kConflict : AttemptOutcome::kDone;
  }
  std::vector<RedisCmd> writes = kv.WriteCommands();
  if ((!result->ok() || writes.empty()) && kv.server_reads() <= 1) {
    if (kv.watched_any()) conn.set_unwatch_pending();
    return AttemptOutcome::kDone;  // one read is atomic by itself
  }
  if (!result->ok() || mode == TxnMode::kRead || writes.empty()) {
    // fn's reads may come from different moments; what it returns (an error included) stands
    // only if none of them changed meanwhile.
    // Validate the reads: EXEC of an empty MULTI fails when a watched key changed.
    auto r = conn.Run({{"MULTI"}, {"EXEC"}});
    if (!r.ok()) return AttemptOutcome::kLostConnection;
    if ((*r)[1]->type == REDIS_REPLY_NIL) return AttemptOutcome::kConflict;
    return AttemptOutcome::kDone;
  }
  return Commit(conn, kv, result, commit_seq);
}

AttemptOutcome RedisEngine::Commit(RedisConn& conn, RedisKv& kv, Status* result,
                                   uint64_t* commit_seq) {
  std::vector<RedisCmd> cmds = kv.WriteCommands();
  const uint64_t attempt = commit_attempts_.fetch_add(1) + 1;
  if (options_.inject_conflict_every > 0 &&
      attempt % static_cast<uint64_t>(options_.inject_conflict_every) == 0) {
    conn.set_unwatch_pending();
    return AttemptOutcome::kConflict;
  }
  const uint64_t seq = commit_seq_.fetch_add(1) + 1;
  cmds.insert(cmds.begin(), RedisCmd{"MULTI"});
  cmds.push_back({"SET", keys_.CommitMarker(conn.id()), std::to_string(seq), "EX", "3600"});
  cmds.push_back({"EXEC"});
  *commit_seq = seq;
  auto r = conn.Run(cmds);
  if (!r.ok()) {
    *result = r.status();
    return AttemptOutcome::kLostConnection;
  }
  const redisReply* exec = r->back().get();
  if (exec->type == REDIS_REPLY_NIL) return AttemptOutcome::kConflict;
  if (exec->type != REDIS_REPLY_ARRAY) {
    *result = UnexpectedReply(display_, "EXEC (nothing was applied)", exec);
    return AttemptOutcome::kDone;
  }
  for (size_t i = 0; i < exec->elements; ++i) {
    if (IsError(exec->element[i])) {
      // Only a key of the wrong type (not written by Folio) gets here: Redis applied the
      // transaction's other commands.
      *result = Status::Corruption(fmt::format(
          "{}: command {} of a commit failed ({}): a key under prefix '{}' was not written by "
          "Folio; the other writes of this transaction were applied",
          display_, cmds[i + 1][0], ReplyText(exec->element[i]), url_.prefix));
      return AttemptOutcome::kDone;
    }
  }
  commits_.fetch_add(1, std::memory_order_relaxed);
  *result = Status::OK();
  return AttemptOutcome::kDone;
}

Result<bool> RedisEngine::CommittedInDoubt(uint64_t conn_id, uint64_t seq,
                                           SteadyClock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    auto conn = Acquire();
    if (conn.ok()) {
      auto r = (*conn)->Run1({"GET", keys_.CommitMarker(conn_id)});
      // Only the marker's value or its absence answers; an error reply is asked again.
      if (r.ok() && (*r)->type == REDIS_REPLY_NIL) return false;
      if (r.ok() && (*r)->type == REDIS_REPLY_STRING) return ReplyText(r->get()) == std::to_string(seq);
    }
    if (SteadyClock::now() >= deadline) {
      return Status::IOError(fmt::format(
          "{}: the connection was lost while committing and the server stayed unreachable for "
          "{} ms: the transaction may or may not have been applied",
          display_, options_.reconnect_timeout_ms));
    }
    JitterBackoff(attempt, 10'000, 500'000);
  }
}

// ---- ids, init ------------------------------------------------------------------------------

Result<uint64_t> RedisEngine::AllocateIds(Counter c, uint64_t n) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::AllocateIds called from inside fn");
  if ((c != Counter::kNextInode && c != Counter::kNextSlice && c != Counter::kNextSession) ||
      n == 0 || n > (uint64_t{1} << 32)) {
    return Status::InvalidArgument(fmt::format(
        "{}: AllocateIds({}, {}): needs an id counter and 1..2^32 ids", display_, CounterName(c), n));
  }
  if (!ready_.load()) {
    FOLIO_ASSIGN_OR_RETURN(Lease conn, Acquire());
    FOLIO_ASSIGN_OR_RETURN(bool ready, ProbeSchema(*conn));
    if (!ready) return NoSchema();
  }
  const auto deadline = DeadlineAfterMs(options_.reconnect_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    FOLIO_ASSIGN_OR_RETURN(Lease conn, AcquireUntil(deadline));
    // One INCRBY is atomic. A reply lost with the connection is retried: the ids it may have
    // taken are a gap, never handed out twice.
    auto r = conn->Run1({"INCRBY", keys_.Counter(c), std::to_string(n)});
    if (r.ok()) {
      if ((*r)->type != REDIS_REPLY_INTEGER) return UnexpectedReply(display_, "INCRBY", r->get());
      return static_cast<uint64_t>((*r)->integer) - n + 1;
    }
    if (SteadyClock::now() >= deadline) return r.status();
    JitterBackoff(attempt, 10'000, 500'000);
  }
}

Result<bool> RedisEngine::PrefixHasKeys(RedisConn& conn) {
  bool any = false;
  FOLIO_RETURN_IF_ERROR(ScanKeys(conn, keys_.prefix() + "*", [&](const RedisCmd& keys) {
    any = !keys.empty();
    return Result<bool>(!any);
  }));
  return any;
}

Status RedisEngine::Init(InitMode mode) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::Init called from inside fn");
  if (options_.read_only) {
    return Status::InvalidArgument(fmt::format("{}: Init on an engine opened read-only", display_));
  }
  std::lock_guard lock(init_mu_);
  FOLIO_ASSIGN_OR_RETURN(Lease conn, Acquire());
  Status s = InitLocked(*conn, mode);
  if (!s.ok()) conn->set_unwatch_pending();
  return s;
}

Status RedisEngine::InitLocked(RedisConn& conn, InitMode mode) {
  FOLIO_RETURN_IF_ERROR(conn.Run1({"WATCH", keys_.Meta()}).status());
  FOLIO_ASSIGN_OR_RETURN(bool ready, ProbeSchema(conn));
  if (ready && mode == InitMode::kCreate) {
    FOLIO_ASSIGN_OR_RETURN(auto f, conn.Run1({"HEXISTS", keys_.Meta(), "format"}));
    if (f->type == REDIS_REPLY_INTEGER && f->integer == 1) {
      return Status::Exists(fmt::format(
          "{}: already holds a Folio volume (wipe it to format it again)", display_));
    }
    conn.set_unwatch_pending();
    return Status::OK();  // a schema without a volume (Init ran, format did not): reuse it
  }
  if (!ready) {
    FOLIO_ASSIGN_OR_RETURN(bool foreign, PrefixHasKeys(conn));
    if (foreign) {
      return Status::InvalidArgument(fmt::format(
          "{}: not a Folio volume: keys under prefix '{}' exist without a Folio schema; use "
          "another prefix (?prefix=NAME) or database",
          display_, keys_.prefix()));
    }
  } else {
    ready_.store(false);
    FOLIO_RETURN_IF_ERROR(UnlinkKeys(conn, keys_.prefix() + "*"));  // wipe: not atomic; Init runs alone (format)
    // Our own deletes touched the watched key: watch it afresh for the create below.
    FOLIO_RETURN_IF_ERROR(conn.Run({{"UNWATCH"}, {"WATCH", keys_.Meta()}}).status());
  }
  std::vector<RedisCmd> cmds = {{"MULTI"}, {"HSET", keys_.Meta(), "schema_version", kSchemaVersion}};
  for (Counter c : kAllCounters) {
    cmds.push_back({"SET", keys_.Counter(c), c == Counter::kNextInode ? "1" : "0"});
  }
  cmds.push_back({"EXEC"});
  FOLIO_ASSIGN_OR_RETURN(auto r, conn.Run(cmds));
  if (r.back()->type == REDIS_REPLY_NIL) {
    return Status::Busy(fmt::format("{}: another client initialized the volume meanwhile", display_));
  }
  if (r.back()->type != REDIS_REPLY_ARRAY) return UnexpectedReply(display_, "Init", r.back().get());
  commits_.fetch_add(1, std::memory_order_relaxed);
  ready_.store(true);
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<MetaEngine>> OpenRedisEngine(std::string_view url,
                                                    const MetaOpenOptions& options) {
  FOLIO_ASSIGN_OR_RETURN(RedisUrl parsed, ParseRedisUrl(url));
  auto engine = std::make_unique<RedisEngine>(std::move(parsed), options);
  FOLIO_RETURN_IF_ERROR(engine->Start());
  return std::unique_ptr<MetaEngine>(std::move(engine));
}

}  // namespace folio::meta
