// FileSystem: flock(2) and fcntl(2) locks, kept in the metadata (each record names the session
// and the kernel's lock owner), so locks of another mount conflict and a dead session's locks
// are removed with it (session.cc).
//
// A blocking request (LOCK_EX without LOCK_NB, F_SETLKW) retries its transaction with a
// growing pause (1 ms .. 100 ms) until the lock is granted or the caller is interrupted
// (EINTR). There is no deadlock detection (EDEADLK is never returned).
#include <chrono>
#include <thread>

#include "base/may_block.h"
#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/lock_ranges.h"
#include "fs/session.h"

namespace folio::fs {

namespace {

// Runs attempt() until it is not EAGAIN, or once when !wait.
Status RetryLock(bool wait, const std::function<bool()>& interrupted,
                 const std::function<Status()>& attempt) {
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    Status s = attempt();
    if (!wait || s.ToErrno() != EAGAIN) return s;
    if (interrupted && interrupted()) return Errno(EINTR, "lock wait interrupted");
    MayBlock();  // the holder's unlock may be the next request
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

}  // namespace

Status FileSystem::Flock(uint64_t fh, uint64_t owner, meta::LockType type, bool wait,
                         const std::function<bool()>& interrupted) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f,
                         type == meta::LockType::kUnlock ? HandleOf(fh) : IoHandleOf(fh));
  const meta::SessionId me = session_->id();
  const InodeId ino = f->ino;
  Status s = RetryLock(wait, interrupted, [&]() -> Status {
    return meta_->Transact("flock", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      if (type == meta::LockType::kUnlock) return t.DeleteFlock(ino, me, owner);
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::FlockRecord> locks, t.GetFlocks(ino));
      for (const meta::FlockRecord& l : locks) {
        if (l.session == me && l.owner == owner) continue;
        if (type == meta::LockType::kWrite || l.type == meta::LockType::kWrite) {
          return Errno(EAGAIN, "flock of " + InodeText(ino) + " held by session " +
                                   std::to_string(Raw(l.session)));
        }
      }
      return t.PutFlock(meta::FlockRecord{ino, me, owner, type});
    });
  });
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(f->mu);
    f->took_flock = type != meta::LockType::kUnlock;
    f->flock_owner = owner;
    if (f->took_flock) f->held_locks.store(true, std::memory_order_release);
  }
  return s;
}

Result<PosixLock> FileSystem::GetLk(uint64_t fh, uint64_t owner, const PosixLock& lock) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, HandleOf(fh));
  if (lock.start > lock.end) return Errno(EINVAL, "lock range");
  const meta::SessionId me = session_->id();
  PosixLock out;
  out.type = meta::LockType::kUnlock;
  Status s = meta_->Transact("getlk", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::PlockRecord> all, t.GetPlocks(f->ino));
    std::optional<meta::PlockRecord> c = FindConflict(all, me, owner, lock.type, lock.start, lock.end);
    if (c) out = PosixLock{c->type, c->start, c->end, c->pid};
    return Status::OK();
  });
  if (!s.ok()) return s;
  return out;
}

Status FileSystem::SetLk(uint64_t fh, uint64_t owner, const PosixLock& lock, bool wait,
                         const std::function<bool()>& interrupted) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, lock.type == meta::LockType::kUnlock
                                                          ? HandleOf(fh)
                                                          : IoHandleOf(fh));
  if (lock.start > lock.end) return Errno(EINVAL, "lock range");
  if (lock.type == meta::LockType::kRead && !f->readable()) return Errno(EBADF, "read lock on a write-only handle");
  if (lock.type == meta::LockType::kWrite && !f->writable()) return Errno(EBADF, "write lock on a read-only handle");
  const meta::SessionId me = session_->id();
  const InodeId ino = f->ino;
  Status s = RetryLock(wait, interrupted, [&]() -> Status {
    return meta_->Transact("setlk", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
      FOLIO_ASSIGN_OR_RETURN(std::vector<meta::PlockRecord> all, t.GetPlocks(ino));
      if (lock.type != meta::LockType::kUnlock) {
        std::optional<meta::PlockRecord> c = FindConflict(all, me, owner, lock.type, lock.start, lock.end);
        if (c) return Errno(EAGAIN, "lock of " + InodeText(ino) + " held by pid " + std::to_string(c->pid));
      }
      std::vector<meta::PlockRecord> mine;
      for (const meta::PlockRecord& r : all) {
        if (r.session == me && r.owner == owner) mine.push_back(r);
      }
      if (mine.empty() && lock.type == meta::LockType::kUnlock) return Status::OK();
      std::vector<meta::PlockRecord> next = ApplyLockRange(mine, lock.type, lock.start, lock.end, lock.pid);
      for (meta::PlockRecord& r : next) {
        r.ino = ino;
        r.session = me;
        r.owner = owner;
      }
      return t.PutPlocks(ino, me, owner, next);
    });
  });
  if (s.ok() && lock.type != meta::LockType::kUnlock) {
    f->data->NoteLocks();
    f->held_locks.store(true, std::memory_order_release);
  }
  return s;
}

Status FileSystem::ReleasePosixLocks(const OpenFile& f, uint64_t owner) {
  if (!f.data->has_locks()) return Status::OK();
  const meta::SessionId me = session_->id();
  return meta_->Transact("unlock", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(std::vector<meta::PlockRecord> all, t.GetPlocks(f.ino));
    for (const meta::PlockRecord& r : all) {
      if (r.session == me && r.owner == owner) return t.PutPlocks(f.ino, me, owner, {});
    }
    return Status::OK();
  });
}

Status FileSystem::ReleaseFlock(OpenFile& f) {
  uint64_t owner;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    if (!f.took_flock) return Status::OK();
    f.took_flock = false;
    owner = f.flock_owner;
  }
  const meta::SessionId me = session_->id();
  return meta_->Transact("unlock", meta::TxnMode::kWrite, [&](meta::Txn& t) -> Status {
    return t.DeleteFlock(f.ino, me, owner);
  });
}

}  // namespace folio::fs
