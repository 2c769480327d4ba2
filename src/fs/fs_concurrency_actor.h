// Test helpers of fs_concurrency_test: an Actor is one thread of a concurrency test, with a
// seeded generator, its own directory of files with their reference contents, and checks of
// every operation against them (exact: an actor is the only writer of its files); failures
// name the run's seed, the actor, its operation number and its last operations. An Observer
// runs SyncAll, getattr, lookup and readdir over every actor's files meanwhile.
//
// Thread safety: each Actor (and the Observer) belongs to one thread; the Registry is shared.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fs/fs_test_util.h"
#include "fs/fsck.h"

namespace folio::fs::test {

// Fails the test from any thread, with the actor's seed, operation and recent history, and
// stops every actor. Leaves the calling (void) function.
#define ACTOR_CHECK(cond, what)            \
  do {                                     \
    if (!(cond)) {                         \
      std::ostringstream actor_check_os;   \
      actor_check_os << what;              \
      Fail(__FILE__, __LINE__, #cond, actor_check_os.str()); \
      return;                              \
    }                                      \
  } while (0)

// Fsck of the volume, unmounted (a mounted one's background work would show as problems).
inline void ExpectFsckClean(TestVolume* vol) {
  ASSERT_TRUE(vol->Unmount().ok());
  Result<FsckReport> r = Fsck(vol->meta(), vol->store(), FsckOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string problems;
  for (const std::string& p : r->problems) problems += "\n  " + p;
  EXPECT_TRUE(r->clean()) << problems;
  ASSERT_TRUE(vol->Mount().ok());
}

struct RefFile {
  std::string name;
  InodeId ino{0};
  std::string data;
  struct Handle {
    uint64_t fh = 0;
    int flags = 0;
  };
  std::vector<Handle> handles;
};

inline bool Writable(int flags) { return (flags & O_ACCMODE) != O_RDONLY; }
inline bool Readable(int flags) { return (flags & O_ACCMODE) != O_WRONLY; }

// Every inode the actors created, for the observer (which may see one already freed).
struct Registry {
  std::mutex mu;
  std::vector<InodeId> dirs;   // GUARDED_BY(mu)
  std::vector<InodeId> files;  // GUARDED_BY(mu)
  void AddFile(InodeId ino) {
    std::lock_guard<std::mutex> lock(mu);
    files.push_back(ino);
  }
};

// One thread of a test: a seeded generator, its own directory of files with their reference
// contents, and the checks every operation is held to. Thread safety: one thread at a time.
class Actor {
 public:
  // The generator is seeded with run_seed + index.
  Actor(std::string name, uint64_t run_seed, int index, int files, std::atomic<bool>* stop)
      : name_(std::move(name)), run_seed_(run_seed), rng_(run_seed + index), stop_(stop),
        files_(files) {}

  // Creates the directory and its (empty) files, closed. Runs before the threads start.
  void Setup(FileSystem* fs, Registry* reg) {
    fs_ = fs;
    reg_ = reg;
    Result<Attr> d = fs->Mkdir(Cred::Root(), kRootInode, name_, 0755);
    ACTOR_CHECK(d.ok(), d.status().ToString());
    dir_ = d->ino();
    {
      std::lock_guard<std::mutex> lock(reg->mu);
      reg->dirs.push_back(dir_);
    }
    for (size_t i = 0; i < files_.size(); ++i) {
      files_[i].name = "f" + std::to_string(i);
      CreateFile(files_[i]);
      CloseHandle(files_[i], 0);
    }
  }
  void SetFs(FileSystem* fs) { fs_ = fs; }
  bool failed() const { return failed_; }
  uint64_t ops() const { return op_no_; }

  void CloseAll() {
    for (RefFile& f : files_) {
      while (!f.handles.empty() && !failed_) CloseHandle(f, f.handles.size() - 1);
    }
  }
  // Every file read whole through a fresh handle, and its size by getattr and lookup.
  void CheckAll() {
    for (RefFile& f : files_) {
      Result<std::string> got = ReadFile(fs_, f.ino);
      ACTOR_CHECK(got.ok(), f.name << ": " << got.status().ToString());
      CompareContent(f, *got, "final read");
      CheckSize(f);
    }
  }

 protected:
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }
  bool Stopped() const { return failed_ || stop_->load(std::memory_order_relaxed); }

  void Note(const std::string& line) {
    recent_.push_back("op " + std::to_string(op_no_) + ": " + line);
    if (recent_.size() > 40) recent_.pop_front();
    if (trace_) std::fprintf(stderr, "  %s %s\n", name_.c_str(), recent_.back().c_str());
  }
  void Fail(const char* file, int line, const char* cond, const std::string& what) {
    std::string history;
    for (const std::string& r : recent_) history += "\n    " + r;
    ADD_FAILURE_AT(file, line) << name_ << " (FOLIO_SEED=" << run_seed_ << ") operation "
                                   << op_no_ << ": " << cond << ": " << what
                                   << "\n  its last operations:" << history;
    failed_ = true;
    stop_->store(true);
  }
  // No wait, a yield, or a sleep of up to 1.5 ms (now and then up to 120 ms, past the pack
  // writer's delay): the next operation lands on either side of a background commit.
  void RandomPause() {
    const uint64_t r = Pick(100);
    if (r < 25) return;
    if (r < 50) {
      std::this_thread::yield();
    } else if (r < 95) {
      std::this_thread::sleep_for(std::chrono::microseconds(Pick(1500)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(Pick(120)));
    }
  }

  std::string Describe(const RefFile& f) const {
    return f.name + " (ino " + std::to_string(Raw(f.ino)) + ", " + std::to_string(f.data.size()) +
           " bytes)";
  }

  void CreateFile(RefFile& f) {
    Result<FileSystem::Opened> o =
        fs_->Create(Cred::Root(), dir_, f.name, 0644, O_RDWR | O_CREAT | O_EXCL);
    ACTOR_CHECK(o.ok(), "create " << f.name << ": " << o.status().ToString());
    f.ino = o->attr.ino();
    f.data.clear();
    f.handles.push_back({o->fh, O_RDWR});
    reg_->AddFile(f.ino);
    Note("create " + Describe(f) + " fh " + std::to_string(o->fh));
  }

  // Opens f with flags (O_TRUNC empties the reference); the handle goes last in f.handles.
  void OpenAs(RefFile& f, int flags) {
    Result<FileSystem::Opened> o = fs_->Open(Cred::Root(), f.ino, flags);
    ACTOR_CHECK(o.ok(), "open " << Describe(f) << ": " << o.status().ToString());
    if ((flags & O_TRUNC) != 0) f.data.clear();
    f.handles.push_back({o->fh, flags});
    Note("open " + Describe(f) + " flags " + std::to_string(flags) + " fh " + std::to_string(o->fh));
    ACTOR_CHECK(o->attr.inode.size_bytes == f.data.size(),
                "open of " << Describe(f) << " returned size " << o->attr.inode.size_bytes);
  }

  // close(2) of the i-th handle: flush, then the last release.
  void CloseHandle(RefFile& f, size_t i) {
    const uint64_t fh = f.handles[i].fh;
    f.handles.erase(f.handles.begin() + static_cast<long>(i));
    Note("close " + Describe(f) + " fh " + std::to_string(fh));
    Status s = fs_->Flush(fh, 1);
    ACTOR_CHECK(s.ok(), "flush: " << s.ToString());
    s = fs_->Release(fh);
    ACTOR_CHECK(s.ok(), "release: " << s.ToString());
  }

  // A handle of f with access `writable` / readable, opened (plain) if there is none.
  RefFile::Handle HandleFor(RefFile& f, bool writable) {
    for (const RefFile::Handle& h : f.handles) {
      if (writable ? Writable(h.flags) : Readable(h.flags)) return h;
    }
    OpenAs(f, O_RDWR);
    return failed_ ? RefFile::Handle{} : f.handles.back();
  }

  void WriteAt(RefFile& f, const RefFile::Handle& h, uint64_t pos, size_t len) {
    if ((h.flags & O_APPEND) != 0) pos = f.data.size();
    const std::string piece = Pattern(len, rng_());
    Note("write " + Describe(f) + " fh " + std::to_string(h.fh) + " pos " + std::to_string(pos) +
         " len " + std::to_string(len) + ((h.flags & O_APPEND) != 0 ? " (append)" : ""));
    Result<size_t> n = fs_->Write(h.fh, pos, {piece.data(), piece.size()});
    ACTOR_CHECK(n.ok(), "write: " << n.status().ToString());
    ACTOR_CHECK(*n == len, "short write of " << *n);
    if (f.data.size() < pos + len) f.data.resize(pos + len, '\0');
    f.data.replace(pos, len, piece);
  }

  void CompareContent(const RefFile& f, const std::string& got, const char* what) {
    if (got == f.data) return;
    size_t at = 0;
    while (at < got.size() && at < f.data.size() && got[at] == f.data[at]) ++at;
    ACTOR_CHECK(false, what << " of " << Describe(f) << ": " << got.size()
                            << " bytes, first difference at " << at);
  }

  void CheckRead(const RefFile& f, uint64_t fh, uint64_t pos, size_t len) {
    Note("read " + Describe(f) + " fh " + std::to_string(fh) + " pos " + std::to_string(pos) +
         " len " + std::to_string(len));
    std::string got(len, '\0');
    Result<size_t> n = fs_->Read(fh, pos, {got.data(), got.size()});
    ACTOR_CHECK(n.ok(), "read: " << n.status().ToString());
    got.resize(*n);
    const std::string want = pos < f.data.size() ? f.data.substr(pos, len) : "";
    ACTOR_CHECK(got.size() == want.size(), "read of " << len << " at " << pos << " of "
                                               << Describe(f) << " returned " << got.size());
    ACTOR_CHECK(got == want, "read of " << len << " at " << pos << " of " << Describe(f)
                                        << " differs");
  }

  // Reads everything through the handle, in pieces, to the end of file.
  void CheckWhole(const RefFile& f, uint64_t fh) {
    Note("read all " + Describe(f) + " fh " + std::to_string(fh));
    std::string got;
    std::vector<char> buf(192 << 10);
    for (;;) {
      Result<size_t> n = fs_->Read(fh, got.size(), {buf.data(), buf.size()});
      ACTOR_CHECK(n.ok(), "read: " << n.status().ToString());
      if (*n == 0) break;
      got.append(buf.data(), *n);
    }
    CompareContent(f, got, "read through a handle");
  }

  void CheckSize(const RefFile& f) {
    Note("getattr + lookup " + Describe(f));
    Result<Attr> a = fs_->GetAttr(f.ino);
    ACTOR_CHECK(a.ok(), "getattr: " << a.status().ToString());
    ACTOR_CHECK(a->inode.size_bytes == f.data.size(),
                "getattr of " << Describe(f) << ": size " << a->inode.size_bytes);
    Result<Attr> l = fs_->Lookup(Cred::Root(), dir_, f.name);
    ACTOR_CHECK(l.ok(), "lookup: " << l.status().ToString());
    ACTOR_CHECK(l->ino() == f.ino, "lookup of " << f.name << " found ino " << Raw(l->ino()));
    ACTOR_CHECK(l->inode.size_bytes == f.data.size(),
                "lookup of " << Describe(f) << ": size " << l->inode.size_bytes);
  }

  // truncate(2) by path (fh 0) or ftruncate(2) through fh.
  void Truncate(RefFile& f, uint64_t size, uint64_t fh) {
    Note("truncate " + Describe(f) + " to " + std::to_string(size) + " fh " + std::to_string(fh));
    SetAttrRequest r;
    r.set_size = true;
    r.size_bytes = size;
    r.fh = fh;
    Result<Attr> a = fs_->SetAttr(Cred::Root(), f.ino, r);
    ACTOR_CHECK(a.ok(), "truncate: " << a.status().ToString());
    f.data.resize(size, '\0');
    ACTOR_CHECK(a->inode.size_bytes == size, "truncate returned size " << a->inode.size_bytes);
  }

  const std::string name_;
  const uint64_t run_seed_;
  std::mt19937_64 rng_;
  std::atomic<bool>* const stop_;
  FileSystem* fs_ = nullptr;
  Registry* reg_ = nullptr;
  InodeId dir_{0};
  std::vector<RefFile> files_;
  uint64_t op_no_ = 0;
  bool failed_ = false;
  std::deque<std::string> recent_;
  const bool trace_ = std::getenv("FOLIO_MODEL_TRACE") != nullptr;
};

// Runs SyncAll, getattr, lookup and readdir over every actor's files until told to stop. It
// cannot know sizes in flight; it checks what holds at any moment (names, types, no error but
// ENOENT for a file being replaced).
class Observer : public Actor {
 public:
  Observer(uint64_t seed, std::atomic<bool>* stop, Registry* reg, int names)
      : Actor("observer", seed, 100, 0, stop), names_(names) {
    reg_ = reg;
  }
  uint64_t rounds() const { return rounds_; }

  void Run(FileSystem* fs, const std::atomic<bool>* done) {
    fs_ = fs;
    while (!done->load() && !Stopped()) {
      ++op_no_;
      ++rounds_;
      std::vector<InodeId> dirs, files;
      {
        std::lock_guard<std::mutex> lock(reg_->mu);
        dirs = reg_->dirs;
        files = reg_->files;
      }
      switch (Pick(4)) {
        case 0: {
          Note("syncall");
          Status s = fs_->SyncAll();
          ACTOR_CHECK(s.ok(), "syncall: " << s.ToString());
          break;
        }
        case 1:
          Note("getattr of " + std::to_string(files.size()) + " files");
          for (InodeId ino : files) {
            Result<Attr> a = fs_->GetAttr(ino);
            ACTOR_CHECK(a.ok() || a.status().ToErrno() == ENOENT,
                        "getattr " << Raw(ino) << ": " << a.status().ToString());
            ACTOR_CHECK(!a.ok() || a->inode.type == FileType::kRegular, "getattr " << Raw(ino));
          }
          break;
        case 2:
          for (InodeId dir : dirs) ListDir(dir);
          break;
        default:
          Note("lookup of every name");
          for (InodeId dir : dirs) {
            for (int i = 0; i < names_; ++i) {
              Result<Attr> a = fs_->Lookup(Cred::Root(), dir, "f" + std::to_string(i));
              ACTOR_CHECK(a.ok() || a.status().ToErrno() == ENOENT, a.status().ToString());
            }
          }
          (void)fs_->Stats();
          ACTOR_CHECK(fs_->StatFs().ok(), "statfs");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(1000 + Pick(3000)));
    }
  }

 private:
  void ListDir(InodeId dir) {
    const bool plus = Chance(50);
    Note(std::string("readdir") + (plus ? "plus " : " ") + std::to_string(Raw(dir)));
    Result<uint64_t> dh = fs_->OpenDir(Cred::Root(), dir);
    ACTOR_CHECK(dh.ok(), "opendir: " << dh.status().ToString());
    std::set<std::string> seen;
    uint64_t offset = 0;
    for (;;) {
      Result<std::vector<DirEntryOut>> page = fs_->ReadDir(*dh, offset, 2, plus);
      ACTOR_CHECK(page.ok(), "readdir: " << page.status().ToString());
      if (page->empty()) break;
      for (const DirEntryOut& e : *page) {
        offset = e.offset;
        if (e.name == "." || e.name == "..") continue;
        ACTOR_CHECK(e.type == FileType::kRegular && e.name.size() == 2 && e.name[0] == 'f' &&
                        e.name[1] >= '0' && e.name[1] < '0' + names_,
                    "readdir of " << Raw(dir) << " found " << e.name);
        ACTOR_CHECK(seen.insert(e.name).second, "readdir returned " << e.name << " twice");
      }
    }
    ACTOR_CHECK(fs_->ReleaseDir(*dh).ok(), "releasedir");
  }

  const int names_;
  uint64_t rounds_ = 0;
};

// The end of a run: every handle closed, everything compared, SyncAll, a remount, everything
// compared again, fsck.
template <typename A>
void FinishAndCheck(TestVolume* vol, std::vector<std::unique_ptr<A>>& actors) {
  for (auto& a : actors) a->CloseAll();
  for (auto& a : actors) a->CheckAll();
  ASSERT_TRUE(vol->fs()->SyncAll().ok());
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_TRUE(vol->Remount().ok());
  for (auto& a : actors) {
    a->SetFs(vol->fs());
    a->CheckAll();
  }
  ExpectFsckClean(vol);
}

}  // namespace folio::fs::test
