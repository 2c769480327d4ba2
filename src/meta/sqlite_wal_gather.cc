#include "meta/sqlite_wal_gather.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include <fmt/format.h>

#include "meta/sqlite_vfs_forward.h"

namespace folio::meta {
namespace {

constexpr int kFrameHeaderBytes = 24;   // a WAL frame header (the 32-byte file header is apart)
// The unix VFS writes at most 0x1ffff bytes per call (seekAndWriteFd masks the length: a
// longer write comes back short, as SQLITE_FULL): gathered bytes go in writes of 64 KiB at
// most, and a page arriving past 64 KiB gathered writes them out.
constexpr size_t kMaxWriteBytes = 64 << 10;
constexpr size_t kMaxGatherBytes = 64 << 10;

std::atomic<uint64_t> g_writes_in{0}, g_writes_out{0};

// One gathering VFS over the VFS it wraps (ForwardingVfs::real).
struct GatherVfs : ForwardingVfs {
  std::string name;
};

// A WAL file: our header, then the wrapped VFS's file object (real->szOsFile bytes).
struct GatherFile {
  sqlite3_file base;          // pMethods = &kWalMethods
  sqlite3_file* real;         // the wrapped file, right after this struct
  std::vector<char>* buf;     // what is gathered, from offset `at`
  sqlite3_int64 at;
  // Past the last byte appended since the WAL's header was last written (SQLite starts the WAL
  // over from offset 0): a write below it rewrites what is there (a frame's page or checksums
  // rewritten in place) and goes straight through, so only appends wait in the buffer.
  sqlite3_int64 end;
  bool commit_frame;          // the last gathered header was a commit frame's
};

size_t RealOffset() {
  return (sizeof(GatherFile) + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
}

int Flush(GatherFile* f) {
  f->commit_frame = false;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < f->buf->size() && rc == SQLITE_OK;) {
    const size_t n = std::min(kMaxWriteBytes, f->buf->size() - done);
    g_writes_out.fetch_add(1, std::memory_order_relaxed);
    rc = f->real->pMethods->xWrite(f->real, f->buf->data() + done, static_cast<int>(n),
                                   f->at + static_cast<sqlite3_int64>(done));
    done += n;
  }
  f->buf->clear();
  return rc;
}

int WalClose(sqlite3_file* file) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  const int flushed = Flush(f);
  const int rc = f->real->pMethods != nullptr ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
  delete f->buf;
  f->buf = nullptr;
  return flushed != SQLITE_OK ? flushed : rc;
}

int WalRead(sqlite3_file* file, void* out, int amt, sqlite3_int64 off) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xRead(f->real, out, amt, off);
}

int WalWrite(sqlite3_file* file, const void* data, int amt, sqlite3_int64 off) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  g_writes_in.fetch_add(1, std::memory_order_relaxed);
  if (off == 0) f->end = 0;  // the WAL's header: SQLite starts the WAL over
  if (off < f->end || amt > static_cast<int>(kMaxWriteBytes)) {
    // A rewrite in place (or a write too large to gather): what is gathered first, then this.
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
    g_writes_out.fetch_add(1, std::memory_order_relaxed);
    return f->real->pMethods->xWrite(f->real, data, amt, off);
  }
  if (!f->buf->empty() && off != f->at + static_cast<sqlite3_int64>(f->buf->size())) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  if (f->buf->empty()) f->at = off;
  f->end = off + amt;
  const char* p = static_cast<const char*>(data);
  try {
    f->buf->insert(f->buf->end(), p, p + amt);
  } catch (const std::bad_alloc&) {
    // Nothing of this write is gathered: write what is, then this one, directly.
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
    g_writes_out.fetch_add(1, std::memory_order_relaxed);
    return f->real->pMethods->xWrite(f->real, data, amt, off);
  }
  if (amt == kFrameHeaderBytes) {
    // Bytes 4-7, big-endian: the database size after a commit, 0 in other frames.
    f->commit_frame = (p[4] | p[5] | p[6] | p[7]) != 0;
    return SQLITE_OK;
  }
  // A page (or the file header): a commit's last frame is complete.
  if (f->commit_frame || f->buf->size() >= kMaxGatherBytes) return Flush(f);
  return SQLITE_OK;
}

int WalTruncate(sqlite3_file* file, sqlite3_int64 size) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  f->end = std::min(f->end, size);
  return f->real->pMethods->xTruncate(f->real, size);
}

int WalSync(sqlite3_file* file, int flags) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xSync(f->real, flags);
}

int WalFileSize(sqlite3_file* file, sqlite3_int64* size) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xFileSize(f->real, size);
}

int WalLock(sqlite3_file* file, int lock) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  return f->real->pMethods->xLock(f->real, lock);
}

int WalUnlock(sqlite3_file* file, int lock) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  return f->real->pMethods->xUnlock(f->real, lock);
}

int WalCheckReservedLock(sqlite3_file* file, int* out) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  return f->real->pMethods->xCheckReservedLock(f->real, out);
}

int WalFileControl(sqlite3_file* file, int op, void* arg) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xFileControl(f->real, op, arg);
}

int WalSectorSize(sqlite3_file* file) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  return f->real->pMethods->xSectorSize(f->real);
}

int WalDeviceCharacteristics(sqlite3_file* file) {
  auto* f = reinterpret_cast<GatherFile*>(file);
  return f->real->pMethods->xDeviceCharacteristics(f->real);
}

// Version 1: SQLite maps no shared memory and no pages of a WAL file.
const sqlite3_io_methods kWalMethods = {
    1,         WalClose,       WalRead,   WalWrite,
    WalTruncate, WalSync,      WalFileSize, WalLock,
    WalUnlock, WalCheckReservedLock, WalFileControl, WalSectorSize,
    WalDeviceCharacteristics, nullptr, nullptr, nullptr,
    nullptr,   nullptr,        nullptr};

int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  sqlite3_vfs* real = ForwardingOf(vfs)->real;
  if ((flags & SQLITE_OPEN_WAL) == 0) {
    // Not a WAL: the wrapped VFS's own file object, in the same memory.
    return real->xOpen(real, name, file, flags, out_flags);
  }
  auto* f = reinterpret_cast<GatherFile*>(file);
  std::memset(f, 0, sizeof(GatherFile));
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + RealOffset());
  std::memset(f->real, 0, static_cast<size_t>(real->szOsFile));
  const int rc = real->xOpen(real, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    // SQLite calls xClose only when pMethods is set: the wrapped file closes itself here.
    if (f->real->pMethods != nullptr) f->real->pMethods->xClose(f->real);
    f->base.pMethods = nullptr;
    return rc;
  }
  f->buf = new (std::nothrow) std::vector<char>();
  if (f->buf == nullptr) {
    f->real->pMethods->xClose(f->real);
    return SQLITE_NOMEM;
  }
  f->base.pMethods = &kWalMethods;
  return SQLITE_OK;
}

std::mutex g_mu;
std::map<std::string, std::unique_ptr<GatherVfs>>* g_vfs = nullptr;  // GUARDED_BY(g_mu), never freed

}  // namespace

Result<std::string> WalGatherVfs(const std::string& base) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_vfs == nullptr) g_vfs = new std::map<std::string, std::unique_ptr<GatherVfs>>();
  auto it = g_vfs->find(base);
  if (it != g_vfs->end()) return it->second->name;
  sqlite3_vfs* real = sqlite3_vfs_find(base.empty() ? nullptr : base.c_str());
  if (real == nullptr) {
    return Status::InvalidArgument(fmt::format("SQLite VFS '{}' is not registered", base));
  }
  auto g = std::make_unique<GatherVfs>();
  g->real = real;
  g->name = "folio-wal-gather" + (base.empty() ? std::string() : "-" + base);
  InitForwardingVfs(g.get(), g->name.c_str(), static_cast<int>(RealOffset()) + real->szOsFile,
                    Open);
  const int rc = sqlite3_vfs_register(&g->vfs, 0);
  if (rc != SQLITE_OK) {
    return Status::IOError(fmt::format("registering SQLite VFS {}: {}", g->name, sqlite3_errstr(rc)));
  }
  std::string name = g->name;
  (*g_vfs)[base] = std::move(g);
  return name;
}

WalGatherStats GetWalGatherStats() {
  WalGatherStats s;
  s.writes_in = g_writes_in.load(std::memory_order_relaxed);
  s.writes_out = g_writes_out.load(std::memory_order_relaxed);
  return s;
}

}  // namespace folio::meta
