#include "fs/session.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <set>
#include <string>

#include "fs/fs_internal.h"

namespace folio::fs {

namespace {

// The sessions this process has registered and not yet closed.
std::mutex g_live_mu;
std::set<uint64_t>& LiveSessions() {
  static std::set<uint64_t> live;
  return live;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

bool ProcessExists(uint32_t pid) {
  if (pid == 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

bool SessionKeeper::IsDead(const meta::Session& s, int64_t now_ns, int64_t timeout_ms) {
  if (now_ns - s.heartbeat_ns > timeout_ms * 1000000) return true;
  if (s.host != HostName()) return false;
  if (s.pid == static_cast<uint32_t>(getpid())) {
    std::lock_guard<std::mutex> lock(g_live_mu);
    return LiveSessions().count(Raw(s.id)) == 0;
  }
  return !ProcessExists(s.pid);
}

Status CleanSession(meta::MetaEngine* meta, meta::SessionId id) {
  std::vector<InodeId> locked, sustained;
  FOLIO_RETURN_IF_ERROR(meta->Transact("session_clean", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(locked, t.ListLockedInodes(id));
    FOLIO_ASSIGN_OR_RETURN(sustained, t.ListSustained(id));
    return Status::OK();
  }));
  for (InodeId ino : locked) {
    FOLIO_RETURN_IF_ERROR(meta->Transact("session_clean", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::FlockRecord> flocks, t.GetFlocks(ino));
      for (const meta::FlockRecord& l : flocks) {
        if (l.session == id) FOLIO_RETURN_IF_ERROR(t.DeleteFlock(ino, id, l.owner));
      }
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::PlockRecord> plocks, t.GetPlocks(ino));
      std::set<uint64_t> owners;
      for (const meta::PlockRecord& l : plocks) {
        if (l.session == id) owners.insert(l.owner);
      }
      for (uint64_t owner : owners) FOLIO_RETURN_IF_ERROR(t.PutPlocks(ino, id, owner, {}));
      return Status::OK();
    }));
  }
  for (InodeId ino : sustained) {
    FOLIO_RETURN_IF_ERROR(meta->Transact("session_clean", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      FOLIO_RETURN_IF_ERROR(t.RemoveSustained(id, ino));
      return QueueInodeIfFree(t, ino).status();
    }));
  }
  return meta->Transact("session_clean", meta::TxnMode::kWrite,
                        [&](meta::Txn& t) -> Status { return t.DeleteSession(id); });
}

SessionKeeper::SessionKeeper(meta::MetaEngine* meta, meta::SessionId id, meta::Session record,
                             int64_t timeout_ms)
    : meta_(meta), id_(id), record_(std::move(record)), timeout_ms_(timeout_ms) {}

SessionKeeper::~SessionKeeper() {
  std::lock_guard<std::mutex> lock(g_live_mu);
  LiveSessions().erase(Raw(id_));
}

std::string SessionWhere(const meta::Session& s) {
  return "pid " + std::to_string(s.pid) + " on " + s.host + " at " +
         (s.mountpoint.empty() ? "(no mount point)" : s.mountpoint);
}

namespace {

// Whether a mount with `options` may join the live session `other` (see FsOptions::shared).
Status MayJoin(const meta::Session& other, const meta::Session& me, const std::string& meta_url,
               const meta::FormatRecord& format, const FsOptions& options) {
  if (!options.shared) {
    if (options.read_only || other.read_only) return Status::OK();
    return Status::Busy("volume '" + format.name + "' is already mounted read-write by " +
                        SessionWhere(other) + "; unmount it first (or mount with -o ro, or mount " +
                        "every mount shared)");
  }
  if (!other.shared && !other.read_only) {
    return Status::Busy("volume '" + format.name + "' is mounted read-write by " + SessionWhere(other) +
                        " as the only mount (not shared); remount it shared to mount it here "
                        "too");
  }
  if (meta_url.starts_with("sqlite:") && other.host != me.host) {
    return Status::NotSupported(
        meta_url + " is also mounted on host " + other.host + " (" + SessionWhere(other) +
        "): SQLite metadata is shared only by the mounts of one host (its locks need one "
        "kernel); use a Redis or PostgreSQL engine for mounts on several machines");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<SessionKeeper>> SessionKeeper::Register(meta::MetaEngine* meta,
                                                               const meta::FormatRecord& format,
                                                               const FsOptions& options) {
  if (options.shared && format.store_url.starts_with("dev:")) {
    return Status::NotSupported("volume '" + format.name + "': its store " + format.store_url +
                                " is a log on one device that one process writes; shared "
                                "mounts need a store several processes can write (dir:, rados:)");
  }
  FOLIO_ASSIGN_OR_RETURN(uint64_t raw, meta->AllocateIds(meta::Counter::kNextSession, 1));
  const meta::SessionId id{raw};
  meta::Session rec;
  rec.id = id;
  rec.host = HostName();
  rec.pid = static_cast<uint32_t>(getpid());
  rec.mountpoint = options.mountpoint;
  rec.version = kFsVersion;
  rec.read_only = options.read_only;
  rec.shared = options.shared;
  rec.start_ns = rec.heartbeat_ns = WallNs();
  const int64_t timeout_ms = format.session_timeout_ms;
  const std::string url = meta->url();
  Status s = meta->Transact("session_open", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::Session> all, t.ListSessions());
    for (const meta::Session& other : all) {
      if (IsDead(other, rec.start_ns, timeout_ms)) continue;
      FOLIO_RETURN_IF_ERROR(MayJoin(other, rec, url, format, options));
    }
    return t.PutSession(rec);
  });
  if (!s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    LiveSessions().insert(raw);
  }
  return std::unique_ptr<SessionKeeper>(new SessionKeeper(meta, id, std::move(rec), timeout_ms));
}

Status SessionKeeper::Heartbeat() {
  if (closed_) return Status::OK();
  record_.heartbeat_ns = WallNs();
  bool lost = false;
  FOLIO_RETURN_IF_ERROR(meta_->Transact("heartbeat", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::optional<meta::Session> cur, t.GetSession(id_));
    lost = !cur.has_value();
    return t.PutSession(record_);
  }));
  if (!lost) return Status::OK();
  lost_.fetch_add(1, std::memory_order_relaxed);
  return Status::DataLoss("session " + std::to_string(Raw(id_)) + " was cleaned by another " +
                          "mount (no heartbeat for more than " + std::to_string(timeout_ms_) +
                          " ms): the locks it held were released; registered again");
}

Result<int> SessionKeeper::CleanDead() {
  std::vector<meta::Session> all;
  FOLIO_RETURN_IF_ERROR(meta_->Transact("sessions", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(all, t.ListSessions());
    return Status::OK();
  }));
  const int64_t now = WallNs();
  int cleaned = 0;
  for (const meta::Session& s : all) {
    if (s.id == id_ || !IsDead(s, now, timeout_ms_)) continue;
    FOLIO_RETURN_IF_ERROR(CleanSession(meta_, s.id));
    ++cleaned;
  }
  return cleaned;
}

Status SessionKeeper::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status s = CleanSession(meta_, id_);
  std::lock_guard<std::mutex> lock(g_live_mu);
  LiveSessions().erase(Raw(id_));
  return s;
}

}  // namespace folio::fs
