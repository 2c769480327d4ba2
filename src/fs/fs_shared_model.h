// The multi-mount model: seeded random operations from two mounts of one volume
// (fs_shared_test_util.h), interleaved one at a time, against a reference that encodes what
// docs/fs.md promises across mounts, with one mount crashed (no unmount, nothing uncommitted
// kept) or cleanly remounted at random points.
//
// The reference per file: `committed` (what the metadata holds: what an open on a mount that
// is not writing the file sees) and `data` (the writing mount's view). Writers follow the
// close-to-open discipline: a file is open for writing on at most one mount at a time (its
// writer, while it has a writable handle there). Its data is committed by an fsync and by the
// close of every writable handle (a shared mount commits at close), a truncate commits the
// size, and a crash loses what was not committed. Checked:
//   - reads on the writer: `data`, exactly;
//   - reads on another mount: `committed` as of that mount's last open of the file, exactly,
//     while nothing was committed since; after a commit they must still succeed;
//   - an open on a mount that is not the writer sees `committed` (close-to-open), and its
//     attributes the committed size; getattr on any mount, the size of its view;
//   - names (create, rename, unlink, mkdir, rmdir) at once on both mounts, with the errno the
//     reference predicts; a file unlinked or renamed over on one mount stays readable through
//     every handle still open on either mount, and goes when the last one closes;
//   - every new inode number is one never seen before (id batches of two mounts);
//   - at the end and after every crash: every file read on both mounts, fsck clean.
//
// FOLIO_SEED repeats a run; FOLIO_MODEL_OPS sets the operations; FOLIO_MODEL_TRACE=1 prints
// every operation.
//
// Thread safety: one model per test thread.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/test_model_ops.h"
#include "base/test_seed.h"
#include "fs/fs_shared_test_util.h"

namespace folio::fs::test {

struct SharedModelCounts {
  uint64_t ops = 0, exact_reads = 0, loose_reads = 0, cross_opens = 0, unlinked_reads = 0,
           crashes = 0, remounts = 0, commits = 0, fsck_runs = 0;
};

class SharedModel {
 public:
  SharedModel(uint64_t seed, SharedVolume* vol) : rng_(seed), vol_(vol) {
    dirs_[Raw(kRootInode)] = Dir{Raw(kRootInode), {}};
    const char* t = std::getenv("FOLIO_MODEL_TRACE");
    trace_ = t != nullptr && std::string(t) == "1";
  }

  void Step();
  // Closes every handle, commits both mounts, checks every file on both; then remounts both
  // cleanly and checks again, fsck clean.
  void Finish();
  SharedModelCounts counts;

 private:
  struct File {
    std::string committed, data;
    int writer = -1;       // the mount writing it (handles or uncommitted data), or -1
    uint64_t commit_seq = 0;
    uint64_t seen[SharedVolume::kMounts] = {0, 0};  // commit_seq at each mount's last open
    bool linked = true;
    bool unlinked_on[SharedVolume::kMounts] = {false, false};  // with handles open there
  };
  struct Dir {
    uint64_t parent = 0;
    std::map<std::string, uint64_t> kids;  // name -> inode (file or directory)
  };
  struct Handle {
    int mount = 0;
    uint64_t fh = 0;
    uint64_t ino = 0;
    bool writable = false;
  };

  FileSystem* fs(int m) { return vol_->fs(m); }
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }
  void Trace(const std::string& line) {
    if (trace_) std::fprintf(stderr, "  %s\n", line.c_str());
  }
  int RandomMount() { return static_cast<int>(Pick(SharedVolume::kMounts)); }
  uint64_t RandomDir() {
    auto it = dirs_.begin();
    std::advance(it, static_cast<long>(Pick(dirs_.size())));
    return it->first;
  }
  std::string RandomName() { return "n" + std::to_string(Pick(8)); }
  bool IsAncestor(uint64_t a, uint64_t d) {
    for (uint64_t cur = d;; cur = dirs_[cur].parent) {
      if (cur == a) return true;
      if (cur == Raw(kRootInode)) return false;
    }
  }
  int HandlesOn(uint64_t ino, int m, bool writable_only) const {
    int n = 0;
    for (const Handle& h : handles_) {
      if (h.ino == ino && (m < 0 || h.mount == m) && (!writable_only || h.writable)) ++n;
    }
    return n;
  }
  // The view of mount m: the writer's data, or what it committed.
  const std::string& View(const File& f, int m) const {
    return f.writer == m ? f.data : f.committed;
  }
  // The writer's data is committed: what it sees is what the metadata holds.
  void Commit(File* f) {
    if (f->committed != f->data) {
      f->committed = f->data;
      f->commit_seq++;
      counts.commits++;
    }
    if (f->writer >= 0) f->seen[f->writer] = f->commit_seq;
  }
  void DiscardWriter(File* f) {
    f->data = f->committed;
    f->writer = -1;
  }
  // A file with no link and no handle anywhere is gone.
  void ForgetIfGone(uint64_t ino) {
    auto it = files_.find(ino);
    if (it != files_.end() && !it->second.linked && HandlesOn(ino, -1, false) == 0) files_.erase(it);
  }
  // One link of a file goes on mount m (unlink, rename over it). Held open there, the file is
  // that mount's to free at its last close (an unmount then drops what it had not committed).
  void DropLink(uint64_t ino, int m) {
    File& f = files_[ino];
    f.linked = false;
    if (HandlesOn(ino, m, false) > 0) f.unlinked_on[m] = true;
    ForgetIfGone(ino);
  }
  // A random handle open for writing, or false when there is none.
  bool RandomWritable(Handle* out) {
    std::vector<size_t> w;
    for (size_t i = 0; i < handles_.size(); ++i) {
      if (handles_[i].writable) w.push_back(i);
    }
    if (w.empty()) return false;
    *out = handles_[w[Pick(w.size())]];
    return true;
  }
  bool Expect(const Status& s, int want, const std::string& what) {
    if (want == 0) {
      EXPECT_TRUE(s.ok()) << what << ": " << s.ToString();
      return s.ok();
    }
    EXPECT_EQ(s.ToErrno(), want) << what << ": " << s.ToString();
    return false;
  }

  void OpCreate();
  void OpOpen();
  void OpWrite();
  void OpRead();
  void OpClose(size_t which);
  void OpFsync();
  void OpTruncate();
  void OpMaintenance(int m);
  void OpUnlink();
  void OpRename();
  void OpMkdir();
  void OpRmdir();
  void OpGetAttr();
  void OpRestart(bool crash);
  void CheckFile(int m, uint64_t ino, const std::string& want, const std::string& what);
  void CheckAll();

  std::mt19937_64 rng_;
  SharedVolume* vol_;
  bool trace_ = false;
  std::map<uint64_t, Dir> dirs_;
  std::map<uint64_t, File> files_;
  std::vector<Handle> handles_;
  std::set<uint64_t> inos_ever_;
};

inline void SharedModel::OpCreate() {
  const int m = RandomMount();
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  Trace("create m" + std::to_string(m) + " " + std::to_string(dir) + "/" + name);
  Result<FileSystem::Opened> o =
      fs(m)->Create(Cred::Root(), InodeId{dir}, name, 0644, O_RDWR | O_CREAT | O_EXCL);
  const bool exists = dirs_[dir].kids.count(name) != 0;
  if (!Expect(o.status(), exists ? EEXIST : 0, "create " + name)) return;
  const uint64_t ino = Raw(o->attr.ino());
  EXPECT_TRUE(inos_ever_.insert(ino).second) << "inode " << ino << " handed out twice";
  dirs_[dir].kids[name] = ino;
  File& f = files_[ino];
  f.writer = m;
  f.seen[m] = f.commit_seq;
  handles_.push_back(Handle{m, o->fh, ino, true});
}

inline void SharedModel::OpOpen() {
  if (files_.empty()) return;
  std::vector<uint64_t> linked;
  for (auto& [ino, f] : files_) {
    if (f.linked) linked.push_back(ino);
  }
  if (linked.empty()) return;
  const uint64_t ino = linked[Pick(linked.size())];
  File& f = files_[ino];
  const int m = RandomMount();
  const bool write = (f.writer < 0 || f.writer == m) && Chance(50);
  Trace("open m" + std::to_string(m) + " ino " + std::to_string(ino) + (write ? " rw" : " ro"));
  Result<FileSystem::Opened> o = fs(m)->Open(Cred::Root(), InodeId{ino}, write ? O_RDWR : O_RDONLY);
  if (!Expect(o.status(), 0, "open")) return;
  if (f.writer != m) {
    f.seen[m] = f.commit_seq;  // close-to-open: this open revalidated the mount's view
    counts.cross_opens++;
  }
  EXPECT_EQ(o->attr.inode.size_bytes, View(f, m).size()) << "open's size on mount " << m;
  if (write) f.writer = m;
  handles_.push_back(Handle{m, o->fh, ino, write});
}

inline void SharedModel::OpWrite() {
  Handle h;
  if (!RandomWritable(&h)) return;
  File& f = files_[h.ino];
  EXPECT_EQ(f.writer, h.mount) << "a write handle off the writer";
  const uint64_t pos = Pick(f.data.size() + 5000);
  const size_t len = 1 + Pick(Chance(15) ? 150000 : 12000);
  const std::string bytes = Pattern(len, rng_());
  Trace("write m" + std::to_string(h.mount) + " ino " + std::to_string(h.ino) + " at " +
        std::to_string(pos) + " len " + std::to_string(len));
  Result<size_t> n = fs(h.mount)->Write(h.fh, pos, {bytes.data(), bytes.size()});
  if (!Expect(n.status(), 0, "write")) return;
  EXPECT_EQ(*n, len);
  if (f.data.size() < pos + len) f.data.resize(pos + len, '\0');
  f.data.replace(pos, len, bytes);
}

inline void SharedModel::OpRead() {
  if (handles_.empty()) return;
  const Handle h = handles_[Pick(handles_.size())];
  const File& f = files_[h.ino];
  const int m = h.mount;
  const std::string& view = View(f, m);
  const uint64_t pos = Pick(view.size() + 100);
  const size_t len = 1 + Pick(200000);
  Trace("read m" + std::to_string(m) + " ino " + std::to_string(h.ino) + " at " +
        std::to_string(pos) + " len " + std::to_string(len));
  std::string buf(len, '\0');
  Result<size_t> n = fs(m)->Read(h.fh, pos, {buf.data(), buf.size()});
  if (!Expect(n.status(), 0, "read")) return;
  if (!f.linked) counts.unlinked_reads++;
  if (f.writer != m && f.seen[m] != f.commit_seq) {
    counts.loose_reads++;  // another mount committed since this one opened: no promise
    return;
  }
  counts.exact_reads++;
  const std::string want = pos >= view.size() ? std::string() : view.substr(pos, len);
  buf.resize(*n);
  size_t diff = 0;
  while (diff < std::min(buf.size(), want.size()) && buf[diff] == want[diff]) ++diff;
  EXPECT_TRUE(buf == want) << "read on mount " << m << " of inode " << h.ino << " at " << pos
                           << ": got " << buf.size() << " bytes, want " << want.size()
                           << (f.writer == m ? " (the writer's data)" : " (committed)")
                           << "; first difference at file offset " << pos + diff;
}

inline void SharedModel::OpClose(size_t which) {
  const Handle h = handles_[which];
  Trace("close m" + std::to_string(h.mount) + " ino " + std::to_string(h.ino));
  Status s = fs(h.mount)->Flush(h.fh, 1);
  Status r = fs(h.mount)->Release(h.fh);
  Expect(s, 0, "flush");
  Expect(r, 0, "release");
  handles_.erase(handles_.begin() + static_cast<long>(which));
  File& f = files_[h.ino];
  // A shared mount's close of a writable handle commits the file's data (close-to-open).
  if (h.writable) Commit(&f);
  if (HandlesOn(h.ino, h.mount, true) == 0 && f.writer == h.mount) f.writer = -1;
  if (HandlesOn(h.ino, h.mount, false) == 0) f.unlinked_on[h.mount] = false;
  ForgetIfGone(h.ino);
}

inline void SharedModel::OpFsync() {
  Handle h;
  if (!RandomWritable(&h)) return;
  Trace("fsync m" + std::to_string(h.mount) + " ino " + std::to_string(h.ino));
  if (!Expect(fs(h.mount)->Fsync(h.fh, false), 0, "fsync")) return;
  Commit(&files_[h.ino]);
}

inline void SharedModel::OpTruncate() {
  Handle h;
  if (!RandomWritable(&h)) return;
  File& f = files_[h.ino];
  const uint64_t size = Pick(f.data.size() + 20000);
  Trace("truncate m" + std::to_string(h.mount) + " ino " + std::to_string(h.ino) + " to " +
        std::to_string(size));
  SetAttrRequest req;
  req.set_size = true;
  req.size_bytes = size;
  req.fh = h.fh;
  if (!Expect(fs(h.mount)->SetAttr(Cred::Root(), InodeId{h.ino}, req).status(), 0, "truncate")) {
    return;
  }
  // The metadata is cut (or extended) at once; what the writer had not committed stays its.
  f.data.resize(size, '\0');
  const std::string before = f.committed;
  f.committed.resize(size, '\0');
  if (f.committed != before) f.commit_seq++;
}

inline void SharedModel::OpMaintenance(int m) {
  Trace("maintenance m" + std::to_string(m));
  Status s = fs(m)->RunMaintenance();
  EXPECT_TRUE(s.ok()) << "maintenance of mount " << m << ": " << s.ToString();
  // Files with no handle left on this mount are committed (settled); a handle, even a
  // read-only one, keeps the data of the writer uncommitted (sync_interval_ms is huge).
  for (auto& [ino, f] : files_) {
    if (f.writer == m && HandlesOn(ino, m, false) == 0) {
      Commit(&f);
      f.writer = -1;
    }
  }
}

inline void SharedModel::OpUnlink() {
  const int m = RandomMount();
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  Trace("unlink m" + std::to_string(m) + " " + std::to_string(dir) + "/" + name);
  Status s = fs(m)->Unlink(Cred::Root(), InodeId{dir}, name);
  auto it = dirs_[dir].kids.find(name);
  if (it == dirs_[dir].kids.end()) {
    Expect(s, ENOENT, "unlink of a missing name");
    return;
  }
  if (dirs_.count(it->second) != 0) {
    Expect(s, EISDIR, "unlink of a directory");
    return;
  }
  if (!Expect(s, 0, "unlink")) return;
  const uint64_t ino = it->second;
  dirs_[dir].kids.erase(it);
  DropLink(ino, m);
}

inline void SharedModel::OpRename() {
  const int m = RandomMount();
  const uint64_t from = RandomDir();
  if (dirs_[from].kids.empty()) return;
  auto it = dirs_[from].kids.begin();
  std::advance(it, static_cast<long>(Pick(dirs_[from].kids.size())));
  const std::string name = it->first;
  const uint64_t ino = it->second;
  const bool is_dir = dirs_.count(ino) != 0;
  const uint64_t to = RandomDir();
  const std::string new_name = is_dir ? "d" + std::to_string(Pick(4)) : RandomName();
  Trace("rename m" + std::to_string(m) + " " + std::to_string(from) + "/" + name + " -> " +
        std::to_string(to) + "/" + new_name);
  auto target = dirs_[to].kids.find(new_name);
  const bool target_dir = target != dirs_[to].kids.end() && dirs_.count(target->second) != 0;
  if (is_dir && target != dirs_[to].kids.end()) return;  // keep directory moves simple
  if (!is_dir && target_dir) return;
  Status s = fs(m)->Rename(Cred::Root(), InodeId{from}, name, InodeId{to}, new_name, 0);
  if (is_dir && IsAncestor(ino, to)) {
    Expect(s, EINVAL, "rename of a directory below itself");
    return;
  }
  if (!Expect(s, 0, "rename")) return;
  if (target != dirs_[to].kids.end() && target->second == ino) return;  // the same file
  uint64_t replaced = 0;
  if (target != dirs_[to].kids.end()) replaced = target->second;
  dirs_[from].kids.erase(name);
  dirs_[to].kids[new_name] = ino;
  if (is_dir) dirs_[ino].parent = to;
  if (replaced != 0) DropLink(replaced, m);
}

inline void SharedModel::OpMkdir() {
  const int m = RandomMount();
  const uint64_t dir = RandomDir();
  const std::string name = "d" + std::to_string(Pick(4));
  Trace("mkdir m" + std::to_string(m) + " " + std::to_string(dir) + "/" + name);
  Result<Attr> a = fs(m)->Mkdir(Cred::Root(), InodeId{dir}, name, 0755);
  if (!Expect(a.status(), dirs_[dir].kids.count(name) != 0 ? EEXIST : 0, "mkdir")) return;
  const uint64_t ino = Raw(a->ino());
  EXPECT_TRUE(inos_ever_.insert(ino).second) << "inode " << ino << " handed out twice";
  dirs_[dir].kids[name] = ino;
  dirs_[ino] = Dir{dir, {}};
}

inline void SharedModel::OpRmdir() {
  const int m = RandomMount();
  const uint64_t dir = RandomDir();
  const std::string name = "d" + std::to_string(Pick(4));
  Trace("rmdir m" + std::to_string(m) + " " + std::to_string(dir) + "/" + name);
  Status s = fs(m)->Rmdir(Cred::Root(), InodeId{dir}, name);
  auto it = dirs_[dir].kids.find(name);
  if (it == dirs_[dir].kids.end()) {
    Expect(s, ENOENT, "rmdir of a missing name");
    return;
  }
  if (dirs_.count(it->second) == 0) {
    Expect(s, ENOTDIR, "rmdir of a file");
    return;
  }
  if (!dirs_[it->second].kids.empty()) {
    Expect(s, ENOTEMPTY, "rmdir of a non-empty directory");
    return;
  }
  if (!Expect(s, 0, "rmdir")) return;
  dirs_.erase(it->second);
  dirs_[dir].kids.erase(it);
}

inline void SharedModel::OpGetAttr() {
  if (files_.empty()) return;
  auto it = files_.begin();
  std::advance(it, static_cast<long>(Pick(files_.size())));
  const int m = RandomMount();
  Result<Attr> a = fs(m)->GetAttr(InodeId{it->first});
  if (!Expect(a.status(), 0, "getattr")) return;
  EXPECT_EQ(a->inode.size_bytes, View(it->second, m).size())
      << "getattr on mount " << m << " of inode " << it->first;
  EXPECT_EQ(a->inode.nlink, it->second.linked ? 1u : 0u);
}

inline void SharedModel::OpRestart(bool crash) {
  const int m = RandomMount();
  Trace(std::string(crash ? "crash" : "remount") + " m" + std::to_string(m));
  if (crash) {
    vol_->Crash(m);
    counts.crashes++;
  } else {
    Status s = vol_->Unmount(m);
    EXPECT_TRUE(s.ok()) << "unmount of mount " << m << ": " << s.ToString();
    counts.remounts++;
  }
  std::vector<uint64_t> touched;
  for (auto h = handles_.begin(); h != handles_.end();) {
    if (h->mount == m) {
      touched.push_back(h->ino);
      h = handles_.erase(h);
    } else {
      ++h;
    }
  }
  for (auto& [ino, f] : files_) {
    const bool unlinked_here = f.unlinked_on[m];
    f.unlinked_on[m] = false;
    if (f.writer != m) continue;
    if (crash || unlinked_here) {
      // What it had not committed is lost, or goes with a file it unlinked while open.
      DiscardWriter(&f);
    } else {
      Commit(&f);  // an unmount commits everything
      f.writer = -1;
    }
  }
  for (uint64_t ino : touched) ForgetIfGone(ino);
  Status s = vol_->Mount(m);
  ASSERT_TRUE(s.ok()) << "mount " << m << " again: " << s.ToString();
  CheckAll();
}

inline void SharedModel::CheckFile(int m, uint64_t ino, const std::string& want,
                                   const std::string& what) {
  Result<std::string> got = ReadFile(fs(m), InodeId{ino});
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  size_t diff = 0;
  while (diff < std::min(got->size(), want.size()) && (*got)[diff] == want[diff]) ++diff;
  EXPECT_TRUE(*got == want) << what << ": " << got->size() << " bytes, want " << want.size()
                            << "; first difference at " << diff << ": got '"
                            << got->substr(diff, 12) << "', want '" << want.substr(diff, 12)
                            << "'";
}

// Every linked file that no mount is writing, read on both mounts (an open there: close-to-
// open), and every directory listed on both.
inline void SharedModel::CheckAll() {
  for (auto& [dir, d] : dirs_) {
    for (int m = 0; m < SharedVolume::kMounts; ++m) {
      Result<std::map<std::string, uint64_t>> got = ListDir(fs(m), InodeId{dir});
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      std::set<std::string> names;
      for (auto& [name, ino] : *got) names.insert(name);
      std::set<std::string> want;
      for (auto& [name, ino] : d.kids) want.insert(name);
      EXPECT_EQ(names, want) << "directory " << dir << " on mount " << m;
    }
  }
  for (auto& [ino, f] : files_) {
    if (!f.linked || f.writer >= 0) continue;
    for (int m = 0; m < SharedVolume::kMounts; ++m) {
      CheckFile(m, ino, f.committed, "inode " + std::to_string(ino) + " on mount " + std::to_string(m));
      f.seen[m] = f.commit_seq;
    }
  }
}

inline void SharedModel::Step() {
  counts.ops++;
  const uint64_t r = Pick(1000);
  if (r < 110) OpCreate();
  else if (r < 250) OpOpen();
  else if (r < 420) OpWrite();
  else if (r < 570) OpRead();
  else if (r < 680) {
    if (!handles_.empty()) OpClose(Pick(handles_.size()));
  } else if (r < 720) OpFsync();
  else if (r < 750) OpTruncate();
  else if (r < 830) OpMaintenance(RandomMount());
  else if (r < 880) OpUnlink();
  else if (r < 930) OpRename();
  else if (r < 950) OpMkdir();
  else if (r < 965) OpRmdir();
  else if (r < 985) OpGetAttr();
  else if (r < 993) OpRestart(/*crash=*/true);
  else OpRestart(/*crash=*/false);
  if (counts.ops % 150 == 0) CheckAll();
}

inline void SharedModel::Finish() {
  while (!handles_.empty()) OpClose(handles_.size() - 1);
  for (int m = 0; m < SharedVolume::kMounts; ++m) OpMaintenance(m);
  for (int m = 0; m < SharedVolume::kMounts; ++m) OpMaintenance(m);
  CheckAll();
  for (int m = 0; m < SharedVolume::kMounts; ++m) {
    Status s = vol_->Unmount(m);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  counts.fsck_runs++;
  vol_->ExpectFsckClean();
  for (int m = 0; m < SharedVolume::kMounts; ++m) {
    Status s = vol_->Mount(m);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  CheckAll();
}

// What a run must have exercised to mean something: checked reads, opens across mounts, reads
// of unlinked files and crashes.
inline bool SharedModelCovered(const SharedModelCounts& c) {
  return c.exact_reads > 0 && c.cross_opens > 0 && c.unlinked_reads > 0 && c.crashes > 0;
}

// Runs `rounds` seeds in a row on `engine`, one without packing; prints the seeds and counts.
// A short run (FOLIO_MODEL_OPS_DIVISOR under qemu) can draw no unlinked read or no crash from
// its seeds; it then runs up to kExtraSharedRounds more seeds (base + rounds, ...) until every
// coverage counter is non-zero, so the check below fails only if the model cannot reach a state,
// never because a seed was unlucky. Deterministic: the same FOLIO_SEED runs the same seeds.
inline constexpr int kExtraSharedRounds = 8;

inline void RunSharedModel(const EngineKind& engine, uint64_t default_ops, int rounds,
                           SharedStore store = SharedStore::kDir) {
  std::string why = engine.skip ? engine.skip() : std::string();
  if (why.empty()) why = SharedStoreSkip(store);
  if (!why.empty()) GTEST_SKIP() << why;
  const uint64_t ops = ModelOps(default_ops, 200);
  const uint64_t base = TestSeed();
  std::printf("shared fs model (%s, %s store): seeds from %llu, %llu operations each "
              "(FOLIO_SEED=%llu to repeat)\n",
              engine.name.c_str(), store == SharedStore::kRados ? "rados:" : "dir:",
              static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(ops), static_cast<unsigned long long>(base));
  SharedModelCounts total;
  int round = 0;
  for (; round < rounds + kExtraSharedRounds; ++round) {
    if (round >= rounds && SharedModelCovered(total)) break;
    const uint64_t seed = base + static_cast<uint64_t>(round);
    FOLIO_SEED_TRACE(seed);
    SharedOptions o;
    o.store = store;
    o.pack_below_bytes = round == 1 ? 0 : 64 << 10;
    o.block_bytes = 128 << 10;
    o.fs.compact_slices = 8;
    SharedVolume vol(engine, o);
    Status created = vol.Create();
    ASSERT_TRUE(created.ok()) << created.ToString();
    SharedModel model(seed, &vol);
    for (uint64_t i = 0; i < ops; ++i) {
      SCOPED_TRACE("operation " + std::to_string(i));
      model.Step();
      if (::testing::Test::HasFailure()) return;
    }
    model.Finish();
    if (::testing::Test::HasFailure()) return;
    const SharedModelCounts& c = model.counts;
    total.ops += c.ops;
    total.exact_reads += c.exact_reads;
    total.loose_reads += c.loose_reads;
    total.cross_opens += c.cross_opens;
    total.unlinked_reads += c.unlinked_reads;
    total.crashes += c.crashes;
    total.remounts += c.remounts;
    total.commits += c.commits;
    total.fsck_runs += c.fsck_runs;
  }
  std::printf("  seeds %llu..%llu (%d beyond the %d asked, to reach every case below)\n",
              static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(base + static_cast<uint64_t>(round) - 1),
              round - rounds, rounds);
  std::printf("  %llu ops: %llu reads checked exactly, %llu after another mount's commit, %llu "
              "opens on the other mount, %llu reads of unlinked files, %llu commits, %llu "
              "crashes, %llu remounts, %llu fsck runs\n",
              static_cast<unsigned long long>(total.ops),
              static_cast<unsigned long long>(total.exact_reads),
              static_cast<unsigned long long>(total.loose_reads),
              static_cast<unsigned long long>(total.cross_opens),
              static_cast<unsigned long long>(total.unlinked_reads),
              static_cast<unsigned long long>(total.commits),
              static_cast<unsigned long long>(total.crashes),
              static_cast<unsigned long long>(total.remounts),
              static_cast<unsigned long long>(total.fsck_runs));
  // The run was hard enough to mean something.
  EXPECT_GT(total.exact_reads, 0u);
  EXPECT_GT(total.cross_opens, 0u);
  EXPECT_GT(total.unlinked_reads, 0u);
  EXPECT_GT(total.crashes, 0u);
}

}  // namespace folio::fs::test
