#include "meta/sqlite_power_loss_vfs.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
#include <vector>

#include "base/check.h"
#include "meta/sqlite_vfs_forward.h"

namespace folio::meta::test {

// Not in the anonymous namespace: PowerLossVfs::State (declared in the header) holds them.
struct PendingOp {
  bool truncate = false;
  int64_t offset = 0;  // write: where; truncate: the new size
  std::string data;
};

// What is known of one file (by its full path).
struct TrackedFile {
  std::string durable;  // the content at the last xSync
  bool exists = false;  // the file is durable (synced once, or there before this process)
  std::vector<PendingOp> pending;
};

namespace {

void Apply(const PendingOp& op, std::string* content) {
  if (op.truncate) {
    content->resize(static_cast<size_t>(op.offset));
    return;
  }
  const size_t end = static_cast<size_t>(op.offset) + op.data.size();
  if (content->size() < end) content->resize(end, '\0');
  content->replace(static_cast<size_t>(op.offset), op.data.size(), op.data);
}

bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string Canonical(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

constexpr const char* kSuffixes[] = {"", "-wal", "-journal"};

}  // namespace

struct PowerLossVfs::State : ForwardingVfs {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<TrackedFile>> files;  // GUARDED_BY(mu)
  uint64_t syncs = 0;                                     // GUARDED_BY(mu)

  // The record of path, created (from the file on disk, if there) when first seen.
  TrackedFile* Track(const std::string& path, bool existed) {
    std::lock_guard lock(mu);
    std::unique_ptr<TrackedFile>& t = files[path];
    if (!t) {
      t = std::make_unique<TrackedFile>();
      t->exists = existed && ReadWhole(path, &t->durable);
    }
    return t.get();
  }
};

namespace {

using State = PowerLossVfs::State;

struct PlFile {
  sqlite3_file base;     // first: SQLite sees a PlFile as a sqlite3_file
  State* state;
  TrackedFile* tracked;  // null for files no image holds (temp files, -shm)
  sqlite3_file* real;    // the wrapped file, in the bytes right after this struct
};

PlFile* Pl(sqlite3_file* f) { return reinterpret_cast<PlFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Pl(f)->real; }
State* StateOf(sqlite3_vfs* vfs) { return static_cast<State*>(ForwardingOf(vfs)); }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  const int rc = Real(f)->pMethods->xWrite(Real(f), buf, n, off);
  if (rc == SQLITE_OK && Pl(f)->tracked != nullptr) {
    std::lock_guard lock(Pl(f)->state->mu);
    Pl(f)->tracked->pending.push_back(
        PendingOp{false, off, std::string(static_cast<const char*>(buf), static_cast<size_t>(n))});
  }
  return rc;
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  const int rc = Real(f)->pMethods->xTruncate(Real(f), size);
  if (rc == SQLITE_OK && Pl(f)->tracked != nullptr) {
    std::lock_guard lock(Pl(f)->state->mu);
    Pl(f)->tracked->pending.push_back(PendingOp{true, size, {}});
  }
  return rc;
}
int Sync(sqlite3_file* f, int flags) {
  const int rc = Real(f)->pMethods->xSync(Real(f), flags);
  if (rc == SQLITE_OK && Pl(f)->tracked != nullptr) {
    std::lock_guard lock(Pl(f)->state->mu);
    TrackedFile* t = Pl(f)->tracked;
    for (const PendingOp& op : t->pending) Apply(op, &t->durable);
    t->pending.clear();
    t->exists = true;
    Pl(f)->state->syncs++;
  }
  return rc;
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }

// Version 2: no xFetch, so SQLite never memory-maps the database and every write is seen.
const sqlite3_io_methods kMethods = {
    2,        Close,   Read,       Write,       Truncate,   Sync,
    FileSize, Lock,    Unlock,     CheckReservedLock, FileControl, SectorSize,
    DeviceCharacteristics, ShmMap, ShmLock, ShmBarrier, ShmUnmap, nullptr, nullptr};

int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  State* s = StateOf(vfs);
  PlFile* f = new (file) PlFile{};
  f->state = s;
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + sizeof(PlFile));
  const bool durable_kind =
      (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) != 0;
  struct stat st;
  const bool existed = name != nullptr && ::stat(name, &st) == 0;
  const int rc = s->real->xOpen(s->real, name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    f->base.pMethods = nullptr;  // SQLite calls no xClose then
    return rc;
  }
  f->base.pMethods = &kMethods;
  if (name != nullptr && durable_kind) f->tracked = s->Track(Canonical(name), existed);
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  State* s = StateOf(vfs);
  const int rc = s->real->xDelete(s->real, name, sync_dir);
  if (rc == SQLITE_OK || rc == SQLITE_IOERR_DELETE_NOENT) {
    std::lock_guard lock(s->mu);
    auto it = s->files.find(Canonical(name));
    if (it != s->files.end()) *it->second = TrackedFile{};
  }
  return rc;
}
}  // namespace

PowerLossVfs::PowerLossVfs() : state_(new State) {
  State* s = state_;
  s->real = sqlite3_vfs_find(nullptr);
  FOLIO_CHECK_MSG(s->real != nullptr && s->real->iVersion >= 2, "no default SQLite VFS");
  InitForwardingVfs(s, kName, static_cast<int>(sizeof(PlFile)) + s->real->szOsFile, Open, Delete);
  FOLIO_CHECK_MSG(sqlite3_vfs_register(&s->vfs, /*makeDflt=*/0) == SQLITE_OK,
                  "cannot register the power-loss VFS");
}

PowerLossVfs& PowerLossVfs::Get() {
  static PowerLossVfs* vfs = new PowerLossVfs();  // never destroyed: SQLite keeps a pointer
  return *vfs;
}

std::map<std::string, std::string> PowerLossVfs::Image(const std::string& db_path,
                                                       uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, std::string> image;
  std::lock_guard lock(state_->mu);
  for (const char* suffix : kSuffixes) {
    const std::string path = Canonical(db_path + suffix);
    auto it = state_->files.find(path);
    if (it == state_->files.end()) {
      std::string content;
      if (ReadWhole(path, &content)) image[suffix] = std::move(content);  // never touched
      continue;
    }
    const TrackedFile& t = *it->second;
    std::string content = t.durable;
    bool kept_any = false;
    for (const PendingOp& op : t.pending) {
      if (seed == 0 || rng() % 2 == 0) continue;
      Apply(op, &content);
      kept_any = true;
    }
    if (t.exists || kept_any) image[suffix] = std::move(content);
  }
  return image;
}

Status PowerLossVfs::WriteImage(const std::string& db_path,
                                const std::map<std::string, std::string>& image) {
  std::lock_guard lock(state_->mu);
  for (const char* suffix : {"", "-wal", "-journal", "-shm"}) {
    const std::string path = db_path + suffix;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno(errno, "unlink " + path);
    }
    auto it = state_->files.find(Canonical(path));
    if (it != state_->files.end()) *it->second = TrackedFile{};
  }
  for (const auto& [suffix, content] : image) {
    const std::string path = db_path + suffix;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) return Status::IOError("cannot write " + path);
    auto it = state_->files.find(Canonical(path));
    if (it != state_->files.end()) {
      it->second->durable = content;
      it->second->exists = true;
    }
  }
  return Status::OK();
}

uint64_t PowerLossVfs::syncs() const {
  std::lock_guard lock(state_->mu);
  return state_->syncs;
}

}  // namespace folio::meta::test
