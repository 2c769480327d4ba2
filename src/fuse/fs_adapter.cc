#include "fuse/fs_adapter.h"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/timespec.h"

namespace folio::fuse {

namespace {

fs::InodeId Core(InodeId ino) { return fs::InodeId{static_cast<uint64_t>(ino)}; }
InodeId Fuse(fs::InodeId ino) { return InodeId{fs::Raw(ino)}; }

// Who asks: the request's uid / gid and, for an unprivileged caller, its supplementary groups
// (root passes every check, so its groups are never read).
fs::Cred Caller() {
  const RequestContext& c = CallerContext();
  fs::Cred cred;
  cred.uid = c.uid;
  cred.gid = c.gid;
  cred.pid = c.pid;
  if (c.uid != 0) cred.groups = c.Groups();
  return cred;
}

bool IsStatsName(InodeId parent, std::string_view name) {
  return parent == kRootInode && name == FsAdapter::kStatsName;
}

Status StatsNameTaken(std::string_view what) {
  return Status::FromErrno(EEXIST, std::string(what) + " .stats: the name is reserved for the "
                                   "statistics file in the root of a Folio FS mount");
}

bool IsStats(InodeId ino) { return static_cast<uint64_t>(ino) == FsAdapter::kStatsIno; }

Status StatsReadOnly(std::string_view what) {
  return Status::FromErrno(EPERM, std::string(what) + " of .stats (read-only statistics)");
}

}  // namespace

NodeAttr ToNodeAttr(const fs::Attr& a) {
  NodeAttr n;
  n.ino = Fuse(a.ino());
  n.mode = a.StatMode();
  n.nlink = a.inode.nlink;
  n.uid = a.inode.uid;
  n.gid = a.inode.gid;
  n.size_bytes = a.inode.size_bytes;
  n.rdev = a.inode.rdev;
  n.blocks_512 = a.blocks_512;
  n.atime = NsToTimespec(a.inode.atime_ns);
  n.mtime = NsToTimespec(a.inode.mtime_ns);
  n.ctime = NsToTimespec(a.inode.ctime_ns);
  return n;
}

FsAdapter::FsAdapter(fs::FileSystem* fs, const FsAdapterOptions& options)
    : fs_(fs), options_(options) {}

EntryReply FsAdapter::Entry(const fs::Attr& a) const {
  EntryReply e;
  e.attr = ToNodeAttr(a);
  e.entry_timeout_s = options_.entry_timeout_s;
  e.attr_timeout_s = options_.attr_timeout_s;
  return e;
}

NodeAttr FsAdapter::StatsAttr() const {
  NodeAttr n;
  n.ino = InodeId{kStatsIno};
  n.mode = S_IFREG | 0444;
  n.nlink = 1;
  n.size_bytes = 0;  // generated at open; read with direct I/O
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  n.atime = n.mtime = n.ctime = now;
  return n;
}

std::string FsAdapter::StatsText() const {
  nlohmann::ordered_json j = fs_->StatsJson();
  if (request_stats_ != nullptr) {
    const RequestStatsSnapshot r = request_stats_->Snapshot();
    nlohmann::ordered_json ops = nlohmann::ordered_json::object();
    for (size_t i = 0; i < kNumFuseOps; ++i) {
      if (r.requests[i] == 0) continue;
      ops[std::string(FuseOpName(static_cast<FuseOp>(i)))] = {{"requests", r.requests[i]},
                                                               {"errors", r.errors[i]}};
    }
    j["fuse_requests"] = std::move(ops);
  }
  return j.dump(2) + "\n";
}

Result<EntryReply> FsAdapter::Lookup(InodeId parent, std::string_view name) {
  if (IsStatsName(parent, name)) {
    EntryReply e;
    e.attr = StatsAttr();
    e.entry_timeout_s = options_.entry_timeout_s;
    e.attr_timeout_s = 0;
    return e;
  }
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->Lookup(Caller(), Core(parent), name));
  return Entry(a);
}

Result<NodeAttr> FsAdapter::GetAttr(InodeId ino) {
  if (IsStats(ino)) return StatsAttr();
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->GetAttr(Core(ino)));
  return ToNodeAttr(a);
}

Result<NodeAttr> FsAdapter::SetAttr(InodeId ino, const SetAttrRequest& r) {
  if (IsStats(ino)) return StatsReadOnly("setattr");
  fs::SetAttrRequest q;
  q.set_mode = r.has_mode;
  q.mode = r.mode & 07777;
  q.set_uid = r.has_uid;
  q.uid = r.uid;
  q.set_gid = r.has_gid;
  q.gid = r.gid;
  q.set_size = r.has_size;
  q.size_bytes = r.size_bytes;
  if (r.has_atime) {
    q.atime = r.atime_now ? fs::TimeSet::kNow : fs::TimeSet::kValue;
    q.atime_ns = TimespecToNs(r.atime);
  }
  if (r.has_mtime) {
    q.mtime = r.mtime_now ? fs::TimeSet::kNow : fs::TimeSet::kValue;
    q.mtime_ns = TimespecToNs(r.mtime);
  }
  q.fh = r.has_fh ? r.fh : 0;
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->SetAttr(Caller(), Core(ino), q));
  return ToNodeAttr(a);
}

void FsAdapter::Init(const ConnectionInfo& conn) {
  fs_->SetKernelWritebackCache(conn.writeback_cache);
}

Result<OpenReply> FsAdapter::Open(InodeId ino, int flags) {
  OpenReply o;
  if (IsStats(ino)) {
    if ((flags & O_ACCMODE) != O_RDONLY) return StatsReadOnly("open for writing");
    std::lock_guard<std::mutex> lock(stats_mu_);
    o.fh = next_stats_fh_++;
    stats_handles_[o.fh] = StatsText();
    o.direct_io = true;  // its size is 0 in getattr; reads must come here
    return o;
  }
  FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened op, fs_->Open(Caller(), Core(ino), flags));
  o.fh = op.fh;
  o.keep_cache = options_.keep_cache && op.keep_cache;
  return o;
}

Result<size_t> FsAdapter::Read(InodeId ino, uint64_t fh, uint64_t pos, std::span<char> out) {
  if (IsStats(ino)) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    auto it = stats_handles_.find(fh);
    if (it == stats_handles_.end()) return Status::FromErrno(EBADF, ".stats handle");
    const std::string& text = it->second;
    if (pos >= text.size()) return size_t{0};
    const size_t n = std::min(out.size(), static_cast<size_t>(text.size() - pos));
    std::memcpy(out.data(), text.data() + pos, n);
    return n;
  }
  return fs_->Read(fh, pos, out);
}

Result<size_t> FsAdapter::Write(InodeId ino, uint64_t fh, uint64_t pos,
                                std::span<const char> in) {
  if (IsStats(ino)) return StatsReadOnly("write");
  if (CallerContext().writepage) return fs_->WriteCached(fh, pos, in);
  return fs_->Write(fh, pos, in);
}

Status FsAdapter::Flush(InodeId ino, uint64_t fh) {
  if (IsStats(ino)) return Status::OK();
  return fs_->Flush(fh, CallerContext().lock_owner);
}

Status FsAdapter::Release(InodeId ino, uint64_t fh) {
  if (IsStats(ino)) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_handles_.erase(fh);
    return Status::OK();
  }
  return fs_->Release(fh);
}

Status FsAdapter::Fsync(InodeId ino, uint64_t fh, SyncKind kind) {
  // The kernel sends no syncfs to this mount (sync(1) does not reach it): an fsync of .stats
  // (`sync MOUNT/.stats`) is the mount-wide sync, every file's data committed and durable.
  if (IsStats(ino)) return fs_->SyncAll();
  return fs_->Fsync(fh, kind == SyncKind::kData);
}

Status FsAdapter::FsyncDir(InodeId /*ino*/, uint64_t /*fh*/, SyncKind /*kind*/) {
  return fs_->SyncMetadata();
}

Status FsAdapter::Fallocate(InodeId ino, uint64_t fh, int mode, uint64_t pos, uint64_t len) {
  if (IsStats(ino)) return StatsReadOnly("fallocate");
  return fs_->Fallocate(fh, mode, pos, len);
}

Result<FsStatfs> FsAdapter::StatFs() {
  FOLIO_ASSIGN_OR_RETURN(fs::StatFs s, fs_->StatFs());
  FsStatfs f;
  f.block_bytes = s.block_bytes;
  f.blocks = s.blocks;
  f.blocks_free = s.blocks_free;
  f.files = s.files;
  f.files_free = s.files_free;
  f.name_max_bytes = s.name_max_bytes;
  return f;
}

Result<EntryReply> FsAdapter::Mknod(InodeId parent, std::string_view name, mode_t mode,
                                    dev_t rdev) {
  if (IsStatsName(parent, name)) return StatsNameTaken("mknod");
  fs::FileType type;
  if (!fs::FileTypeOfMode(mode, &type)) {
    return Status::FromErrno(EINVAL, "mknod " + std::string(name) + ": file type bits " +
                                         std::to_string(mode & S_IFMT));
  }
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a,
                         fs_->Mknod(Caller(), Core(parent), name, type, mode & 07777, rdev));
  return Entry(a);
}

Result<EntryReply> FsAdapter::Mkdir(InodeId parent, std::string_view name, mode_t mode) {
  if (IsStatsName(parent, name)) return StatsNameTaken("mkdir");
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->Mkdir(Caller(), Core(parent), name, mode & 07777));
  return Entry(a);
}

Status FsAdapter::Unlink(InodeId parent, std::string_view name) {
  if (IsStatsName(parent, name)) return StatsReadOnly("unlink");
  return fs_->Unlink(Caller(), Core(parent), name);
}

Status FsAdapter::Rmdir(InodeId parent, std::string_view name) {
  if (IsStatsName(parent, name)) return Status::FromErrno(ENOTDIR, "rmdir .stats");
  return fs_->Rmdir(Caller(), Core(parent), name);
}

Result<EntryReply> FsAdapter::Symlink(std::string_view target, InodeId parent,
                                      std::string_view name) {
  if (IsStatsName(parent, name)) return StatsNameTaken("symlink");
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->Symlink(Caller(), Core(parent), name, target));
  return Entry(a);
}

Result<std::string> FsAdapter::ReadLink(InodeId ino) {
  if (IsStats(ino)) return Status::FromErrno(EINVAL, "readlink of .stats");
  return fs_->ReadLink(Core(ino));
}

Status FsAdapter::Rename(InodeId parent, std::string_view name, InodeId new_parent,
                         std::string_view new_name, unsigned flags) {
  if (IsStatsName(parent, name)) return StatsReadOnly("rename");
  if (IsStatsName(new_parent, new_name)) return StatsNameTaken("rename to");
  return fs_->Rename(Caller(), Core(parent), name, Core(new_parent), new_name, flags);
}

Result<EntryReply> FsAdapter::Link(InodeId ino, InodeId new_parent, std::string_view new_name) {
  if (IsStats(ino)) return StatsReadOnly("link");
  if (IsStatsName(new_parent, new_name)) return StatsNameTaken("link");
  FOLIO_ASSIGN_OR_RETURN(fs::Attr a, fs_->Link(Caller(), Core(ino), Core(new_parent), new_name));
  return Entry(a);
}

Result<Filesystem::CreateReply> FsAdapter::Create(InodeId parent, std::string_view name,
                                                  mode_t mode, int flags) {
  if (IsStatsName(parent, name)) return StatsNameTaken("create");
  FOLIO_ASSIGN_OR_RETURN(fs::FileSystem::Opened op,
                         fs_->Create(Caller(), Core(parent), name, mode & 07777, flags));
  CreateReply c;
  c.entry = Entry(op.attr);
  c.open.fh = op.fh;
  c.open.keep_cache = options_.keep_cache && op.keep_cache;
  return c;
}

Result<uint64_t> FsAdapter::OpenDir(InodeId ino, int /*flags*/) {
  return fs_->OpenDir(Caller(), Core(ino));
}

Result<std::vector<DirPageEntry>> FsAdapter::ReadDirPage(InodeId /*ino*/, uint64_t fh,
                                                         uint64_t offset, size_t max_entries,
                                                         bool plus) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<fs::DirEntryOut> page,
                         fs_->ReadDir(fh, offset, max_entries, plus));
  std::vector<DirPageEntry> out;
  out.reserve(page.size());
  for (fs::DirEntryOut& e : page) {
    DirPageEntry d;
    d.name = std::move(e.name);
    d.ino = Fuse(e.ino);
    d.mode = fs::StatTypeBits(e.type);
    d.offset = e.offset;
    if (plus) d.entry = Entry(e.attr);
    out.push_back(std::move(d));
  }
  return out;
}

Status FsAdapter::ReleaseDir(InodeId /*ino*/, uint64_t fh) { return fs_->ReleaseDir(fh); }

Result<std::string> FsAdapter::GetXattr(InodeId ino, std::string_view name) {
  if (IsStats(ino)) return Status::FromErrno(ENODATA, std::string(name));
  return fs_->GetXattr(Caller(), Core(ino), name);
}

Status FsAdapter::SetXattr(InodeId ino, std::string_view name, std::string_view value,
                           int flags) {
  if (IsStats(ino)) return StatsReadOnly("setxattr");
  return fs_->SetXattr(Caller(), Core(ino), name, value, flags);
}

Result<std::vector<std::string>> FsAdapter::ListXattr(InodeId ino) {
  if (IsStats(ino)) return std::vector<std::string>{};
  return fs_->ListXattr(Caller(), Core(ino));
}

Status FsAdapter::RemoveXattr(InodeId ino, std::string_view name) {
  if (IsStats(ino)) return StatsReadOnly("removexattr");
  return fs_->RemoveXattr(Caller(), Core(ino), name);
}

Status FsAdapter::Access(InodeId ino, int mask) {
  if (IsStats(ino)) {
    return (mask & (W_OK | X_OK)) ? Status::FromErrno(EACCES, "access .stats") : Status::OK();
  }
  return fs_->Access(Caller(), Core(ino), mask);
}

Status FsAdapter::Flock(InodeId ino, uint64_t fh, int op) {
  if (IsStats(ino)) return Status::FromErrno(ENOLCK, "flock .stats");
  const int kind = op & (LOCK_SH | LOCK_EX | LOCK_UN);
  const meta::LockType type = kind == LOCK_SH   ? meta::LockType::kRead
                              : kind == LOCK_EX ? meta::LockType::kWrite
                                                : meta::LockType::kUnlock;
  const RequestContext& c = CallerContext();
  return fs_->Flock(fh, c.lock_owner, type, (op & LOCK_NB) == 0, [&c] { return c.Interrupted(); });
}

namespace {

fs::PosixLock ToPosix(const FileLock& l) {
  fs::PosixLock p;
  p.type = l.type == F_RDLCK   ? meta::LockType::kRead
           : l.type == F_WRLCK ? meta::LockType::kWrite
                               : meta::LockType::kUnlock;
  p.start = l.start;
  p.end = l.end;
  p.pid = l.pid;
  return p;
}

}  // namespace

Result<FileLock> FsAdapter::GetLk(InodeId ino, uint64_t fh, const FileLock& lock) {
  if (IsStats(ino)) return Status::FromErrno(ENOLCK, "lock .stats");
  FOLIO_ASSIGN_OR_RETURN(fs::PosixLock got,
                         fs_->GetLk(fh, CallerContext().lock_owner, ToPosix(lock)));
  FileLock out;
  out.type = got.type == meta::LockType::kRead    ? F_RDLCK
             : got.type == meta::LockType::kWrite ? F_WRLCK
                                                  : F_UNLCK;
  out.start = got.start;
  out.end = got.end;
  out.pid = got.pid;
  return out;
}

Status FsAdapter::SetLk(InodeId ino, uint64_t fh, const FileLock& lock, bool wait) {
  if (IsStats(ino)) return Status::FromErrno(ENOLCK, "lock .stats");
  const RequestContext& c = CallerContext();
  return fs_->SetLk(fh, c.lock_owner, ToPosix(lock), wait, [&c] { return c.Interrupted(); });
}

Result<uint64_t> FsAdapter::Lseek(InodeId ino, uint64_t fh, uint64_t pos, int whence) {
  if (IsStats(ino) || (whence != SEEK_DATA && whence != SEEK_HOLE)) {
    return Status::FromErrno(EINVAL, "lseek whence " + std::to_string(whence));
  }
  return fs_->Lseek(fh, pos, whence == SEEK_DATA ? fs::Whence::kData : fs::Whence::kHole);
}

Result<uint64_t> FsAdapter::CopyFileRange(InodeId ino_in, uint64_t fh_in, uint64_t pos_in,
                                          InodeId ino_out, uint64_t fh_out, uint64_t pos_out,
                                          uint64_t len) {
  if (IsStats(ino_in) || IsStats(ino_out)) {
    return Status::FromErrno(EXDEV, "copy_file_range with .stats");  // the kernel copies
  }
  return fs_->CopyFileRange(fh_in, pos_in, fh_out, pos_out, len);
}

}  // namespace folio::fuse
