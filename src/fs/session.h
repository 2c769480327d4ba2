// SessionKeeper: this mount's record in the session table: registration (refusing a second
// read-write mount when asked), the heartbeat, and the cleanup of dead sessions (their locks
// released, the files they kept open after unlink freed) and of this one at unmount.
//
// A session is dead when its heartbeat is older than the volume's session timeout, or at once
// when it was registered on this host by a process that no longer exists (a mount killed with
// kill -9 can be remounted right away), or by this process but is not one of its live mounts
// (a test's simulated crash).
//
// Thread safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fs/file_system.h"
#include "meta/meta_engine.h"

namespace folio::fs {

inline constexpr char kFsVersion[] = "0.1.0";

class SessionKeeper {
 public:
  // Registers a session. Errors: Busy when another live session has the volume mounted
  // read-write and not both are options.shared (naming its host, pid and mount point);
  // NotSupported for a shared mount of a dev: store, or of a SQLite volume a live session of
  // another host has mounted; engine errors.
  static Result<std::unique_ptr<SessionKeeper>> Register(meta::MetaEngine* meta,
                                                         const meta::FormatRecord& format,
                                                         const FsOptions& options);
  ~SessionKeeper();

  meta::SessionId id() const { return id_; }
  // Refreshes the record. DataLoss when the record was gone: another mount found this one dead
  // (a pause longer than the session timeout) and cleaned it, so its locks and records of open
  // files were dropped; the record is written again and lost_count() counts it.
  Status Heartbeat();
  uint64_t lost_count() const { return lost_.load(std::memory_order_relaxed); }
  // Cleans every dead session but this one. Returns how many were cleaned.
  Result<int> CleanDead();
  // Removes this session's locks and sustained files and its record (unmount). After this,
  // the keeper does nothing.
  Status Close();

  // Whether `s` is dead at now_ns (see the header comment).
  static bool IsDead(const meta::Session& s, int64_t now_ns, int64_t timeout_ms);

 private:
  SessionKeeper(meta::MetaEngine* meta, meta::SessionId id, meta::Session record,
                int64_t timeout_ms);

  meta::MetaEngine* const meta_;
  const meta::SessionId id_;
  meta::Session record_;
  const int64_t timeout_ms_;
  bool closed_ = false;
  std::atomic<uint64_t> lost_{0};
};

// "pid N on HOST at MOUNTPOINT": where a session's mount runs, for messages.
std::string SessionWhere(const meta::Session& s);

// Removes a session's locks, releases the files it sustained (queueing the deletion of those
// with no link and no other holder) and deletes its record.
Status CleanSession(meta::MetaEngine* meta, meta::SessionId id);

}  // namespace folio::fs
