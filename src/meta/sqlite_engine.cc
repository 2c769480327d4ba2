#include "meta/sqlite_engine.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/may_block.h"
#include "meta/empty_txn.h"
#include "meta/meta_stats.h"
#include "meta/sqlite_conn.h"
#include "meta/sqlite_schema.h"
#include "meta/sqlite_txn.h"

namespace folio::meta {
namespace {

using Clock = std::chrono::steady_clock;

// The engine whose transaction this thread is running fn of: Transact and AllocateIds from
// inside fn would wait for themselves.
thread_local const void* tl_engine_in_fn = nullptr;

class InFn {
 public:
  explicit InFn(const void* engine) : prev_(tl_engine_in_fn) { tl_engine_in_fn = engine; }
  ~InFn() { tl_engine_in_fn = prev_; }

 private:
  const void* prev_;
};

void Backoff(int attempt) {
  const int us = std::min(50'000, 500 << std::min(attempt, 7));
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

// Checkpoints. SQLite's automatic checkpoint runs inside the commit that takes the WAL past
// 1000 frames, on the writer connection under writer_mu_, and fsyncs the WAL and the database
// file there: every writer of the mount waits for those fsyncs. Here that commit only wakes a
// checkpointer thread, which runs a PASSIVE checkpoint on a connection of its own, alongside
// the writer and the readers (WAL allows that; its fsyncs no longer stall a commit), once per
// 1000 frames the WAL grew by: SQLite's own hook checkpointed (and fsynced twice) in every
// commit while the WAL stayed past 1000 frames, which it does as long as some reader is in a
// transaction when a writer could restart it.
//
// Restarting the WAL. SQLite writes the WAL from its start again only when a write transaction
// begins with every frame already copied into the database. A checkpoint that runs beside a
// steady stream of commits never sees that: by the time it has copied and fsynced what it saw,
// the writer has appended more, so the WAL grows for as long as the stream lasts (every frame
// an append that ext4 allocates and zeroes, each page read searching a wal-index that grows
// with it, and all of it copied back at close; docs/fs.md has the 1.4 GB a mount reached).
// So once the WAL holds kRestartFrames, a pass that copied everything it saw (or all but at
// most kCheckpointFrames committed while it ran) copies the few frames committed since then
// under writer_mu_, with no batch open: the next write transaction finds nothing left to copy
// and restarts the WAL (unless a reader still reads the old frames at that instant; the next
// such pass tries again). The writers wait for one short checkpoint (its two fsyncs) per
// kRestartFrames frames, not per 1000.
constexpr int kCheckpointFrames = 1000;
constexpr int kRestartFrames = 4096;
// A WAL that grew past this anyway (a reader held old frames for long) is cut back to it when
// it restarts (PRAGMA journal_size_limit); below it the file is reused, not re-extended.
constexpr int64_t kWalSizeLimitBytes = 64ll << 20;

// One physical transaction shared by the write transactions of a group commit.
struct Batch {
  bool done = false;   // GUARDED_BY(done_mu_)
  bool retry = false;  // the batch was rolled back: members re-run fn
  Status status;       // the commit's result
};

class SqliteEngine final : public MetaEngine {
 public:
  SqliteEngine(std::string path, const MetaOpenOptions& options, const SqliteTuning& tuning)
      : path_(std::move(path)), url_("sqlite:" + path_), options_(options), tuning_(tuning) {}
  ~SqliteEngine() override {
    {
      std::lock_guard lock(ckpt_mu_);
      ckpt_stop_ = true;
    }
    ckpt_cv_.notify_all();
    if (ckpt_thread_.joinable()) ckpt_thread_.join();
    if (writer_ != nullptr) sqlite3_wal_hook(writer_->db(), nullptr, nullptr);
  }

  // Opens the database when the file exists and probes its schema.
  Status Start();

  Status Transact(std::string_view op, TxnMode mode,
                  const std::function<Status(Txn&)>& fn) override;
  Result<uint64_t> AllocateIds(Counter c, uint64_t n) override;
  Status Init(InitMode mode) override;
  Status Sync() override;
  MetaStats Stats() const override;
  std::string url() const override { return url_; }

 private:
  struct MemberResult {
    Status status;       // fn's status, or the engine's when a savepoint statement failed
    bool member = false;  // fn succeeded: its writes are in the batch
    bool retry = false;  // a lock conflict or a lost batch: run fn again
  };

  Status ReadTxn(OpTimer& timer, const std::function<Status(Txn&)>& fn);
  Status WriteTxn(OpTimer& timer, const std::function<Status(Txn&)>& fn);
  // One attempt of a write transaction; sets *batch when fn joined one.
  MemberResult WriteAttempt(const std::function<Status(Txn&)>& fn, Clock::time_point deadline,
                            std::shared_ptr<Batch>* batch);

  // The writer side. REQUIRES: writer_mu_ held.
  Status RefreshLocked();
  Status OpenWriterLocked(bool create);
  Status ConfigureWriterLocked();
  Status BeginLocked(Clock::time_point deadline);
  MemberResult RunMemberLocked(const std::function<Status(Txn&)>& fn);
  void CommitLocked(Clock::time_point deadline);
  void FinishBatchLocked(Status status, bool retry);
  Status InitLocked(InitMode mode);

  // The writer's WAL hook (after each commit) and the checkpointer thread.
  static int WalHook(void* engine, sqlite3* db, const char* name, int frames);
  void CheckpointLoop();
  void CheckpointPass(SqliteConn& conn);
  // One PASSIVE checkpoint: false when it failed or found no WAL. *frames: the WAL's frames;
  // *copied: how many of them are in the database now.
  bool Checkpoint(SqliteConn& conn, int* frames, int* copied);

  Result<std::unique_ptr<SqliteConn>> AcquireReader();
  void ReleaseReader(std::unique_ptr<SqliteConn> conn);

  Status NoSchema() const {
    return Status::InvalidArgument(fmt::format(
        "{}: no Folio volume in this database yet (it is empty or missing; Init creates the "
        "schema)",
        url_));
  }
  Status Waited(std::string_view what) const {
    return Status::Busy(fmt::format("{}: {} for {} ms (busy_timeout_ms); nothing was applied",
                                    url_, what, options_.busy_timeout_ms));
  }

  const std::string path_;
  const std::string url_;
  const MetaOpenOptions options_;
  const SqliteTuning tuning_;

  std::mutex writer_mu_;
  std::unique_ptr<SqliteConn> writer_;  // GUARDED_BY(writer_mu_); null while the file is absent
  std::shared_ptr<Batch> batch_;        // GUARDED_BY(writer_mu_): the open physical transaction
  size_t batch_members_ = 0;            // GUARDED_BY(writer_mu_)
  uint64_t commit_attempts_ = 0;        // GUARDED_BY(writer_mu_)
  uint64_t synced_commits_ = 0;         // GUARDED_BY(writer_mu_): commits_ at the last Sync
  std::atomic<int> writers_waiting_{0};
  std::atomic<bool> ready_{false};  // the database holds a Folio schema

  std::mutex done_mu_;
  std::condition_variable done_cv_;  // a batch finished

  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<std::unique_ptr<SqliteConn>> idle_readers_;  // GUARDED_BY(readers_mu_)
  size_t readers_open_ = 0;                                // GUARDED_BY(readers_mu_)

  OpStatsTable ops_;
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> fsyncs_{0};
  std::atomic<uint64_t> reads_on_writer_{0};

  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_;
  bool ckpt_wanted_ = false;  // GUARDED_BY(ckpt_mu_)
  bool ckpt_stop_ = false;    // GUARDED_BY(ckpt_mu_)
  std::thread ckpt_thread_;   // started when the writer is configured (writer_mu_)
  int ckpt_mark_ = 0;         // GUARDED_BY(writer_mu_): WAL frames at the last wake-up
  std::atomic<uint64_t> checkpoints_{0};
  std::atomic<uint64_t> wal_restarts_{0};  // seen by the WAL hook
  std::atomic<int64_t> wal_frames_{0};     // WAL frames at the last commit
};

// ---- opening --------------------------------------------------------------------------------

Status SqliteEngine::Start() {
  if (options_.sqlite_synchronous != "full" && options_.sqlite_synchronous != "normal") {
    return Status::InvalidArgument(fmt::format("{}: synchronous '{}' must be full or normal",
                                               url_, options_.sqlite_synchronous));
  }
  std::lock_guard lock(writer_mu_);
  return RefreshLocked();
}

Status SqliteEngine::RefreshLocked() {
  if (ready_.load()) return Status::OK();
  if (writer_ == nullptr) {
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0) return Status::OK();  // absent: Init creates it
    FOLIO_RETURN_IF_ERROR(OpenWriterLocked(/*create=*/false));
  }
  FOLIO_ASSIGN_OR_RETURN(SqliteSchemaState state, ProbeSqliteSchema(*writer_));
  if (state == SqliteSchemaState::kEmpty) return Status::OK();
  FOLIO_RETURN_IF_ERROR(ConfigureWriterLocked());
  ready_.store(true);
  return Status::OK();
}

Status SqliteEngine::OpenWriterLocked(bool create) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  FOLIO_ASSIGN_OR_RETURN(writer_,
                         SqliteConn::Open(path_, flags, url_, options_.busy_timeout_ms,
                                                  options_.sqlite_vfs));
  return Status::OK();
}

Status SqliteEngine::ConfigureWriterLocked() {
  FOLIO_ASSIGN_OR_RETURN(SqliteStmt s, writer_->Prepare("PRAGMA journal_mode = WAL"));
  FOLIO_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row || s.Blob(0) != "wal") {
    return Status::IOError(fmt::format("{}: cannot switch the database to WAL mode (journal "
                                       "mode '{}')",
                                       url_, row ? std::string(s.Blob(0)) : ""));
  }
  FOLIO_RETURN_IF_ERROR(writer_->Exec(options_.sqlite_synchronous == "full"
                                          ? "PRAGMA synchronous = FULL"
                                          : "PRAGMA synchronous = NORMAL"));
  FOLIO_RETURN_IF_ERROR(writer_->Exec(
      fmt::format("PRAGMA journal_size_limit = {}", kWalSizeLimitBytes).c_str()));
  // Replaces SQLite's automatic checkpoint (itself a WAL hook): see kCheckpointFrames.
  sqlite3_wal_hook(writer_->db(), &SqliteEngine::WalHook, this);
  if (!ckpt_thread_.joinable()) ckpt_thread_ = std::thread([this] { CheckpointLoop(); });
  return Status::OK();
}

int SqliteEngine::WalHook(void* engine, sqlite3* db, const char* name, int frames) {
  (void)db;
  (void)name;
  // Runs in the writer's commit, under writer_mu_.
  auto* self = static_cast<SqliteEngine*>(engine);
  if (frames < self->ckpt_mark_) {  // the WAL was restarted
    self->ckpt_mark_ = 0;
    self->wal_restarts_.fetch_add(1, std::memory_order_relaxed);
  }
  self->wal_frames_.store(frames, std::memory_order_relaxed);
  if (frames >= self->ckpt_mark_ + kCheckpointFrames) {
    self->ckpt_mark_ = frames;
    {
      std::lock_guard lock(self->ckpt_mu_);
      self->ckpt_wanted_ = true;
    }
    self->ckpt_cv_.notify_one();
  }
  return SQLITE_OK;
}

void SqliteEngine::CheckpointLoop() {
  std::unique_ptr<SqliteConn> conn;
  std::unique_lock lock(ckpt_mu_);
  for (;;) {
    ckpt_cv_.wait(lock, [&] { return ckpt_stop_ || ckpt_wanted_; });
    if (ckpt_stop_) return;
    ckpt_wanted_ = false;
    lock.unlock();
    if (conn == nullptr) {
      Result<std::unique_ptr<SqliteConn>> c =
          SqliteConn::Open(path_, SQLITE_OPEN_READWRITE, url_, options_.busy_timeout_ms,
                           options_.sqlite_vfs);
      // A new connection does not know the database is in WAL mode until it has read it: a
      // checkpoint on it before that does nothing and says so (-1 frames).
      if (c.ok() && (*c)->QueryInt("PRAGMA schema_version").ok()) conn = std::move(*c);
    }
    if (conn != nullptr) CheckpointPass(*conn);
    lock.lock();
  }
}

// PASSIVE: copies what no reader still needs and never waits; a WAL that could not be copied
// whole is taken up again after the next commits.
void SqliteEngine::CheckpointPass(SqliteConn& conn) {
  int frames = 0, copied = 0;
  if (!Checkpoint(conn, &frames, &copied)) return;
  // Copied everything it saw, or all but what was committed while it ran. On a slow CPU (an
  // emulated Cortex-A53) the writer kept appending during every pass, no pass ever copied all
  // it saw, and the WAL grew to three times kRestartFrames before one did. So a pass that left
  // more than kCheckpointFrames is followed by passes over what it left, while that shrinks
  // (it does not when a reader holds those frames); at most kCheckpointFrames left over keeps
  // the writers' wait below one short checkpoint.
  for (int pass = 0; pass < 4 && frames >= kRestartFrames && frames - copied > kCheckpointFrames;
       ++pass) {
    const int left = frames - copied;
    if (!Checkpoint(conn, &frames, &copied)) return;
    if (frames - copied >= left) break;
  }
  if (frames < kRestartFrames || frames - copied > kCheckpointFrames) return;
  // Copy what is left, with no writer running, so the next write transaction restarts the WAL
  // (see kRestartFrames). A batch open on the writer holds frames of its own; wait for it to
  // finish and try again before the next one opens.
  // Every batch is finished by the writer that decides it (WriteAttempt), so the wait ends;
  // the timeout only bounds a pass, and the next pass tries again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::shared_ptr<Batch> open;
    {
      std::lock_guard wlock(writer_mu_);
      if (batch_ == nullptr) {
        (void)Checkpoint(conn, &frames, &copied);
        return;
      }
      open = batch_;
    }
    std::unique_lock dlock(done_mu_);
    if (!done_cv_.wait_for(dlock, std::chrono::seconds(1), [&] { return open->done; })) return;
  }
}

bool SqliteEngine::Checkpoint(SqliteConn& conn, int* frames, int* copied) {
  const int rc = sqlite3_wal_checkpoint_v2(conn.db(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                           frames, copied);
  if (rc != SQLITE_OK || *frames < 0) return false;
  checkpoints_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---- transactions ---------------------------------------------------------------------------

Status SqliteEngine::Transact(std::string_view op, TxnMode mode,
                              const std::function<Status(Txn&)>& fn) {
  FOLIO_CHECK_MSG(tl_engine_in_fn != this, "MetaEngine::Transact called from inside fn");
  OpTimer timer(ops_.Get(op));
  return timer.Finish(mode == TxnMode::kRead ? ReadTxn(timer, fn) : WriteTxn(timer, fn));
}

Status SqliteEngine::ReadTxn(OpTimer& timer, const std::function<Status(Txn&)>& fn) {
  if (!ready_.load()) {
    {
      std::lock_guard lock(writer_mu_);
      FOLIO_RETURN_IF_ERROR(RefreshLocked());
    }
    if (!ready_.load()) {
      EmptyTxn txn(NoSchema());
      InFn in_fn(this);
      return fn(txn);
    }
  }
  // A reader connection drops its whole page cache whenever anything was committed since its
  // last transaction (SQLite's WAL rule), so after each write a lookup re-reads every page it
  // touches from the WAL or the file. The writer connection's cache stays valid across its own
  // commits: when it is idle (no batch open, nobody holding or waiting for it), the read runs
  // there. A read that meets a lock (another process) goes on to a reader connection.
  {
    std::unique_lock lock(writer_mu_, std::try_to_lock);
    if (lock.owns_lock() && batch_ == nullptr && writer_ != nullptr && writer_->autocommit() &&
        writers_waiting_.load() == 0) {
      const uint64_t busy_before = writer_->busy_results();
      Status s = writer_->Exec("BEGIN");
      if (s.ok()) {
        SqliteTxn txn(*writer_, TxnMode::kRead);
        InFn in_fn(this);
        s = fn(txn);
      }
      if (!writer_->autocommit()) (void)writer_->Exec("ROLLBACK");
      if (writer_->busy_results() == busy_before) {
        reads_on_writer_.fetch_add(1, std::memory_order_relaxed);
        return s;
      }
    }
  }
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<SqliteConn> conn, AcquireReader());
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(options_.busy_timeout_ms);
  Status s;
  for (int attempt = 0;; ++attempt) {
    const uint64_t busy_before = conn->busy_results();
    s = conn->Exec("BEGIN");
    if (s.ok()) {
      SqliteTxn txn(*conn, TxnMode::kRead);
      InFn in_fn(this);
      s = fn(txn);
    }
    if (!conn->autocommit()) (void)conn->Exec("ROLLBACK");
    const bool busy = conn->busy_results() != busy_before;
    if (!busy) break;
    if (attempt >= options_.max_retries || Clock::now() >= deadline) {
      s = Waited("reading: the database stayed locked");
      break;
    }
    timer.Retry();
    Backoff(attempt);
  }
  ReleaseReader(std::move(conn));
  return s;
}

Status SqliteEngine::WriteTxn(OpTimer& timer, const std::function<Status(Txn&)>& fn) {
  if (options_.read_only) {
    return Status::InvalidArgument(
        fmt::format("{}: a write transaction on an engine opened read-only", url_));
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(options_.busy_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    std::shared_ptr<Batch> batch;
    MemberResult r = WriteAttempt(fn, deadline, &batch);
    if (r.member) {
      std::unique_lock lock(done_mu_);
      // Another writer's COMMIT (and fsync) ends this batch.
      WaitWithHint(done_cv_, lock, [&] { return batch->done; });
      if (!batch->retry) return batch->status;
    } else if (!r.retry) {
      return r.status;
    }
    if (attempt >= options_.max_retries) {
      return Status::Busy(fmt::format("{}: gave up after {} conflict retries; nothing was applied",
                                      url_, attempt));
    }
    timer.Retry();
    Backoff(attempt);
  }
}

SqliteEngine::MemberResult SqliteEngine::WriteAttempt(const std::function<Status(Txn&)>& fn,
                                                      Clock::time_point deadline,
                                                      std::shared_ptr<Batch>* batch) {
  writers_waiting_.fetch_add(1);
  std::unique_lock lock(writer_mu_);
  writers_waiting_.fetch_sub(1);
  MemberResult r;
  if (batch_ == nullptr) {
    // No batch is open, so no member waits for this thread's decision: returning is safe.
    r.status = RefreshLocked();
    if (r.status.ok() && !ready_.load()) r.status = NoSchema();
    if (r.status.ok()) r.status = BeginLocked(deadline);
    if (!r.status.ok()) return r;
  }
  *batch = batch_;
  r = RunMemberLocked(fn);
  if (batch_ == nullptr) return r;  // the physical transaction was lost and already finished
  if (r.member) ++batch_members_;
  // Every path decides here, so a member waiting for this batch is never left behind.
  const bool others_waiting = writers_waiting_.load() > 0;
  if (batch_members_ > 0 && (!others_waiting || batch_members_ >= tuning_.group_commit_max)) {
    CommitLocked(deadline);
  } else if (batch_members_ == 0 && !others_waiting) {
    (void)writer_->Exec("ROLLBACK");
    FinishBatchLocked(Status::OK(), false);
  }
  return r;
}

Status SqliteEngine::BeginLocked(Clock::time_point deadline) {
  for (int attempt = 0;; ++attempt) {
    Status s = writer_->Exec("BEGIN IMMEDIATE");
    if (s.ok()) break;
    if (s.code() != StatusCode::kBusy) return s;
    if (Clock::now() >= deadline) return Waited("the database stayed locked by another writer");
    Backoff(attempt);
  }
  batch_ = std::make_shared<Batch>();
  batch_members_ = 0;
  return Status::OK();
}

SqliteEngine::MemberResult SqliteEngine::RunMemberLocked(const std::function<Status(Txn&)>& fn) {
  MemberResult r;
  const uint64_t busy_before = writer_->busy_results();
  r.status = writer_->Exec("SAVEPOINT member");
  if (r.status.ok()) {
    SqliteTxn txn(*writer_, TxnMode::kWrite);
    InFn in_fn(this);
    r.status = fn(txn);
  }
  const bool busy = writer_->busy_results() != busy_before;
  if (writer_->autocommit()) {
    // SQLite rolled the whole transaction back (I/O error, disk full, ...): the members that
    // had succeeded re-run fn; this one re-runs when its failure was a lock conflict.
    FinishBatchLocked(Status::OK(), /*retry=*/true);
    r.retry = busy || r.status.ok();
    return r;
  }
  if (r.status.ok() && !busy) {
    Status s = writer_->Exec("RELEASE member");
    if (s.ok()) {
      r.member = true;
      return r;
    }
    r.status = s;
  }
  Status s = writer_->Exec("ROLLBACK TO member");
  if (s.ok()) s = writer_->Exec("RELEASE member");
  if (!s.ok()) {
    // The savepoint cannot be undone alone: give the whole batch up.
    if (!writer_->autocommit()) (void)writer_->Exec("ROLLBACK");
    FinishBatchLocked(Status::OK(), /*retry=*/true);
    r.retry = true;
    return r;
  }
  r.retry = busy;
  return r;
}

void SqliteEngine::CommitLocked(Clock::time_point deadline) {
  ++commit_attempts_;
  if (options_.inject_conflict_every > 0 &&
      commit_attempts_ % static_cast<uint64_t>(options_.inject_conflict_every) == 0) {
    (void)writer_->Exec("ROLLBACK");
    FinishBatchLocked(Status::OK(), /*retry=*/true);
    return;
  }
  Status s;
  if (options_.sqlite_synchronous == "full") MayBlock();  // the COMMIT fsyncs the WAL
  for (int attempt = 0;; ++attempt) {
    s = writer_->Exec("COMMIT");
    if (s.ok() || s.code() != StatusCode::kBusy || writer_->autocommit() ||
        Clock::now() >= deadline) {
      break;
    }
    Backoff(attempt);
  }
  if (s.ok()) {
    commits_.fetch_add(1, std::memory_order_relaxed);
    if (options_.sqlite_synchronous == "full") fsyncs_.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (!writer_->autocommit()) (void)writer_->Exec("ROLLBACK");
    s = s.WithContext("commit failed, nothing was applied");
  }
  FinishBatchLocked(std::move(s), /*retry=*/false);
}

void SqliteEngine::FinishBatchLocked(Status status, bool retry) {
  {
    std::lock_guard lock(done_mu_);
    batch_->status = std::move(status);
    batch_->retry = retry;
    batch_->done = true;
  }
  done_cv_.notify_all();
  batch_.reset();
  batch_members_ = 0;
}

// ---- readers --------------------------------------------------------------------------------

Result<std::unique_ptr<SqliteConn>> SqliteEngine::AcquireReader() {
  {
    std::unique_lock lock(readers_mu_);
    readers_cv_.wait(lock, [&] {
      return !idle_readers_.empty() || readers_open_ < tuning_.readers_max;
    });
    if (!idle_readers_.empty()) {
      auto conn = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return conn;
    }
    ++readers_open_;
  }
  auto conn = SqliteConn::Open(path_, SQLITE_OPEN_READWRITE, url_, options_.busy_timeout_ms,
                               options_.sqlite_vfs);
  Status s = conn.ok() ? (*conn)->Exec("PRAGMA query_only = 1") : conn.status();
  if (!s.ok()) {
    std::lock_guard lock(readers_mu_);
    --readers_open_;
    readers_cv_.notify_one();
    return s;
  }
  return std::move(*conn);
}

void SqliteEngine::ReleaseReader(std::unique_ptr<SqliteConn> conn) {
  {
    std::lock_guard lock(readers_mu_);
    idle_readers_.push_back(std::move(conn));
  }
  readers_cv_.notify_one();
}

// ---- ids, init, stats -----------------------------------------------------------------------

Result<uint64_t> SqliteEngine::AllocateIds(Counter c, uint64_t n) {
  if ((c != Counter::kNextInode && c != Counter::kNextSlice && c != Counter::kNextSession) ||
      n == 0 || n > (uint64_t{1} << 32)) {
    return Status::InvalidArgument(fmt::format("{}: AllocateIds({}, {}): needs an id counter and "
                                               "1..2^32 ids",
                                               url_, CounterName(c), n));
  }
  uint64_t first = 0;
  FOLIO_RETURN_IF_ERROR(Transact("allocate_ids", TxnMode::kWrite, [&](Txn& txn) -> Status {
    FOLIO_ASSIGN_OR_RETURN(int64_t value, txn.GetCounter(c));
    first = static_cast<uint64_t>(value) + 1;
    return txn.AddToCounter(c, static_cast<int64_t>(n));
  }));
  return first;
}

Status SqliteEngine::Init(InitMode mode) {
  FOLIO_CHECK_MSG(tl_engine_in_fn != this, "MetaEngine::Init called from inside fn");
  if (options_.read_only) {
    return Status::InvalidArgument(fmt::format("{}: Init on an engine opened read-only", url_));
  }
  std::lock_guard lock(writer_mu_);
  // Writers of this process that joined an open batch are waiting for its commit.
  if (batch_ != nullptr) {
    CommitLocked(Clock::now() + std::chrono::milliseconds(options_.busy_timeout_ms));
  }
  return InitLocked(mode);
}

Status SqliteEngine::InitLocked(InitMode mode) {
  if (writer_ == nullptr) {
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec)) {
      return Status::InvalidArgument(
          fmt::format("{}: directory {} does not exist; create it first", url_, parent.string()));
    }
    FOLIO_RETURN_IF_ERROR(OpenWriterLocked(/*create=*/true));
  }
  // Refuse a foreign database before changing anything in it (its journal mode included).
  FOLIO_ASSIGN_OR_RETURN(SqliteSchemaState before, ProbeSqliteSchema(*writer_));
  (void)before;
  FOLIO_RETURN_IF_ERROR(ConfigureWriterLocked());
  FOLIO_RETURN_IF_ERROR(
      BeginLocked(Clock::now() + std::chrono::milliseconds(options_.busy_timeout_ms)));
  Status s = [&]() -> Status {
    // Probed again inside the transaction: another process may have initialized it meanwhile.
    FOLIO_ASSIGN_OR_RETURN(SqliteSchemaState state, ProbeSqliteSchema(*writer_));
    if (state == SqliteSchemaState::kEmpty) return CreateSqliteSchema(*writer_);
    if (mode == InitMode::kWipe) return WipeSqliteSchema(*writer_);
    FOLIO_ASSIGN_OR_RETURN(int64_t formatted,
                           writer_->QueryInt("SELECT count(*) FROM folio_meta WHERE name = 'format'"));
    if (formatted > 0) {
      return Status::Exists(fmt::format("{}: already holds a Folio volume (wipe it to format "
                                        "it again)",
                                        url_));
    }
    return Status::OK();  // a schema without a volume (Init ran, format did not): reuse it
  }();
  if (s.ok()) s = writer_->Exec("COMMIT");
  if (!writer_->autocommit()) (void)writer_->Exec("ROLLBACK");
  FinishBatchLocked(Status::OK(), false);  // no member joined this batch
  if (!s.ok()) return s;
  commits_.fetch_add(1, std::memory_order_relaxed);
  ready_.store(true);
  return Status::OK();
}

Status SqliteEngine::Sync() {
  if (options_.sqlite_synchronous == "full" || options_.read_only) return Status::OK();
  std::lock_guard lock(writer_mu_);
  const uint64_t commits = commits_.load(std::memory_order_relaxed);
  if (writer_ == nullptr || commits == synced_commits_) return Status::OK();
  // With synchronous=NORMAL a commit appends its frames to the WAL without an fsync; one fsync
  // of the WAL makes every frame written before it durable (SQLite's own commit under FULL
  // does exactly this). The pager hands out the WAL's file object for this purpose.
  sqlite3_file* wal = nullptr;
  int rc = sqlite3_file_control(writer_->db(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);
  if (rc == SQLITE_OK && (wal == nullptr || wal->pMethods == nullptr)) {
    // No WAL is open: everything committed was checkpointed into the database, and a
    // checkpoint syncs the database file.
    synced_commits_ = commits;
    return Status::OK();
  }
  MayBlock();
  if (rc == SQLITE_OK) rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
  if (rc != SQLITE_OK) {
    return Status::IOError(fmt::format(
        "{}: fsync of the write-ahead log failed ({}): the last metadata operations may not "
        "survive a power loss",
        url_, sqlite3_errstr(rc)));
  }
  synced_commits_ = commits;
  fsyncs_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

MetaStats SqliteEngine::Stats() const {
  MetaStats s;
  s.ops = ops_.Snapshot();
  s.commits = commits_.load(std::memory_order_relaxed);
  s.fsyncs = fsyncs_.load(std::memory_order_relaxed);
  s.reads_on_writer = reads_on_writer_.load(std::memory_order_relaxed);
  s.checkpoints = checkpoints_.load(std::memory_order_relaxed);
  s.wal_restarts = wal_restarts_.load(std::memory_order_relaxed);
  s.wal_frames = static_cast<uint64_t>(wal_frames_.load(std::memory_order_relaxed));
  return s;
}

}  // namespace

Result<std::unique_ptr<MetaEngine>> OpenSqliteEngine(std::string_view path_in,
                                                     const MetaOpenOptions& options,
                                                     const SqliteTuning& tuning) {
  if (path_in.empty()) {
    return Status::InvalidArgument(
        "sqlite:: empty path; name the database file (e.g. sqlite:/var/lib/folio/vol.db)");
  }
  std::error_code ec;
  std::string path = std::filesystem::absolute(std::filesystem::path(path_in), ec).string();
  if (ec) path = std::string(path_in);
  const std::string url = "sqlite:" + path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(fmt::format(
          "{}: is a directory; name a database file in it (e.g. sqlite:{}/meta.db)", url, path));
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(fmt::format("{}: not a regular file", url));
    }
  } else {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!std::filesystem::is_directory(parent, ec)) {
      return Status::InvalidArgument(
          fmt::format("{}: directory {} does not exist; create it first", url, parent.string()));
    }
  }
  auto engine = std::make_unique<SqliteEngine>(path, options, tuning);
  FOLIO_RETURN_IF_ERROR(engine->Start());
  return std::unique_ptr<MetaEngine>(std::move(engine));
}

}  // namespace folio::meta
