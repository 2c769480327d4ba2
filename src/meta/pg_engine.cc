#include "meta/pg_engine.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include "base/check.h"
#include "base/may_block.h"
#include "meta/empty_txn.h"
#include "meta/meta_stats.h"
#include "meta/pg_conn.h"
#include "meta/pg_schema.h"
#include "meta/pg_txn.h"
#include "meta/scratch.h"
#include "meta/server_util.h"

namespace folio::meta {
namespace {

// A write transaction whose COMMIT went out on a connection that was then lost: the
// connection's marker row holds `seq` if and only if the transaction committed.
struct InDoubt {
  PgConn::Identity who;
  uint64_t seq = 0;
};

// Rows of txn_markers not written for this long are removed when an engine opens: a closed
// connection leaves its row behind, and no commit is in doubt for a day (a live connection's
// row is rewritten at each of its commits, and one that is gone is not asked about).
constexpr const char* kStaleMarkers = "1 day";

class PgEngine final : public MetaEngine {
 public:
  PgEngine(std::string conninfo, std::string display, int poll_us,
           const MetaOpenOptions& options)
      : conninfo_(std::move(conninfo)),
        display_(std::move(display)),
        poll_us_(poll_us),
        options_(options) {}

  Status Start();
  Status Transact(std::string_view op, TxnMode mode,
                  const std::function<Status(Txn&)>& fn) override;
  Result<uint64_t> AllocateIds(Counter c, uint64_t n) override;
  Status Init(InitMode mode) override;
  // Every commit is durable to the server's policy (synchronous_commit, fsync).
  Status Sync() override { return Status::OK(); }
  MetaStats Stats() const override {
    MetaStats s;
    s.ops = ops_.Snapshot();
    s.commits = commits_.load(std::memory_order_relaxed);
    return s;
  }
  std::string url() const override { return display_; }

 private:
  class Lease {
   public:
    Lease(PgEngine* e, std::unique_ptr<PgConn> c) : e_(e), c_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (c_ != nullptr) e_->Release(std::move(c_));
    }
    PgConn& operator*() const { return *c_; }
    PgConn* operator->() const { return c_.get(); }

   private:
    PgEngine* e_;
    std::unique_ptr<PgConn> c_;
  };

  Result<Lease> Acquire();
  Result<Lease> AcquireUntil(SteadyClock::time_point deadline);
  void Release(std::unique_ptr<PgConn> conn);
  Result<bool> ProbeReady(PgConn& conn);
  AttemptOutcome Attempt(PgConn& conn, TxnMode mode, const std::function<Status(Txn&)>& fn,
                         Status* result, std::optional<InDoubt>* doubt);
  Status Commit(PgConn& conn);
  Status CommitWrite(PgConn& conn, std::optional<InDoubt>* doubt);
  Result<bool> CommittedInDoubt(const InDoubt& doubt, SteadyClock::time_point deadline);
  Status InitIn(PgConn& conn, InitMode mode);
  Status NoSchema() const {
    return Status::InvalidArgument(fmt::format(
        "{}: no Folio volume in this database or schema yet (Init creates the schema)", display_));
  }

  const std::string conninfo_;
  const std::string display_;
  const int poll_us_;  // the URL's poll_us (PgConn::Open)
  const MetaOpenOptions options_;
  std::atomic<bool> ready_{false};
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<PgConn>> idle_;  // GUARDED_BY(pool_mu_)
  OpStatsTable ops_;
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> commit_attempts_{0};
};

Result<PgEngine::Lease> PgEngine::Acquire() {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(c));
    }
  }
  FOLIO_ASSIGN_OR_RETURN(auto c, PgConn::Open(conninfo_, display_, poll_us_));
  return Lease(this, std::move(c));
}

Result<PgEngine::Lease> PgEngine::AcquireUntil(SteadyClock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    auto lease = Acquire();
    if (lease.ok() || SteadyClock::now() >= deadline) return lease;
    JitterBackoff(attempt, 10'000, 500'000);
  }
}

void PgEngine::Release(std::unique_ptr<PgConn> conn) {
  if (conn->broken()) return;
  conn->DiscardQueued();  // an abandoned transaction's writes (and BEGIN) never went out
  if (!conn->idle()) (void)conn->Simple("ROLLBACK");
  conn->clear_conflict();
  if (conn->broken() || !conn->idle()) return;
  std::lock_guard lock(pool_mu_);
  if (idle_.size() < kIdleConnectionsMax) idle_.push_back(std::move(conn));
}

Result<bool> PgEngine::ProbeReady(PgConn& conn) {
  FOLIO_ASSIGN_OR_RETURN(PgSchemaState state, ProbePgSchema(conn));
  if (state == PgSchemaState::kFolioUpgradable) {
    if (options_.read_only) {
      return Status::NotSupported(fmt::format(
          "{}: the volume's schema is version 1, which this build reads only after upgrading "
          "it; open it read-write once (mount it, or run folio fs fsck --repair)",
          display_));
    }
    FOLIO_RETURN_IF_ERROR(UpgradePgSchema(conn));
    state = PgSchemaState::kFolio;
  }
  if (state == PgSchemaState::kFolio) ready_.store(true);
  return state == PgSchemaState::kFolio;
}

Status PgEngine::Start() {
  FOLIO_ASSIGN_OR_RETURN(Lease conn, Acquire());
  FOLIO_ASSIGN_OR_RETURN(bool ready, ProbeReady(*conn));
  if (!ready || options_.read_only) return Status::OK();
  return conn
      ->Simple(fmt::format("DELETE FROM txn_markers WHERE written_at < now() - interval '{}'",
                           kStaleMarkers))
      .status();
}

Status PgEngine::Transact(std::string_view op, TxnMode mode,
                          const std::function<Status(Txn&)>& fn) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::Transact called from inside fn");
  MayBlock();  // round trips to the server
  OpTimer timer(ops_.Get(op));
  if (mode == TxnMode::kWrite && options_.read_only) {
    return timer.Finish(Status::InvalidArgument(
        fmt::format("{}: a write transaction on an engine opened read-only", display_)));
  }
  const auto deadline = DeadlineAfterMs(options_.reconnect_timeout_ms);
  int conflicts = 0;
  for (int attempt = 0;; ++attempt) {
    auto conn = AcquireUntil(deadline);
    if (!conn.ok()) return timer.Finish(conn.status());
    if (!ready_.load()) {
      auto ready = ProbeReady(**conn);
      if (!ready.ok() && !(*conn)->broken()) return timer.Finish(ready.status());
      if (ready.ok() && !*ready) {
        if (mode == TxnMode::kWrite) return timer.Finish(NoSchema());
        EmptyTxn txn(NoSchema());
        InFnGuard in_fn(this);
        return timer.Finish(fn(txn));
      }
    }
    Status result;
    std::optional<InDoubt> doubt;
    const AttemptOutcome o = (*conn)->broken() ? AttemptOutcome::kLostConnection
                                               : Attempt(**conn, mode, fn, &result, &doubt);
    if (o == AttemptOutcome::kDone) return timer.Finish(std::move(result));
    if (o == AttemptOutcome::kLostConnection) {
      { Lease lost = std::move(*conn); }  // closed before asking: its process may then end
      if (doubt) {  // COMMIT went out: learn whether it committed
        auto committed = CommittedInDoubt(*doubt, deadline);
        if (!committed.ok()) return timer.Finish(committed.status());
        if (*committed) {
          commits_.fetch_add(1, std::memory_order_relaxed);
          return timer.Finish(Status::OK());
        }
      }
      if (SteadyClock::now() >= deadline) {
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

AttemptOutcome PgEngine::Attempt(PgConn& conn, TxnMode mode, const std::function<Status(Txn&)>& fn,
                                 Status* result, std::optional<InDoubt>* doubt) {
  // BEGIN goes out with the transaction's first statement (PgConn::Queue).
  const Status begin = conn.Queue(mode == TxnMode::kRead
                                      ? "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"
                                      : "BEGIN ISOLATION LEVEL SERIALIZABLE",
                                  {}, /*prepared=*/false);
  if (!begin.ok()) {
    *result = begin;
    return conn.broken() ? AttemptOutcome::kLostConnection : AttemptOutcome::kDone;
  }
  {
    PgTxn txn(conn, mode);
    InFnGuard in_fn(this);
    *result = fn(txn);
  }
  if (conn.broken()) return AttemptOutcome::kLostConnection;  // nothing committed
  if (conn.conflict()) return AttemptOutcome::kConflict;      // Release rolls back
  if (!result->ok()) return AttemptOutcome::kDone;
  if (conn.in_error()) {
    // A statement failed and fn went on: the transaction is aborted, COMMIT would roll back.
    *result = Status::IOError(fmt::format(
        "{}: a statement of this transaction failed; nothing was applied", display_));
    return AttemptOutcome::kDone;
  }
  if (mode == TxnMode::kWrite && options_.inject_conflict_every > 0 &&
      (commit_attempts_.fetch_add(1) + 1) % static_cast<uint64_t>(options_.inject_conflict_every) ==
          0) {
    return AttemptOutcome::kConflict;
  }
  if (mode == TxnMode::kRead && conn.queued() == 1) {  // fn ran nothing: only BEGIN waits
    conn.DiscardQueued();
    return AttemptOutcome::kDone;
  }
  const Status commit = mode == TxnMode::kWrite ? CommitWrite(conn, doubt) : Commit(conn);
  if (commit.ok()) {
    if (mode == TxnMode::kWrite) commits_.fetch_add(1, std::memory_order_relaxed);
    return AttemptOutcome::kDone;
  }
  if (conn.broken()) {
    *result = commit;
    return AttemptOutcome::kLostConnection;
  }
  doubt->reset();
  if (conn.conflict()) return AttemptOutcome::kConflict;
  *result = commit.WithContext("commit failed, nothing was applied");
  return AttemptOutcome::kDone;
}

Status PgEngine::Commit(PgConn& conn) {
  FOLIO_RETURN_IF_ERROR(conn.Queue("COMMIT", {}, /*prepared=*/false));
  return conn.Flush();
}

// The writes still queued, the connection's marker row, then COMMIT, in one round trip. From
// here on, until a reply says otherwise, the transaction is in doubt.
Status PgEngine::CommitWrite(PgConn& conn, std::optional<InDoubt>* doubt) {
  *doubt = InDoubt{conn.identity(), conn.NextCommitSeq()};
  FOLIO_RETURN_IF_ERROR(conn.Queue(
      "INSERT INTO txn_markers(conn, seq, written_at) VALUES($1, $2, now()) ON CONFLICT(conn) DO "
      "UPDATE SET seq = excluded.seq, written_at = excluded.written_at",
      {PgParam::U((*doubt)->who.id), PgParam::U((*doubt)->seq)}));
  return Commit(conn);
}

// Whether the in-doubt transaction committed, asked on `conn`: its connection's server process
// is ended first (until it has ended it may still commit: the connection may have been lost on
// the client's side only), then the marker row, committed or not by then for good, answers.
// The connection is gone, so its row is removed. nullopt: the process is still running.
Result<std::optional<bool>> AskMarker(PgConn& conn, const InDoubt& doubt) {
  using P = PgParam;
  FOLIO_ASSIGN_OR_RETURN(
      PgRows alive,
      conn.Exec("SELECT pg_terminate_backend(pid, 5000)::int::int8 FROM pg_stat_activity WHERE "
                "pid = $1 AND backend_start::text = $2",
                {P::I(doubt.who.backend_pid), P::T(doubt.who.backend_start)}));
  if (alive.size() > 0 && alive.Int(0, 0) != 1) return std::optional<bool>();
  FOLIO_ASSIGN_OR_RETURN(PgRows marker, conn.Exec("SELECT seq FROM txn_markers WHERE conn = $1",
                                                  {P::U(doubt.who.id)}));
  (void)conn.Exec("DELETE FROM txn_markers WHERE conn = $1", {P::U(doubt.who.id)});
  return std::optional<bool>(marker.size() == 1 && marker.U64(0, 0) == doubt.seq);
}

Result<bool> PgEngine::CommittedInDoubt(const InDoubt& doubt, SteadyClock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    auto conn = Acquire();
    if (conn.ok()) {
      auto answer = AskMarker(**conn, doubt);
      if (answer.ok() && answer->has_value()) return **answer;
      if (!answer.ok() && !(*conn)->broken()) {
        return answer.status().WithContext(
            "the connection was lost while committing and whether the transaction was applied "
            "cannot be told");
      }
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

Result<uint64_t> PgEngine::AllocateIds(Counter c, uint64_t n) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::AllocateIds called from inside fn");
  if ((c != Counter::kNextInode && c != Counter::kNextSlice && c != Counter::kNextSession) ||
      n == 0 || n > (uint64_t{1} << 32)) {
    return Status::InvalidArgument(fmt::format(
        "{}: AllocateIds({}, {}): needs an id counter and 1..2^32 ids", display_, CounterName(c),
        n));
  }
  const auto deadline = DeadlineAfterMs(options_.reconnect_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    FOLIO_ASSIGN_OR_RETURN(Lease conn, AcquireUntil(deadline));
    if (!ready_.load()) {
      FOLIO_ASSIGN_OR_RETURN(bool ready, ProbeReady(*conn));
      if (!ready) return NoSchema();
    }
    // One UPDATE in its own transaction: the row lock orders concurrent allocations. A reply
    // lost with the connection is retried: the ids it may have taken are a gap.
    auto r = conn->Exec("UPDATE counters SET value = value + $1 WHERE name = $2 RETURNING value",
                        {PgParam::I(static_cast<int64_t>(n)), PgParam::T(CounterName(c))});
    if (r.ok()) {
      if (r->size() != 1) return Status::Corruption(display_ + ": counter row missing");
      return r->U64(0, 0) - n + 1;
    }
    if (!conn->broken() || SteadyClock::now() >= deadline) return r.status();
    JitterBackoff(attempt, 10'000, 500'000);
  }
}

Status PgEngine::Init(InitMode mode) {
  FOLIO_CHECK_MSG(!InFnOf(this), "MetaEngine::Init called from inside fn");
  if (options_.read_only) {
    return Status::InvalidArgument(fmt::format("{}: Init on an engine opened read-only", display_));
  }
  FOLIO_ASSIGN_OR_RETURN(Lease conn, Acquire());
  FOLIO_RETURN_IF_ERROR(conn->Simple("BEGIN ISOLATION LEVEL SERIALIZABLE").status());
  Status s = InitIn(*conn, mode);
  if (s.ok()) s = conn->Simple("COMMIT").status();
  if (!s.ok()) return s;  // Release rolls back
  commits_.fetch_add(1, std::memory_order_relaxed);
  ready_.store(true);
  return Status::OK();
}

Status PgEngine::InitIn(PgConn& conn, InitMode mode) {
  // Refuses a foreign database before changing anything in it.
  FOLIO_ASSIGN_OR_RETURN(PgSchemaState state, ProbePgSchema(conn));
  if (state == PgSchemaState::kEmpty) return CreatePgSchema(conn);
  if (state == PgSchemaState::kFolioUpgradable) {
    return Status::InvalidArgument(fmt::format(
        "{}: holds a volume of schema version 1; open it once (mount, or fsck --repair) to "
        "upgrade it before formatting over it",
        display_));
  }
  if (mode == InitMode::kWipe) return WipePgSchema(conn);
  FOLIO_ASSIGN_OR_RETURN(PgRows f, conn.Simple("SELECT 1 FROM folio_meta WHERE name = 'format'"));
  if (f.size() > 0) {
    return Status::Exists(
        fmt::format("{}: already holds a Folio volume (wipe it to format it again)", display_));
  }
  return Status::OK();  // a schema without a volume (Init ran, format did not): reuse it
}

std::string WithConnectTimeout(std::string_view url) {
  std::string s(url);
  if (s.find("connect_timeout=") != std::string::npos) return s;
  return s + (s.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=10";
}

}  // namespace

Result<std::unique_ptr<MetaEngine>> OpenPgEngine(std::string_view url,
                                                 const MetaOpenOptions& options) {
  if (!url.starts_with("postgres://") && !url.starts_with("postgresql://")) {
    return Status::InvalidArgument(fmt::format(
        "'{}': not a postgres:// URL; use postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...]",
        PgDisplayUrl(url)));
  }
  std::string libpq_url(url);
  FOLIO_ASSIGN_OR_RETURN(const int poll_us, TakePgPollUs(&libpq_url));
  auto engine = std::make_unique<PgEngine>(WithConnectTimeout(libpq_url), PgDisplayUrl(libpq_url),
                                           poll_us, options);
  FOLIO_RETURN_IF_ERROR(engine->Start());
  return std::unique_ptr<MetaEngine>(std::move(engine));
}

namespace {

Status SchemaDdl(std::string_view url, const std::string& sql) {
  std::string libpq_url(url);
  FOLIO_ASSIGN_OR_RETURN(const int poll_us, TakePgPollUs(&libpq_url));
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn,
                         PgConn::Open(WithConnectTimeout(libpq_url), PgDisplayUrl(libpq_url),
                                      poll_us));
  return conn->Simple(sql).status();
}

}  // namespace

Status CreatePgSchema(std::string_view url, std::string_view schema) {
  return SchemaDdl(url, fmt::format("CREATE SCHEMA {}", schema));
}

Status DropPgSchema(std::string_view url, std::string_view schema) {
  // Without the NOTICE listing every table the cascade drops.
  return SchemaDdl(url, fmt::format("SET client_min_messages = warning; DROP SCHEMA IF EXISTS {} "
                                    "CASCADE", schema));
}

}  // namespace folio::meta
