// FileSystem: open files (open, create, read, write, close, fsync, fallocate, lseek,
// copy_file_range). The data itself is FileData's (file_data.h).
#include <fcntl.h>

#include <algorithm>
#include <vector>

#include "base/clock.h"
#include "fs/data_path.h"
#include "fs/file_data.h"
#include "fs/file_system.h"
#include "fs/fs_internal.h"
#include "fs/perm.h"
#include "fs/stats_counters.h"

namespace folio::fs {

namespace {

// The read / write access open(2) flags ask for, as kMay* bits.
int AccessOf(int flags) {
  switch (flags & O_ACCMODE) {
    case O_RDONLY: return kMayRead;
    case O_WRONLY: return kMayWrite;
    default: return kMayRead | kMayWrite;
  }
}

constexpr uint64_t kCopyBufferBytes = 1ull << 20;

}  // namespace

Result<std::shared_ptr<OpenFile>> FileSystem::HandleOf(uint64_t fh) const {
  std::lock_guard<std::mutex> lock(handles_mu_);
  auto it = files_.find(fh);
  if (it == files_.end()) return Errno(EBADF, "file handle " + std::to_string(fh));
  return it->second;
}

Result<std::shared_ptr<OpenFile>> FileSystem::IoHandleOf(uint64_t fh) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, HandleOf(fh));
  if (f->held_locks.load(std::memory_order_acquire) && !f->locks_lost.load()) {
    const uint64_t stale_ns = static_cast<uint64_t>(format_.session_timeout_ms) * 1000000 / 2;
    if (MonotonicNowNs() - last_beat_ns_.load() > stale_ns) (void)BeatSession();
  }
  if (f->locks_lost.load(std::memory_order_acquire)) {
    return Errno(EIO, "file handle " + std::to_string(fh) + " of " + InodeText(f->ino) +
                          ": the locks taken through it were lost (this mount's session was "
                          "cleaned by another mount while it was paused past the session "
                          "timeout); close and reopen the file");
  }
  return f;
}

Result<FileSystem::Opened> FileSystem::OpenInode(const Cred& cred, const meta::Inode& inode,
                                                 int flags, bool check_access,
                                                 std::optional<FolioPolicy> known_policy,
                                                 const std::vector<uint32_t>* chunks) {
  if (inode.type == FileType::kDirectory) return Errno(EISDIR, InodeText(inode.ino));
  if (inode.type != FileType::kRegular) return Errno(EINVAL, InodeText(inode.ino) + ": not a regular file");
  const bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  if (write) FOLIO_RETURN_IF_ERROR(CheckWritable());
  if (check_access) FOLIO_RETURN_IF_ERROR(CheckAccess(inode, cred, AccessOf(flags) | (flags & O_TRUNC ? kMayWrite : 0)));
  if (write && (inode.flags & meta::kInodeFlagImmutable) != 0) return Errno(EPERM, InodeText(inode.ino) + " is immutable");
  if (write && (inode.flags & meta::kInodeFlagAppend) != 0 && ((flags & O_APPEND) == 0 || (flags & O_TRUNC) != 0)) {
    return Errno(EPERM, InodeText(inode.ino) + " is append-only");
  }
  FolioPolicy policy;
  if (known_policy) {
    policy = *known_policy;
  } else {
    FOLIO_ASSIGN_OR_RETURN(policy, PolicyOf(inode.ino));
  }
  bool keep_cache = false;
  meta::Inode now = inode;
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<FileData> data,
                         data_->Open(&now, policy, &keep_cache, chunks));
  if ((flags & O_TRUNC) != 0 && (flags & O_ACCMODE) != O_RDONLY) {
    Status s = data->Truncate(0, cred);
    Result<Attr> after = s.ok() ? GetAttr(inode.ino) : Result<Attr>(s);
    if (!after.ok()) {
      (void)data_->Close(data);
      return after.status();
    }
    now = after->inode;
  }
  auto f = std::make_shared<OpenFile>();
  f->ino = inode.ino;
  f->flags = flags;
  f->kernel_cache = kernel_writeback_cache_;
  f->cred = cred;
  f->data = std::move(data);
  Opened out;
  f->data->Overlay(&now);
  out.attr = AttrOf(now);
  out.keep_cache = keep_cache;
  std::lock_guard<std::mutex> lock(handles_mu_);
  out.fh = next_fh_++;
  files_[out.fh] = std::move(f);
  return out;
}

Result<FileSystem::Opened> FileSystem::Open(const Cred& cred, InodeId ino, int flags) {
  meta::Inode inode;
  // A file this mount has no data of yet needs its policy xattr and its chunk list (for the
  // FileData the open makes): read in the same transaction, one snapshot with the inode.
  const bool cached = data_->Find(ino) != nullptr;
  std::optional<std::string> policy;
  std::vector<uint32_t> chunks;
  FOLIO_RETURN_IF_ERROR(meta_->Transact("open", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(inode, GetInodeOrEnoent(t, ino));
    if (!cached && inode.type == FileType::kRegular) {
      FOLIO_ASSIGN_OR_RETURN(policy, t.GetXattr(ino, kPolicyXattr));
      FOLIO_ASSIGN_OR_RETURN(chunks, t.ListChunks(ino));
    }
    return Status::OK();
  }));
  if (inode.nlink == 0 && !data_->Find(ino)) return Errno(ENOENT, InodeText(ino) + " (unlinked)");
  if (cached) return OpenInode(cred, inode, flags, /*check_access=*/true, std::nullopt);
  return OpenInode(cred, inode, flags, /*check_access=*/true, PolicyFromXattr(policy), &chunks);
}

Result<FileSystem::Opened> FileSystem::Create(const Cred& cred, InodeId parent,
                                              std::string_view name, uint32_t mode, int flags) {
  meta::Inode proto;
  proto.type = FileType::kRegular;
  proto.mode = mode & 07777;
  bool existed = false;
  std::optional<std::string> policy;
  FOLIO_ASSIGN_OR_RETURN(Attr a, CreateNode(cred, parent, name, proto, {}, (flags & O_EXCL) != 0, &existed, &policy));
  // The creator may open the new file as asked whatever its mode says (open(2) with O_CREAT);
  // a new file's policy is the one it inherited in CreateNode's transaction.
  if (existed) return OpenInode(cred, a.inode, flags, /*check_access=*/true, std::nullopt);
  const std::vector<uint32_t> no_chunks;  // a new file has no data yet
  return OpenInode(cred, a.inode, flags & ~O_TRUNC, /*check_access=*/false,
                   PolicyFromXattr(policy), &no_chunks);
}

Result<size_t> FileSystem::Read(uint64_t fh, uint64_t pos, std::span<char> out) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, IoHandleOf(fh));
  if (!f->readable()) return Errno(EBADF, "read on a write-only handle");
  FOLIO_ASSIGN_OR_RETURN(size_t n, f->data->Read(pos, out));
  FsCounters::Add(counters_->read_bytes, n);
  return n;
}

Result<size_t> FileSystem::Write(uint64_t fh, uint64_t pos, std::span<const char> in) {
  return WriteAt(fh, pos, in, /*cached=*/false);
}

Result<size_t> FileSystem::WriteCached(uint64_t fh, uint64_t pos, std::span<const char> in) {
  return WriteAt(fh, pos, in, /*cached=*/true);
}

Result<size_t> FileSystem::WriteAt(uint64_t fh, uint64_t pos, std::span<const char> in,
                                   bool cached) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, IoHandleOf(fh));
  if (!f->writable()) return Errno(EBADF, "write on a read-only handle");
  const bool append = (f->flags & O_APPEND) != 0 && !f->kernel_cache && !cached;
  FOLIO_ASSIGN_OR_RETURN(size_t n, f->data->Write(pos, in, append, f->cred));
  FsCounters::Add(counters_->write_bytes, n);
  return n;
}

Status FileSystem::Flush(uint64_t fh, uint64_t lock_owner) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, HandleOf(fh));
  Status locks = ReleasePosixLocks(*f, lock_owner);
  // Shared mounts: close-to-open. What this mount wrote is committed before close(2) returns,
  // so an open on another mount after it sees the data (not made durable: that is fsync's).
  if (options_.shared && f->writable()) {
    Status s = f->data->Sync(SyncMode::kDurable);
    if (!s.ok()) return s;
  }
  return locks;
}

Status FileSystem::Release(uint64_t fh) {
  std::shared_ptr<OpenFile> f;
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    auto it = files_.find(fh);
    if (it == files_.end()) return Errno(EBADF, "file handle " + std::to_string(fh));
    f = std::move(it->second);
    files_.erase(it);
  }
  Status s = ReleaseFlock(*f);
  Status c = data_->Close(f->data);
  return s.ok() ? c : s;
}

Status FileSystem::Fsync(uint64_t fh, bool datasync) {
  (void)datasync;  // the data commit carries the attributes too: both are the same here
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, IoHandleOf(fh));
  FOLIO_RETURN_IF_ERROR(f->data->Sync(SyncMode::kDurable));
  // The file's creation, renames and attributes, and everything committed before them.
  return meta_->Sync();
}

Status FileSystem::Fallocate(uint64_t fh, int mode, uint64_t pos, uint64_t len) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, IoHandleOf(fh));
  if (!f->writable()) return Errno(EBADF, "fallocate on a read-only handle");
  return f->data->Fallocate(mode, pos, len, f->cred);
}

Result<uint64_t> FileSystem::Lseek(uint64_t fh, uint64_t pos, Whence whence) {
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, HandleOf(fh));
  return f->data->Seek(pos, whence);
}

Result<uint64_t> FileSystem::CopyFileRange(uint64_t fh_in, uint64_t pos_in, uint64_t fh_out,
                                           uint64_t pos_out, uint64_t len) {
  FOLIO_RETURN_IF_ERROR(CheckWritable());
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> in, IoHandleOf(fh_in));
  FOLIO_ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> out, IoHandleOf(fh_out));
  if (!in->readable() || !out->writable()) return Errno(EBADF, "copy_file_range handles");
  if ((out->flags & O_APPEND) != 0) return Errno(EBADF, "copy_file_range to an O_APPEND handle");
  if (in->ino == out->ino && pos_in < pos_out + len && pos_out < pos_in + len) {
    return Errno(EINVAL, "copy_file_range within overlapping ranges of one file");
  }
  const uint64_t size = in->data->size();
  if (pos_in >= size) return uint64_t{0};
  len = std::min(len, size - pos_in);
  std::vector<char> buf(std::min(len, kCopyBufferBytes));
  uint64_t done = 0;
  while (done < len) {
    const uint64_t n = std::min<uint64_t>(buf.size(), len - done);
    FOLIO_ASSIGN_OR_RETURN(size_t got, in->data->Read(pos_in + done, {buf.data(), n}));
    if (got == 0) break;
    FOLIO_ASSIGN_OR_RETURN(size_t put, out->data->Write(pos_out + done, {buf.data(), got}, false, out->cred));
    done += put;
    if (put < got) break;
  }
  return done;
}

}  // namespace folio::fs
