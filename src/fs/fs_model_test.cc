// FS model test: seeded random operations through the C++ core against an in-memory reference
// tree: create, write at random offsets and lengths, read, truncate up and down, rename within
// and across directories and over existing names (plain, RENAME_NOREPLACE, RENAME_EXCHANGE),
// link, unlink (also while open), mkdir / rmdir, symlink, chmod, xattrs, fsync, close; clean
// remounts and simulated crashes (everything not committed is lost), and metadata transactions
// aborted at a random call inside them (the operation must fail and leave no trace). After every
// remount the whole tree is compared byte for byte and fsck must be clean.
//
// What survives a crash (the reference's `durable` content of a file): what the last commit
// of the file wrote: an fsync, the settling of a closed file (a maintenance pass), a truncate
// (the size; data below it as of the last commit), a chmod of an open file (its size then).
//
// FOLIO_SEED picks the seed; FOLIO_MODEL_OPS the operations per seed (FOLIO_MODEL_OPS_DIVISOR
// scales the default, test_model_ops.h). The seed and operation number are printed on failure.
#include <fcntl.h>
#include <linux/falloc.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/test_model_ops.h"
#include "base/test_seed.h"
#include "fs/fsck.h"
#include "fs/fs_test_util.h"

namespace folio::fs {
namespace {

using test::Pattern;
using test::TestVolume;

struct RNode {
  FileType type = FileType::kRegular;
  std::string data, durable;  // regular files
  std::string target;         // symlinks
  uint32_t mode = 0644;
  std::map<std::string, std::string> xattrs;
  std::map<std::string, uint64_t> kids;  // directories: name -> inode
  uint32_t nlink = 1;
  uint64_t parent = 0;                   // directories
  int handles = 0;
};

struct Handle {
  uint64_t fh = 0;
  uint64_t ino = 0;
};

struct Counts {
  uint64_t ops = 0, remounts = 0, crashes = 0, crashes_random_subset = 0, injected = 0,
           fsck_runs = 0;
  // Compactions by the model's maintenance passes, and the bytes they compacted by keeping the
  // slices that held them instead of copying.
  uint64_t compactions = 0, compaction_kept_bytes = 0;
};

class Model {
 public:
  Model(uint64_t seed, TestVolume* vol) : rng_(seed), vol_(vol) {
    RNode root;
    root.type = FileType::kDirectory;
    root.mode = 0777;
    root.nlink = 2;
    root.parent = 1;
    nodes_[1] = root;
  }

  void Step(uint64_t op_no);
  void Remount(bool crash);
  void CheckAll();
  Counts counts;

 private:
  FileSystem* fs() { return vol_->fs(); }
  // FOLIO_MODEL_TRACE=1 prints every operation (to find the first wrong one).
  void Trace(const std::string& line) {
    if (trace_) std::fprintf(stderr, "  %s\n", line.c_str());
  }
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }
  std::vector<uint64_t> Dirs() {
    std::vector<uint64_t> out;
    for (auto& [ino, n] : nodes_) {
      if (n.type == FileType::kDirectory) out.push_back(ino);
    }
    return out;
  }
  uint64_t RandomDir() {
    std::vector<uint64_t> d = Dirs();
    return d[Pick(d.size())];
  }
  std::string RandomName() { return "n" + std::to_string(Pick(12)); }
  // A random (dir, name) entry, or false when the tree is empty.
  bool RandomEntry(uint64_t* dir, std::string* name) {
    std::vector<std::pair<uint64_t, std::string>> all;
    for (auto& [ino, n] : nodes_) {
      for (auto& [k, v] : n.kids) all.emplace_back(ino, k);
    }
    if (all.empty()) return false;
    auto& e = all[Pick(all.size())];
    *dir = e.first;
    *name = e.second;
    return true;
  }
  bool IsAncestor(uint64_t a, uint64_t d) {  // a is d or above it
    for (uint64_t cur = d;; cur = nodes_[cur].parent) {
      if (cur == a) return true;
      if (cur == 1) return false;
    }
  }
  void Drop(uint64_t ino) {  // one link of ino gone
    RNode& n = nodes_[ino];
    if (n.type == FileType::kDirectory) {
      nodes_.erase(ino);
      return;
    }
    if (--n.nlink == 0 && n.handles == 0) nodes_.erase(ino);
  }
  // Applies an operation's expected errno; `injected` ops may fail with EIO (no change).
  bool Expect(const Status& s, int want, const char* what) {
    if (inject_fired_) {
      EXPECT_FALSE(s.ok()) << what << ": an injected transaction failure was not reported";
      counts.injected++;
      return false;
    }
    EXPECT_EQ(s.ToErrno(), want) << what << ": " << s.ToString();
    return s.ok() && want == 0;
  }
  void MaybeInject(std::set<std::string> ops) {
    inject_fired_ = false;
    armed_ = Chance(8);
    if (armed_) vol_->fault()->Arm(std::move(ops), static_cast<int>(Pick(6)));
  }
  void AfterInject() {
    inject_fired_ = armed_ && vol_->fault()->fired();
    vol_->fault()->Disarm();
    armed_ = false;
  }

  void OpMkdir();
  void OpCreate();
  void OpWrite();
  void OpRead();
  void OpTruncate();
  void OpRename();
  void OpLink();
  void OpUnlink();
  void OpRmdir();
  void OpSymlink();
  void OpChmod();
  void OpXattr();
  void OpFsync();
  void OpClose();
  void OpPunch();
  void CheckDir(uint64_t ino);

  std::mt19937_64 rng_;
  TestVolume* vol_;
  std::map<uint64_t, RNode> nodes_;
  std::vector<Handle> handles_;
  bool inject_fired_ = false;
  bool armed_ = false;
  const bool trace_ = std::getenv("FOLIO_MODEL_TRACE") != nullptr;
};

void Model::OpMkdir() {
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  const int want = nodes_[dir].kids.count(name) ? EEXIST : 0;
  MaybeInject({"mkdir"});
  Result<Attr> a = fs()->Mkdir(Cred::Root(), InodeId{dir}, name, 0755);
  AfterInject();
  if (!Expect(a.ok() ? Status::OK() : a.status(), want, "mkdir")) return;
  RNode n;
  n.type = FileType::kDirectory;
  n.mode = 0755;
  n.nlink = 2;
  n.parent = dir;
  nodes_[Raw(a->ino())] = n;
  nodes_[dir].kids[name] = Raw(a->ino());
  nodes_[dir].nlink++;
}

void Model::OpCreate() {
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  const int want = nodes_[dir].kids.count(name) ? EEXIST : 0;
  MaybeInject({"create"});
  Result<FileSystem::Opened> o = fs()->Create(Cred::Root(), InodeId{dir}, name, 0644, O_RDWR | O_CREAT | O_EXCL);
  AfterInject();
  if (!Expect(o.ok() ? Status::OK() : o.status(), want, "create")) return;
  const uint64_t ino = Raw(o->attr.ino());
  Trace("create ino " + std::to_string(ino) + " fh " + std::to_string(o->fh));
  RNode n;
  n.handles = 1;
  nodes_[ino] = n;
  nodes_[dir].kids[name] = ino;
  handles_.push_back({o->fh, ino});
}

void Model::OpWrite() {
  if (handles_.empty()) return;
  Handle h = handles_[Pick(handles_.size())];
  RNode& n = nodes_[h.ino];
  const uint64_t pos = Pick(n.data.size() + 70000);
  const size_t len = 1 + Pick(Chance(20) ? 300000 : 9000);
  const std::string piece = Pattern(len, rng_());
  Trace("write ino " + std::to_string(h.ino) + " fh " + std::to_string(h.fh) + " pos " + std::to_string(pos) + " len " + std::to_string(len));
  Result<size_t> w = fs()->Write(h.fh, pos, {piece.data(), piece.size()});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(*w, len);
  if (n.data.size() < pos + len) n.data.resize(pos + len, '\0');
  n.data.replace(pos, len, piece);
}

void Model::OpRead() {
  if (handles_.empty()) return;
  Handle h = handles_[Pick(handles_.size())];
  const RNode& n = nodes_[h.ino];
  const uint64_t pos = Pick(n.data.size() + 10);
  const size_t len = 1 + Pick(200000);
  std::string got(len, '\0');
  Result<size_t> r = fs()->Read(h.fh, pos, {got.data(), got.size()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  got.resize(*r);
  const std::string want = pos < n.data.size() ? n.data.substr(pos, len) : "";
  ASSERT_EQ(got.size(), want.size()) << "read of " << len << " at " << pos;
  ASSERT_TRUE(got == want) << "read of " << len << " at " << pos << " differs";
}

void Model::OpTruncate() {
  std::vector<uint64_t> files;
  for (auto& [ino, n] : nodes_) {
    if (n.type == FileType::kRegular) files.push_back(ino);
  }
  if (files.empty()) return;
  const uint64_t ino = files[Pick(files.size())];
  RNode& n = nodes_[ino];
  const uint64_t size = Pick(n.data.size() * 2 + 5000);
  SetAttrRequest r;
  r.set_size = true;
  r.size_bytes = size;
  Trace("truncate ino " + std::to_string(ino) + " to " + std::to_string(size) + " from " + std::to_string(n.data.size()));
  Result<Attr> a = fs()->SetAttr(Cred::Root(), InodeId{ino}, r);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  n.data.resize(size, '\0');
  n.durable.resize(size, '\0');
}

void Model::OpPunch() {
  if (handles_.empty()) return;
  Handle h = handles_[Pick(handles_.size())];
  RNode& n = nodes_[h.ino];
  if (n.data.empty()) return;
  const uint64_t pos = Pick(n.data.size());
  const uint64_t len = 1 + Pick(n.data.size() - pos + 1000);
  Trace("punch ino " + std::to_string(h.ino) + " pos " + std::to_string(pos) + " len " + std::to_string(len));
  ASSERT_TRUE(fs()->Fallocate(h.fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos, len).ok());
  const uint64_t end = std::min<uint64_t>(pos + len, n.data.size());
  std::fill(n.data.begin() + static_cast<long>(pos), n.data.begin() + static_cast<long>(end), '\0');
}

void Model::OpRename() {
  uint64_t d1;
  std::string n1;
  if (!RandomEntry(&d1, &n1)) return;
  const uint64_t d2 = RandomDir();
  const std::string n2 = RandomName();
  const unsigned flags = Chance(15) ? kRenameExchange : Chance(15) ? kRenameNoReplace : 0;
  const uint64_t src = nodes_[d1].kids[n1];
  auto it2 = nodes_[d2].kids.find(n2);
  const uint64_t dst = it2 == nodes_[d2].kids.end() ? 0 : it2->second;
  const bool src_dir = nodes_[src].type == FileType::kDirectory;
  const bool dst_dir = dst != 0 && nodes_[dst].type == FileType::kDirectory;
  int want = 0;
  if (flags == kRenameExchange && dst == 0) want = ENOENT;
  else if (flags == kRenameNoReplace && dst != 0) want = EEXIST;
  else if (dst == src) want = 0;
  else if (src_dir && d1 != d2 && IsAncestor(src, d2)) want = EINVAL;
  else if (flags == kRenameExchange && dst_dir && d1 != d2 && IsAncestor(dst, d1)) want = EINVAL;
  else if (flags != kRenameExchange && dst != 0 && src_dir && !dst_dir) want = ENOTDIR;
  else if (flags != kRenameExchange && dst != 0 && !src_dir && dst_dir) want = EISDIR;
  else if (flags != kRenameExchange && dst_dir && !nodes_[dst].kids.empty()) want = ENOTEMPTY;
  MaybeInject({"rename"});
  Status s = fs()->Rename(Cred::Root(), InodeId{d1}, n1, InodeId{d2}, n2, flags);
  AfterInject();
  if (!Expect(s, want, "rename") || dst == src) return;
  if (flags == kRenameExchange) {
    nodes_[d1].kids[n1] = dst;
    nodes_[d2].kids[n2] = src;
    if (d1 != d2) {
      if (src_dir) {
        nodes_[src].parent = d2;
        nodes_[d1].nlink--;
        nodes_[d2].nlink++;
      }
      if (dst_dir) {
        nodes_[dst].parent = d1;
        nodes_[d2].nlink--;
        nodes_[d1].nlink++;
      }
    }
    return;
  }
  nodes_[d1].kids.erase(n1);
  nodes_[d2].kids[n2] = src;
  if (dst != 0) {
    if (dst_dir) nodes_[d2].nlink--;
    Drop(dst);
  }
  if (src_dir && d1 != d2) {
    nodes_[src].parent = d2;
    nodes_[d1].nlink--;
    nodes_[d2].nlink++;
  }
}

void Model::OpLink() {
  std::vector<uint64_t> files;
  for (auto& [ino, n] : nodes_) {
    if (n.type != FileType::kDirectory && n.nlink > 0) files.push_back(ino);
  }
  if (files.empty()) return;
  const uint64_t ino = files[Pick(files.size())];
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  const int want = nodes_[dir].kids.count(name) ? EEXIST : 0;
  MaybeInject({"link"});
  Result<Attr> a = fs()->Link(Cred::Root(), InodeId{ino}, InodeId{dir}, name);
  AfterInject();
  if (!Expect(a.ok() ? Status::OK() : a.status(), want, "link")) return;
  nodes_[dir].kids[name] = ino;
  nodes_[ino].nlink++;
}

void Model::OpUnlink() {
  uint64_t dir;
  std::string name;
  if (!RandomEntry(&dir, &name)) return;
  const uint64_t ino = nodes_[dir].kids[name];
  const int want = nodes_[ino].type == FileType::kDirectory ? EISDIR : 0;
  MaybeInject({"unlink"});
  Status s = fs()->Unlink(Cred::Root(), InodeId{dir}, name);
  AfterInject();
  if (!Expect(s, want, "unlink")) return;
  nodes_[dir].kids.erase(name);
  Drop(ino);
}

void Model::OpRmdir() {
  uint64_t dir;
  std::string name;
  if (!RandomEntry(&dir, &name)) return;
  const uint64_t ino = nodes_[dir].kids[name];
  const bool is_dir = nodes_[ino].type == FileType::kDirectory;
  const int want = !is_dir ? ENOTDIR : !nodes_[ino].kids.empty() ? ENOTEMPTY : 0;
  MaybeInject({"rmdir"});
  Status s = fs()->Rmdir(Cred::Root(), InodeId{dir}, name);
  AfterInject();
  if (!Expect(s, want, "rmdir")) return;
  nodes_[dir].kids.erase(name);
  nodes_[dir].nlink--;
  nodes_.erase(ino);
}

void Model::OpSymlink() {
  const uint64_t dir = RandomDir();
  const std::string name = RandomName();
  const std::string target = "t/" + std::to_string(Pick(1000));
  const int want = nodes_[dir].kids.count(name) ? EEXIST : 0;
  MaybeInject({"symlink"});
  Result<Attr> a = fs()->Symlink(Cred::Root(), InodeId{dir}, name, target);
  AfterInject();
  if (!Expect(a.ok() ? Status::OK() : a.status(), want, "symlink")) return;
  RNode n;
  n.type = FileType::kSymlink;
  n.target = target;
  n.mode = 0777;
  nodes_[Raw(a->ino())] = n;
  nodes_[dir].kids[name] = Raw(a->ino());
}

void Model::OpChmod() {
  std::vector<uint64_t> all;
  for (auto& [ino, n] : nodes_) {
    if (n.type != FileType::kSymlink) all.push_back(ino);
  }
  const uint64_t ino = all[Pick(all.size())];
  const uint32_t mode = ino == 1 ? 0777 : (0600 | static_cast<uint32_t>(Pick(0200)));
  SetAttrRequest r;
  r.set_mode = true;
  r.mode = mode;
  MaybeInject({"setattr"});
  Result<Attr> a = fs()->SetAttr(Cred::Root(), InodeId{ino}, r);
  AfterInject();
  if (!Expect(a.ok() ? Status::OK() : a.status(), 0, "chmod")) return;
  RNode& n = nodes_[ino];
  n.mode = mode;
  // The setattr commits the size an open file's writes reached (not their data).
  if (n.type == FileType::kRegular) n.durable.resize(n.data.size(), '\0');
}

void Model::OpXattr() {
  std::vector<uint64_t> all;
  for (auto& [ino, n] : nodes_) {
    if (n.type != FileType::kSymlink) all.push_back(ino);
  }
  const uint64_t ino = all[Pick(all.size())];
  const std::string name = "user.k" + std::to_string(Pick(4));
  RNode& n = nodes_[ino];
  if (Chance(30)) {
    const int want = n.xattrs.count(name) ? 0 : ENODATA;
    MaybeInject({"removexattr"});
    Status s = fs()->RemoveXattr(Cred::Root(), InodeId{ino}, name);
    AfterInject();
    if (Expect(s, want, "removexattr")) n.xattrs.erase(name);
    return;
  }
  const std::string value = Pattern(Pick(100), rng_());
  MaybeInject({"setxattr"});
  Status s = fs()->SetXattr(Cred::Root(), InodeId{ino}, name, value, 0);
  AfterInject();
  if (Expect(s, 0, "setxattr")) n.xattrs[name] = value;
}

void Model::OpFsync() {
  if (handles_.empty()) return;
  Handle h = handles_[Pick(handles_.size())];
  MaybeInject({"write", "pack_commit"});
  Trace("fsync ino " + std::to_string(h.ino));
  Status s = fs()->Fsync(h.fh, false);
  AfterInject();
  if (Expect(s, 0, "fsync")) nodes_[h.ino].durable = nodes_[h.ino].data;
}

void Model::OpClose() {
  if (handles_.empty()) return;
  const size_t i = Pick(handles_.size());
  Handle h = handles_[i];
  handles_.erase(handles_.begin() + static_cast<long>(i));
  Trace("close ino " + std::to_string(h.ino) + " fh " + std::to_string(h.fh));
  ASSERT_TRUE(fs()->Release(h.fh).ok());
  RNode& n = nodes_[h.ino];
  if (--n.handles == 0 && n.nlink == 0) nodes_.erase(h.ino);
}

void Model::Step(uint64_t op_no) {
  counts.ops++;
  const uint64_t r = Pick(1000);
  Trace("op " + std::to_string(op_no) + " r " + std::to_string(r));
  if (r < 70) OpMkdir();
  else if (r < 170) OpCreate();
  else if (r < 360) OpWrite();
  else if (r < 450) OpRead();
  else if (r < 500) OpTruncate();
  else if (r < 580) OpRename();
  else if (r < 620) OpLink();
  else if (r < 680) OpUnlink();
  else if (r < 720) OpRmdir();
  else if (r < 750) OpSymlink();
  else if (r < 780) OpChmod();
  else if (r < 830) OpXattr();
  else if (r < 880) OpFsync();
  else if (r < 950) OpClose();
  else if (r < 965) OpPunch();
  else if (r < 980) {
    const FsStats before = fs()->Stats();
    ASSERT_TRUE(fs()->RunMaintenance().ok());
    const FsStats after = fs()->Stats();
    counts.compactions += after.chunks_compacted - before.chunks_compacted;
    counts.compaction_kept_bytes +=
        after.compaction_kept_bytes - before.compaction_kept_bytes;
    for (auto& [ino, n] : nodes_) {
      if (n.type == FileType::kRegular && n.handles == 0) n.durable = n.data;
    }
  } else if (r < 992) {
    Remount(false);
  } else {
    Remount(true);
  }
}

void Model::Remount(bool crash) {
  Trace(crash ? "crash" : "remount");
  if (crash) {
    counts.crashes++;
    // On a dev: volume the device drops its unflushed writes, or a random subset of them.
    const bool subset = Chance(50);
    if (subset) counts.crashes_random_subset++;
    Status s = vol_->CrashAndRemount(subset ? CrashMode::kRandomSubset : CrashMode::kDropUnflushed,
                                     rng_());
    ASSERT_TRUE(s.ok()) << s.ToString();
    handles_.clear();
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      RNode& n = it->second;
      n.handles = 0;
      if (n.type == FileType::kRegular && n.nlink == 0) {
        it = nodes_.erase(it);  // sustained by a dead session: freed at the next mount
        continue;
      }
      n.data = n.durable;
      ++it;
    }
  } else {
    counts.remounts++;
    for (const Handle& h : handles_) ASSERT_TRUE(fs()->Release(h.fh).ok());
    handles_.clear();
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      it->second.handles = 0;
      if (it->second.type == FileType::kRegular && it->second.nlink == 0) {
        it = nodes_.erase(it);
        continue;
      }
      it->second.durable = it->second.data;
      ++it;
    }
    ASSERT_TRUE(vol_->Remount().ok());
  }
  CheckAll();
}

void Model::CheckDir(uint64_t ino) {
  const RNode& dir = nodes_[ino];
  Result<std::map<std::string, uint64_t>> got = test::ListDir(fs(), InodeId{ino}, 7);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(*got, dir.kids) << "directory " << ino;
  Result<Attr> a = fs()->GetAttr(InodeId{ino});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->inode.nlink, dir.nlink) << "directory " << ino;
  EXPECT_EQ(a->inode.mode & 07777, dir.mode) << "directory " << ino;
}

void Model::CheckAll() {
  for (auto& [ino, n] : nodes_) {
    SCOPED_TRACE("inode " + std::to_string(ino));
    if (n.type == FileType::kDirectory) {
      CheckDir(ino);
    } else {
      Result<Attr> a = fs()->GetAttr(InodeId{ino});
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      EXPECT_EQ(a->inode.nlink, n.nlink);
      EXPECT_EQ(a->inode.mode & 07777, n.mode);
      if (n.type == FileType::kRegular) {
        Result<std::string> content = test::ReadFile(fs(), InodeId{ino});
        ASSERT_TRUE(content.ok()) << content.status().ToString();
        ASSERT_EQ(content->size(), n.data.size());
        ASSERT_TRUE(*content == n.data) << "content differs";
      } else if (n.type == FileType::kSymlink) {
        EXPECT_EQ(*fs()->ReadLink(InodeId{ino}), n.target);
      }
    }
    std::map<std::string, std::string> xattrs;
    Result<std::vector<std::string>> names = fs()->ListXattr(Cred::Root(), InodeId{ino});
    ASSERT_TRUE(names.ok());
    for (const std::string& name : *names) {
      xattrs[name] = *fs()->GetXattr(Cred::Root(), InodeId{ino}, name);
    }
    EXPECT_EQ(xattrs, n.xattrs);
  }
  counts.fsck_runs++;
  Result<FsckReport> r = Fsck(vol_->meta(), vol_->store(), FsckOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string problems;
  for (const std::string& p : r->problems) problems += "\n  " + p;
  EXPECT_TRUE(r->clean()) << problems;
}

// Three seeds in a row (one without packing); prints the operation counts.
void RunModel(test::StoreKind store, const char* label) {
  const uint64_t ops = ModelOps(1500);
  const uint64_t base = TestSeed();
  std::printf("fs model (%s): seeds %llu..%llu (FOLIO_SEED=%llu to repeat)\n", label,
              static_cast<unsigned long long>(base), static_cast<unsigned long long>(base + 2),
              static_cast<unsigned long long>(base));
  Counts total;
  for (uint64_t round = 0; round < 3; ++round) {
    const uint64_t seed = base + round;
    FOLIO_SEED_TRACE(seed);
    test::VolumeOptions vo;
    vo.store = store;
    vo.pack_below_bytes = round == 1 ? 0 : 64 << 10;  // one round without packing
    vo.fs.sync_interval_ms = 1000000000;               // commits only where the model says
    // Chunks here get a few records between maintenance passes: compact them at 4, and let
    // the small bytes pay for up to 64 bytes of rewrite each, so passes compact (copying, and
    // keeping large slices without a copy) and the crashes and checks run across them.
    vo.fs.compact_slices = 4;
    vo.fs.compact_write_amp = 64;
    if (round == 2) {  // the smallest blocks: more slices of several blocks
      vo.block_bytes = 64 << 10;
      vo.pack_below_bytes = 32 << 10;  // at most half a block
    }
    // A dir: store's blocks wait for a sync: in batches of one to a few blocks here, so the
    // background syncs run between the model's flushes and crashes too.
    vo.fs.store_sync_batch_bytes = (256u << 10) * (1 + round);
    TestVolume vol(vo);
    Status created = vol.Create();
    ASSERT_TRUE(created.ok()) << created.ToString();
    Model m(seed, &vol);
    for (uint64_t i = 0; i < ops; ++i) {
      SCOPED_TRACE("operation " + std::to_string(i));
      m.Step(i);
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
    m.Remount(false);
    m.Remount(true);
    if (::testing::Test::HasFailure()) return;
    total.ops += m.counts.ops;
    total.remounts += m.counts.remounts;
    total.crashes += m.counts.crashes;
    total.crashes_random_subset += m.counts.crashes_random_subset;
    total.injected += m.counts.injected;
    total.fsck_runs += m.counts.fsck_runs;
    total.compactions += m.counts.compactions;
    total.compaction_kept_bytes += m.counts.compaction_kept_bytes;
  }
  std::printf("fs model (%s): %llu operations, %llu clean remounts, %llu crashes (%llu keeping a "
              "random subset of unflushed writes), %llu injected transaction failures, %llu "
              "fsck runs, %llu compactions (%llu bytes kept in place), all clean\n",
              label, static_cast<unsigned long long>(total.ops),
              static_cast<unsigned long long>(total.remounts),
              static_cast<unsigned long long>(total.crashes),
              static_cast<unsigned long long>(total.crashes_random_subset),
              static_cast<unsigned long long>(total.injected),
              static_cast<unsigned long long>(total.fsck_runs),
              static_cast<unsigned long long>(total.compactions),
              static_cast<unsigned long long>(total.compaction_kept_bytes));
  // 4-19 compactions in each of 12 runs of each store; a shortened run (FOLIO_MODEL_OPS_DIVISOR)
  // may have none. Bytes kept in place: 0 in 6 of those 24, so not asserted here
  // (DataTest.CompactionKeepsLargeSlicesAndCopiesTheFragments is the deterministic check).
  if (ops >= 1500) {
    EXPECT_GT(total.compactions, 0u) << "the model's maintenance passes compacted nothing";
  }
}

TEST(FsModelTest, RandomOperationsRemountsAndCrashesOnADirStore) {
  RunModel(test::StoreKind::kDir, "dir: store");
}

// The same on a dev: store over a FaultDevice: a crash drops the device's unflushed writes, so
// a block the metadata names must have been durable before its slice was committed.
TEST(FsModelTest, RandomOperationsRemountsAndCrashesOnADevStoreOverAFaultDevice) {
  RunModel(test::StoreKind::kDevFault, "dev: store on a FaultDevice");
}

}  // namespace
}  // namespace folio::fs
