#include "fuse/export_fs.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/timespec.h"
#include "base/units.h"
#include "folio/arena.h"
#include "fuse/log.h"

namespace folio::fuse {

namespace {

constexpr uint64_t kFirstVolumeIno = 4;
constexpr double kTimeoutS = 1.0;

timespec RealNow() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

Status Errno(int err, std::string_view what) { return Status::FromErrno(err, what); }

}  // namespace

ExportFs::ExportFs(PageCache* cache, std::vector<ExportVolume> volumes,
                   const ExportOptions& options)
    : cache_(cache),
      options_(options),
      start_time_(RealNow()),
      start_ns_(MonotonicNowNs()) {
  for (ExportVolume& v : volumes) {
    FOLIO_CHECK(v.mapping != nullptr);
    FOLIO_CHECK(!v.name.empty() && v.name != "." && v.name != ".." && v.name != kStatsName &&
                v.name != kControlName);
    FOLIO_CHECK(v.name.find('/') == std::string::npos);
    for (const auto& other : volumes_) FOLIO_CHECK(other->volume.name != v.name);
    auto node = std::make_unique<VolumeNode>();
    node->volume = std::move(v);
    node->mtime_ns.store(TimespecToNs(start_time_), std::memory_order_relaxed);
    volumes_.push_back(std::move(node));
  }
}

ExportFs::~ExportFs() = default;

ExportFs::VolumeNode* ExportFs::VolumeOf(InodeId ino) const {
  const uint64_t i = static_cast<uint64_t>(ino);
  if (i < kFirstVolumeIno || i - kFirstVolumeIno >= volumes_.size()) return nullptr;
  return volumes_[i - kFirstVolumeIno].get();
}

NodeAttr ExportFs::AttrOf(InodeId ino) const {
  NodeAttr a;
  a.ino = ino;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.atime = a.mtime = a.ctime = start_time_;
  if (ino == kRootInode) {
    a.mode = S_IFDIR | 0555;
    a.nlink = 2;
  } else if (ino == kStatsInode) {
    a.mode = S_IFREG | 0444;
    a.atime = a.mtime = RealNow();  // always fresh
  } else if (ino == kControlInode) {
    a.mode = S_IFREG | 0200;
  } else {
    const VolumeNode* v = VolumeOf(ino);
    FOLIO_CHECK(v != nullptr);
    a.mode = S_IFREG | 0644;
    a.size_bytes = v->volume.mapping->size();
    a.blocks_512 = a.size_bytes / 512;
    a.mtime = a.ctime = NsToTimespec(v->mtime_ns.load(std::memory_order_relaxed));
  }
  return a;
}

Result<EntryReply> ExportFs::Lookup(InodeId parent, std::string_view name) {
  if (parent != kRootInode) {
    if (parent == kStatsInode || parent == kControlInode || VolumeOf(parent) != nullptr) {
      return Errno(ENOTDIR, name);
    }
    return Errno(ENOENT, name);
  }
  EntryReply e;
  e.entry_timeout_s = kTimeoutS;
  e.attr_timeout_s = kTimeoutS;
  if (name == kStatsName) {
    e.attr = AttrOf(kStatsInode);
    return e;
  }
  if (name == kControlName && options_.control) {
    e.attr = AttrOf(kControlInode);
    return e;
  }
  for (size_t i = 0; i < volumes_.size(); ++i) {
    if (volumes_[i]->volume.name == name) {
      e.attr = AttrOf(InodeId{kFirstVolumeIno + i});
      return e;
    }
  }
  return Errno(ENOENT, name);
}

Result<NodeAttr> ExportFs::GetAttr(InodeId ino) {
  const bool control = ino == kControlInode && options_.control;
  if (ino != kRootInode && ino != kStatsInode && !control && VolumeOf(ino) == nullptr) {
    return Errno(ENOENT, "getattr");
  }
  return AttrOf(ino);
}

Result<NodeAttr> ExportFs::SetAttr(InodeId ino, const SetAttrRequest& request) {
  FOLIO_ASSIGN_OR_RETURN(NodeAttr a, GetAttr(ino));
  if (request.has_mode || request.has_owner) return Errno(EPERM, "chmod/chown");
  if (request.has_size && ino == kControlInode && request.size_bytes == 0) return a;
  if (request.has_size) {
    // A volume's size is its device's: only a truncate to the current size succeeds.
    if (VolumeOf(ino) == nullptr) return Errno(EPERM, "truncate");
    if (request.size_bytes != a.size_bytes) return Errno(EINVAL, "truncate of a volume");
  }
  if (request.has_times) {
    if (VolumeOf(ino) != nullptr) {
      VolumeOf(ino)->mtime_ns.store(TimespecToNs(RealNow()), std::memory_order_relaxed);
    }
    return AttrOf(ino);
  }
  return a;
}

Result<OpenReply> ExportFs::Open(InodeId ino, int flags) {
  if (ino == kRootInode) return Errno(EISDIR, "open");
  OpenReply r;
  if (ino == kStatsInode) {
    if ((flags & O_ACCMODE) != O_RDONLY) return Errno(EACCES, ".stats is read-only");
    std::string text = StatsJson().dump(2) + "\n";
    std::lock_guard<std::mutex> lock(stats_mu_);
    r.fh = next_stats_fh_++;
    stats_handles_.emplace(r.fh, std::move(text));
    r.direct_io = true;  // its size is 0: only direct I/O lets reads past it
    return r;
  }
  if (ino == kControlInode && options_.control) {
    if ((flags & O_ACCMODE) == O_RDONLY) return Errno(EACCES, ".control is write-only");
    r.direct_io = true;
    return r;
  }
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Errno(ENOENT, "open");
  auto handle = std::make_shared<VolumeHandle>();
  handle->node = v;
  handle->cursor = v->volume.mapping->SampleWritebackError();
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    r.fh = next_volume_fh_++;
    handles_.emplace(r.fh, std::move(handle));
  }
  v->open_handles.fetch_add(1, std::memory_order_acq_rel);
  r.direct_io = !options_.kernel_cache;
  r.keep_cache = options_.kernel_cache;
  return r;
}

Result<size_t> ExportFs::Read(InodeId ino, uint64_t fh, uint64_t pos, std::span<char> out) {
  if (ino == kStatsInode) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    auto it = stats_handles_.find(fh);
    if (it == stats_handles_.end()) return Errno(EBADF, ".stats");
    const std::string& text = it->second;
    if (pos >= text.size()) return size_t{0};
    const size_t n = std::min<size_t>(out.size(), text.size() - pos);
    std::copy_n(text.data() + pos, n, out.data());
    return n;
  }
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Errno(ino == kRootInode ? EISDIR : ENOENT, "read");
  const uint64_t size = v->volume.mapping->size();
  if (pos >= size || out.empty()) return size_t{0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - pos));
  return v->volume.mapping->Read(pos, out.first(n));
}

Result<size_t> ExportFs::Write(InodeId ino, uint64_t /*fh*/, uint64_t pos,
                               std::span<const char> in) {
  if (ino == kControlInode && options_.control) return WriteControl(in);
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Errno(ino == kStatsInode ? EBADF : EISDIR, "write");
  const uint64_t size = v->volume.mapping->size();
  if (in.empty()) return size_t{0};
  if (pos >= size) return Errno(ENOSPC, v->volume.name);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), size - pos));
  FOLIO_ASSIGN_OR_RETURN(size_t done, v->volume.mapping->Write(pos, in.first(n)));
  v->mtime_ns.store(TimespecToNs(RealNow()), std::memory_order_relaxed);
  return done;
}

Result<size_t> ExportFs::WriteControl(std::span<const char> in) {
  std::string line(in.data(), in.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) {
    line.pop_back();
  }
  if (line.empty()) return in.size();
  Status s = options_.control(line);
  Log(".control: " + line + ": " + (s.ok() ? std::string("done") : s.ToString()));
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++control_commands_;
    control_last_ = line;
    control_last_result_ = s.ok() ? "done" : s.ToString();
  }
  if (!s.ok()) return s;
  return in.size();
}

Status ExportFs::Flush(InodeId /*ino*/, uint64_t /*fh*/) {
  // Dirty data stays in the page cache, where background writeback, fsync, the last release
  // and the unmount all find it: a close loses nothing by returning at once.
  return Status::OK();
}

Status ExportFs::Release(InodeId ino, uint64_t fh) {
  if (ino == kStatsInode) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_handles_.erase(fh);
    return Status::OK();
  }
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Status::OK();
  {
    std::lock_guard<std::mutex> lock(handles_mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end() || it->second->node != v) return Errno(EBADF, "release");
    handles_.erase(it);
  }
  const uint32_t before = v->open_handles.fetch_sub(1, std::memory_order_acq_rel);
  FOLIO_CHECK(before > 0);
  if (before != 1) return Status::OK();
  // The last handle: write everything back so the volume on disk is complete while no one
  // has it open. The kernel ignores release's result, so a failure is logged; it is not marked
  // seen, so the next fsync of a file opened later still reports it.
  Status s = v->volume.mapping->WriteBack();
  if (!s.ok()) Log(v->volume.name + ": writeback after the last close failed: " + s.ToString());
  return s;
}

std::shared_ptr<ExportFs::VolumeHandle> ExportFs::HandleOf(uint64_t fh) const {
  std::lock_guard<std::mutex> lock(handles_mu_);
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : it->second;
}

Status ExportFs::Fsync(InodeId ino, uint64_t fh, SyncKind /*kind*/) {
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Status::OK();
  std::shared_ptr<VolumeHandle> h = HandleOf(fh);
  if (h == nullptr || h->node != v) return Errno(EBADF, "fsync");
  // A volume has no metadata of its own: fsync and fdatasync are the same.
  return v->volume.mapping->Fsync(&h->cursor);
}

Status ExportFs::Fallocate(InodeId ino, uint64_t /*fh*/, int mode, uint64_t pos, uint64_t len) {
  VolumeNode* v = VolumeOf(ino);
  if (v == nullptr) return Errno(ino == kRootInode ? EISDIR : EPERM, "fallocate");
  const uint64_t size = v->volume.mapping->size();
  if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
    if (pos >= size) return Status::OK();
    return PunchHole(v, pos, std::min(len, size - pos));
  }
  if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE) {
    // Every byte of a device is allocated; only growth is impossible.
    if (pos > size || len > size - pos) {
      return mode == 0 ? Errno(ENOSPC, v->volume.name) : Status::OK();
    }
    return Status::OK();
  }
  return Errno(EOPNOTSUPP, "fallocate mode");
}

Status ExportFs::PunchHole(VolumeNode* v, uint64_t pos, uint64_t len) {
  AddressSpace* as = v->volume.mapping;
  BlockDevice* dev = as->device();
  if (!dev->supports_trim()) return Errno(EOPNOTSUPP, v->volume.name + ": punch hole");
  const uint64_t end = pos + len;
  const uint64_t first_page = (pos + kPageBytes - 1) / kPageBytes * kPageBytes;
  const uint64_t last_page = end / kPageBytes * kPageBytes;
  // Partial pages at either edge are zeroed through the cache.
  std::vector<char> zeros;
  auto zero = [&](uint64_t from, uint64_t to) -> Status {
    if (from >= to) return Status::OK();
    zeros.assign(to - from, 0);
    FOLIO_ASSIGN_OR_RETURN(size_t n, as->Write(from, {zeros.data(), zeros.size()}));
    if (n != zeros.size()) return Status::IOError(v->volume.name + ": short write zeroing");
    return Status::OK();
  };
  if (first_page >= last_page) return zero(pos, end);
  FOLIO_RETURN_IF_ERROR(zero(pos, first_page));
  FOLIO_RETURN_IF_ERROR(zero(last_page, end));
  // Whole pages: write back and drop what is cached (so writeback cannot later overwrite the
  // trimmed range), trim, and drop again anything a racing read cached meanwhile. The drops
  // cover the range rounded out to 2 MiB, the largest folio: folios are aligned to their size,
  // so no folio straddles the rounded range and every one inside is written back and dropped
  // whole, whatever the cache does with folios that straddle a range.
  const uint64_t drop_first = first_page / kMaxFolioBytes * kMaxFolioBytes;
  const uint64_t drop_last = (last_page + kMaxFolioBytes - 1) / kMaxFolioBytes * kMaxFolioBytes;
  FOLIO_RETURN_IF_ERROR(as->Invalidate(drop_first, drop_last - drop_first));
  FOLIO_RETURN_IF_ERROR(dev->Trim(first_page, last_page - first_page));
  FOLIO_RETURN_IF_ERROR(as->Invalidate(drop_first, drop_last - drop_first));
  v->mtime_ns.store(TimespecToNs(RealNow()), std::memory_order_relaxed);
  return Status::OK();
}

Result<std::vector<DirEntry>> ExportFs::ReadDir(InodeId dir) {
  if (dir != kRootInode) return Errno(ENOTDIR, "readdir");
  std::vector<DirEntry> entries;
  entries.reserve(volumes_.size() + 3);
  entries.push_back({".", kRootInode, S_IFDIR});
  entries.push_back({"..", kRootInode, S_IFDIR});
  entries.push_back({kStatsName, kStatsInode, S_IFREG});
  if (options_.control) entries.push_back({kControlName, kControlInode, S_IFREG});
  for (size_t i = 0; i < volumes_.size(); ++i) {
    entries.push_back({volumes_[i]->volume.name, InodeId{kFirstVolumeIno + i}, S_IFREG});
  }
  return entries;
}

Result<FsStatfs> ExportFs::StatFs() {
  FsStatfs f;
  f.block_bytes = kPageBytes;
  for (const auto& v : volumes_) f.blocks += v->volume.mapping->size() / kPageBytes;
  f.files = volumes_.size() + (options_.control ? 3 : 2);
  return f;
}

Status ExportFs::SyncAll() {
  Status first;
  for (const auto& v : volumes_) {
    Status s = v->volume.mapping->WriteBack();
    if (!s.ok()) {
      Log(v->volume.name + ": sync failed: " + s.ToString());
      if (first.ok()) first = s;
    }
  }
  return first;
}

uint64_t ExportFs::ReportUnwritten() const {
  uint64_t total = 0;
  for (const auto& v : volumes_) {
    const WritebackErrorState st = v->volume.mapping->writeback_errors();
    if (st.unwritten_bytes == 0) continue;
    total += st.unwritten_bytes;
    Log(v->volume.name + ": " + std::to_string(st.unwritten_bytes) + " bytes (" +
        FormatSize(st.unwritten_bytes) + ") written to it never reached " +
        v->volume.mapping->device()->name() + " and are lost (" + std::to_string(st.errors) +
        " failed writeback requests; latest: " + st.latest.ToString() + ")");
  }
  return total;
}

}  // namespace folio::fuse
