// FS model test through a real FUSE mount: `folio fs format` a volume, run `folio fs mount` as
// a child process, and drive the mount point with seeded random system calls, each compared
// with an in-memory reference tree (mount_model_ref.h): the errno (EEXIST, ENOENT, ENOTDIR,
// EISDIR, ENOTEMPTY, EINVAL for a rename into its own subtree, EPERM, ENODATA) and the data.
// Operations: open / creat (O_EXCL, O_TRUNC, O_APPEND), pwrite and append at random offsets
// and lengths, pread, ftruncate / truncate up and down, renameat2 (plain, RENAME_NOREPLACE,
// RENAME_EXCHANGE) within and across directories and over existing names, link, unlink (also
// of open files, which are then read and written through their fds), mkdir / rmdir, symlink /
// readlink, chmod, user.* xattrs (set with XATTR_CREATE / XATTR_REPLACE, get, list, remove),
// readdir (names and d_type), fstat, fallocate (allocate, keep size, punch hole, zero range),
// copy_file_range, stores through a shared writable mmap, fsync / fdatasync, close, pauses
// (the mount's background commits run); paths through a missing name, a file or a dangling
// symlink. Mounts use the default options or, at random, writeback_cache and meta_sync=fsync.
//
// Periodically: a clean remount (close every fd, `folio fs umount`, the server exits 0, `folio
// fs fsck` clean, mount, the whole tree compared exactly: names, d_type, types, modes, nlink,
// one st_ino per file, sizes, content, symlink targets, xattrs) or a crash (kill -9 of the
// server, the fds dropped, the dead mount point detached, fsck clean, mount, compare).
//
// The contract checked after a kill -9: the namespace (names, types, modes, link counts,
// symlink targets, xattrs) is exactly as of the last completed operation: every metadata
// operation is committed before it returns. Files unlinked while open are gone. A regular
// file fsynced after its last change reads exactly as then; any other file reads without an
// error, its size is one it had since its last fsync (a truncate commits its size), and each
// byte is its value at the last fsync (zero past the size then) or one some write since put
// there (fallocate's punched, zeroed and allocated ranges are writes of zeros). On a mount
// with writeback_cache the kernel holds writes it has not sent yet, which the kill -9 loses,
// while a fallocate or truncate it did send may have set the server's size in between (the
// kernel sends no data before a fallocate that allocates): the size is then only checked to
// lie between the smallest and the largest the file had since its last fsync.
//
// FOLIO_SEED picks the seed, FOLIO_MODEL_OPS the number of operations (default 2500),
// FOLIO_MODEL_SECONDS the time after which no more are started (default 90), FOLIO_MODEL_TRACE=1
// prints every operation. A failure prints the seed, the operation number and the last
// operations. FOLIO_BINARY overrides the `folio` binary the build names.
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "base/test_model_ops.h"
#include "base/test_seed.h"
#include "fs_mount_model.h"
#include "fuse/mount_point.h"

namespace folio::fuse::test {

void MountModel::OpMkdir() {
  const Target t = PickTarget(20);
  const int want = t.err ? t.err : t.node ? EEXIST : 0;
  if (!Outcome(Err(mkdir(t.path.c_str(), 0755)), want, "mkdir " + t.path)) return;
  RefNode n;
  n.type = 'd';
  n.mode = 0755;
  ref_.Add(t.parent, t.name, n);
}

void MountModel::OpOpen() {
  if (fds_.size() >= 24) return OpClose();
  const Target t = PickTarget(50);
  static constexpr int kModes[] = {O_CREAT | O_EXCL, O_CREAT | O_TRUNC, O_CREAT, O_TRUNC, 0};
  const int flags = (Chance(20) ? O_WRONLY : O_RDWR) | kModes[Pick(5)] | (Chance(20) ? O_APPEND : 0);
  const bool create = flags & O_CREAT, excl = flags & O_EXCL;
  int want = t.err;
  if (want == 0 && t.node == 0) want = create ? 0 : ENOENT;
  if (want == 0 && t.node != 0) {
    const char type = ref_.at(t.node).type;
    // O_CREAT without O_EXCL follows the dangling symlink and finds no "t" directory.
    want = type == 'l' ? (excl ? EEXIST : ENOENT) : excl ? EEXIST : type == 'd' ? EISDIR : 0;
  }
  const int fd = open(t.path.c_str(), flags | O_CLOEXEC, 0644);
  const int got = Err(fd);
  if (!Outcome(got, want, "open " + t.path + OpenFlagNames(flags))) {
    if (fd >= 0) close(fd);
    return;
  }
  uint64_t id = t.node;
  if (id == 0) {
    id = ref_.Add(t.parent, t.name, RefNode{});
  } else if (flags & O_TRUNC) {
    ref_.Truncate(id, 0);
  }
  ref_.at(id).open++;
  Note("  fd " + std::to_string(fd) + " node " + std::to_string(id));
  fds_.push_back({fd, id, (flags & O_APPEND) != 0, (flags & O_ACCMODE) == O_RDWR});
}

void MountModel::OpWrite() {
  Fd* f = RandomFd();
  if (f == nullptr) return;
  const RefNode& n = ref_.at(f->node);
  const uint64_t pos = f->append ? n.data.size() : Pick(n.data.size() + 70000);
  const std::string piece = RandomBytes(1 + Pick(Chance(15) ? 300000 : 9000));
  const ssize_t w = f->append ? write(f->fd, piece.data(), piece.size())
                              : pwrite(f->fd, piece.data(), piece.size(), static_cast<off_t>(pos));
  const std::string what = std::string(f->append ? "append " : "pwrite ") +
                           std::to_string(piece.size()) + " at " + std::to_string(pos) +
                           " fd " + std::to_string(f->fd) + " node " +
                           std::to_string(f->node);
  if (!Outcome(Err(w), 0, what)) return;
  ASSERT_EQ(static_cast<size_t>(w), piece.size()) << what;
  ref_.Write(f->node, pos, piece);
}

void MountModel::OpRead() {
  Fd* f = RandomFd();
  if (f == nullptr) return;
  const RefNode& n = ref_.at(f->node);
  const uint64_t pos = Pick(n.data.size() + 10);
  const size_t len = 1 + Pick(200000);
  std::string got(len, '\0');
  const ssize_t r = pread(f->fd, got.data(), len, static_cast<off_t>(pos));
  const std::string what = "pread " + std::to_string(len) + " at " + std::to_string(pos) +
                           " fd " + std::to_string(f->fd) + " (nlink " +
                           std::to_string(n.nlink) + ")";
  if (!Outcome(Err(r), f->readable ? 0 : EBADF, what)) return;
  got.resize(static_cast<size_t>(r));
  const std::string want = pos < n.data.size() ? n.data.substr(pos, len) : "";
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_TRUE(got == want) << what << ": the bytes differ";
}

void MountModel::OpTruncate() {
  if (Fd* f = RandomFd(); f != nullptr && Chance(40)) {
    const uint64_t size = Pick(ref_.at(f->node).data.size() * 2 + 5000);
    const std::string what = "ftruncate node " + std::to_string(f->node) + " to " +
                             std::to_string(size);
    if (Outcome(Err(ftruncate(f->fd, static_cast<off_t>(size))), 0, what)) ref_.Truncate(f->node, size);
    return;
  }
  const Target t = PickTarget(85);
  int want = FollowErrno(t);
  if (want == 0 && ref_.at(t.node).type == 'd') want = EISDIR;
  const uint64_t size = Pick((want == 0 ? ref_.at(t.node).data.size() * 2 : 0) + 5000);
  const std::string what = "truncate " + t.path + " node " + std::to_string(t.node) + " to " +
                           std::to_string(size);
  if (Outcome(Err(truncate(t.path.c_str(), static_cast<off_t>(size))), want, what)) {
    ref_.Truncate(t.node, size);
  }
}

// fallocate: allocate (mode 0 grows the size), KEEP_SIZE, PUNCH_HOLE | KEEP_SIZE, ZERO_RANGE
// with or without KEEP_SIZE.
void MountModel::OpFallocate() {
  Fd* f = RandomFd();
  if (f == nullptr) return;
  static constexpr int kModes[] = {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                   FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
  const int mode = kModes[Pick(5)];
  const uint64_t size = ref_.at(f->node).data.size();
  const uint64_t pos = Pick(size + 20000), len = 1 + Pick(Chance(50) ? 5000 : 100000);
  const std::string what = "fallocate mode " + std::to_string(mode) + " " + std::to_string(len) +
                           " at " + std::to_string(pos) + " node " + std::to_string(f->node);
  const int got = Err(fallocate(f->fd, mode, static_cast<off_t>(pos), static_cast<off_t>(len)));
  if (!Outcome(got, 0, what)) return;
  if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
    const uint64_t end = std::min(pos + len, size);
    if (pos < end) ref_.Write(f->node, pos, std::string(end - pos, '\0'));
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && pos + len > size) {
    ref_.Write(f->node, size, std::string(pos + len - size, '\0'));
  }
}

// copy_file_range between two descriptors (or within one file): EBADF from a write-only source
// or into an O_APPEND one, EINVAL for overlapping ranges of one file, short at the source's end.
void MountModel::OpCopyRange() {
  if (fds_.empty()) return;
  const Fd in = fds_[Pick(fds_.size())], out = fds_[Pick(fds_.size())];
  const std::string& src = ref_.at(in.node).data;
  const uint64_t pos_in = Pick(src.size() + 1000), pos_out = Pick(ref_.at(out.node).data.size() + 20000);
  const uint64_t len = 1 + Pick(Chance(70) ? 20000 : 300000);
  const uint64_t count = pos_in >= src.size() ? 0 : std::min(len, src.size() - pos_in);
  int want = !in.readable || out.append ? EBADF : 0;
  if (want == 0 && in.node == out.node && pos_out + count > pos_in && pos_out < pos_in + count) {
    want = EINVAL;
  }
  loff_t off_in = static_cast<loff_t>(pos_in), off_out = static_cast<loff_t>(pos_out);
  const ssize_t n = copy_file_range(in.fd, &off_in, out.fd, &off_out, len, 0);
  const std::string what = "copy_file_range " + std::to_string(len) + " node " +
                           std::to_string(in.node) + " at " + std::to_string(pos_in) +
                           " -> node " + std::to_string(out.node) + " at " + std::to_string(pos_out);
  if (!Outcome(Err(n), want, what)) return;
  ASSERT_EQ(static_cast<uint64_t>(n), count) << what;
  if (count > 0) ref_.Write(out.node, pos_out, src.substr(pos_in, count));
}

void MountModel::OpRename() {
  const Target a = PickTarget(85), b = PickTarget(40);
  const unsigned flags = Chance(15) ? RENAME_EXCHANGE : Chance(15) ? RENAME_NOREPLACE : 0;
  // Both parents resolve before the source's name is looked up.
  const int want = a.err ? a.err : b.err ? b.err
                                         : ref_.RenameErrno(a.parent, a.name, b.parent, b.name, flags);
  const std::string what = std::string(flags == RENAME_EXCHANGE    ? "rename-exchange "
                                       : flags == RENAME_NOREPLACE ? "rename-noreplace "
                                                                   : "rename ") +
                           a.path + " " + b.path;
  const int got = Err(renameat2(AT_FDCWD, a.path.c_str(), AT_FDCWD, b.path.c_str(), flags));
  if (Outcome(got, want, what)) ref_.ApplyRename(a.parent, a.name, b.parent, b.name, flags);
}

void MountModel::OpLink() {
  const Target a = PickTarget(85), b = PickTarget(30);
  int want = a.err ? a.err : a.node == 0 ? ENOENT : b.err ? b.err : b.node ? EEXIST : 0;
  if (want == 0 && ref_.at(a.node).type == 'd') want = EPERM;
  if (!Outcome(Err(link(a.path.c_str(), b.path.c_str())), want, "link " + a.path + " " + b.path)) {
    return;
  }
  ref_.at(b.parent).kids[b.name] = a.node;
  ref_.at(a.node).nlink++;
}

void MountModel::OpUnlink() {
  const Target t = PickTarget(80);
  int want = t.err ? t.err : t.node == 0 ? ENOENT : 0;
  if (want == 0 && ref_.at(t.node).type == 'd') want = EISDIR;
  if (!Outcome(Err(unlink(t.path.c_str())), want, "unlink " + t.path)) return;
  ref_.at(t.parent).kids.erase(t.name);
  ref_.DropLink(t.node);
}

void MountModel::OpRmdir() {
  const Target t = PickTarget(80);
  int want = t.err ? t.err : t.node == 0 ? ENOENT : 0;
  if (want == 0) {
    const RefNode& n = ref_.at(t.node);
    want = n.type != 'd' ? ENOTDIR : n.kids.empty() ? 0 : ENOTEMPTY;
  }
  if (!Outcome(Err(rmdir(t.path.c_str())), want, "rmdir " + t.path)) return;
  ref_.at(t.parent).kids.erase(t.name);
  ref_.DropLink(t.node);
}

void MountModel::OpSymlink() {
  const Target t = PickTarget(20);
  const std::string target = "t/" + std::to_string(Pick(1000));
  const int want = t.err ? t.err : t.node ? EEXIST : 0;
  if (!Outcome(Err(symlink(target.c_str(), t.path.c_str())), want, "symlink " + t.path)) return;
  RefNode n;
  n.type = 'l';
  n.target = target;
  n.mode = 0777;
  ref_.Add(t.parent, t.name, n);
}

void MountModel::OpReadlink() {
  const Target t = PickTarget(80);
  int want = t.err ? t.err : t.node == 0 ? ENOENT : 0;
  if (want == 0 && ref_.at(t.node).type != 'l') want = EINVAL;
  char buf[256];
  const ssize_t r = readlink(t.path.c_str(), buf, sizeof buf);
  if (!Outcome(Err(r), want, "readlink " + t.path)) return;
  EXPECT_EQ(std::string(buf, static_cast<size_t>(r)), ref_.at(t.node).target) << t.path;
}

void MountModel::OpChmod() {
  const Target t = RootOr(85);
  const uint32_t mode = static_cast<uint32_t>(Pick(01000));
  const int want = FollowErrno(t);
  if (Outcome(Err(chmod(t.path.c_str(), mode)), want, "chmod " + t.path)) ref_.at(t.node).mode = mode;
}

void MountModel::OpXattr() {
  const Target t = RootOr(85);
  const int base = FollowErrno(t);
  const std::string name = "user.k" + std::to_string(Pick(4));
  const bool has = base == 0 && ref_.at(t.node).xattrs.count(name) != 0;
  const char* p = t.path.c_str();
  switch (Pick(4)) {
    case 0: {
      const int flags = static_cast<int>(Pick(3));  // 0, XATTR_CREATE, XATTR_REPLACE
      const std::string value = RandomBytes(Pick(100));
      const int want = base                              ? base
                       : flags == XATTR_CREATE && has    ? EEXIST
                       : flags == XATTR_REPLACE && !has ? ENODATA
                                                         : 0;
      if (Outcome(Err(setxattr(p, name.c_str(), value.data(), value.size(), flags)), want,
                  "setxattr " + t.path + " " + name + " flags " + std::to_string(flags))) {
        ref_.at(t.node).xattrs[name] = value;
      }
      return;
    }
    case 1: {
      char buf[256];
      const ssize_t r = getxattr(p, name.c_str(), buf, sizeof buf);
      if (Outcome(Err(r), base ? base : has ? 0 : ENODATA, "getxattr " + t.path + " " + name)) {
        EXPECT_EQ(std::string(buf, static_cast<size_t>(r)), ref_.at(t.node).xattrs[name]);
      }
      return;
    }
    case 2: {
      char buf[1024];
      const ssize_t r = listxattr(p, buf, sizeof buf);
      if (!Outcome(Err(r), base, "listxattr " + t.path)) return;
      std::set<std::string> got, want;
      for (ssize_t i = 0; i < r; i += static_cast<ssize_t>(std::strlen(buf + i)) + 1) got.insert(buf + i);
      for (const auto& [k, v] : ref_.at(t.node).xattrs) want.insert(k);
      EXPECT_EQ(got, want) << "listxattr " << t.path;
      return;
    }
    default:
      if (Outcome(Err(removexattr(p, name.c_str())), base ? base : has ? 0 : ENODATA,
                  "removexattr " + t.path + " " + name)) {
        ref_.at(t.node).xattrs.erase(name);
      }
  }
}

void MountModel::OpReaddir() {
  const Target t = RootOr(70);
  int want = FollowErrno(t);
  if (want == 0 && ref_.at(t.node).type != 'd') want = ENOTDIR;
  std::map<std::string, unsigned> got;
  if (!Outcome(ListDir(t.path, t.node == 1, &got), want, "readdir " + t.path)) return;
  std::map<std::string, unsigned> expected;
  for (const auto& [name, kid] : ref_.at(t.node).kids) expected[name] = DType(ref_.at(kid).type);
  EXPECT_EQ(got, expected) << "readdir " << t.path << " (names -> d_type)";
}

void MountModel::OpFstat() {
  Fd* f = RandomFd();
  if (f == nullptr) return;
  struct stat st;
  if (!Outcome(Err(fstat(f->fd, &st)), 0, "fstat fd " + std::to_string(f->fd))) return;
  const RefNode& n = ref_.at(f->node);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), n.data.size()) << "fstat size";
  EXPECT_EQ(st.st_nlink, n.nlink) << "fstat nlink";
  EXPECT_EQ(st.st_mode & 07777, n.mode) << "fstat mode";
}

void MountModel::OpFsync() {
  Fd* f = RandomFd();
  if (f == nullptr) return;
  const bool data_only = Chance(30);
  const int got = Err(data_only ? fdatasync(f->fd) : fsync(f->fd));
  if (Outcome(got, 0, std::string(data_only ? "fdatasync" : "fsync") + " node " + std::to_string(f->node))) {
    RefTree::MakeDurable(ref_.at(f->node));
  }
}

void MountModel::OpClose() {
  if (fds_.empty()) return;
  const size_t i = Pick(fds_.size());
  const Fd f = fds_[i];
  fds_.erase(fds_.begin() + static_cast<long>(i));
  RefNode& n = ref_.at(f.node);
  if (--n.open == 0 && n.nlink == 0) ref_.nodes.erase(f.node);
  Outcome(Err(close(f.fd)), 0, "close fd " + std::to_string(f.fd));
}

// A store through a shared writable mapping of a descriptor opened O_RDWR (with O_APPEND too,
// now and then): the kernel writes the page back later, at its offset, through some handle of
// the file; msync now and then.
void MountModel::OpMmap() {
  Fd* f = RandomFd();
  if (f == nullptr || !f->readable || ref_.at(f->node).data.empty()) return;
  const uint64_t size = ref_.at(f->node).data.size();
  const uint64_t pos = Pick(size), len = 1 + Pick(std::min<uint64_t>(size - pos, 20000));
  const uint64_t map_pos = pos & ~uint64_t{4095}, map_len = pos + len - map_pos;
  const std::string what = "mmap store " + std::to_string(len) + " at " + std::to_string(pos) +
                           " node " + std::to_string(f->node) + (f->append ? " (O_APPEND fd)" : "");
  void* m = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, static_cast<off_t>(map_pos));
  if (!Outcome(m == MAP_FAILED ? errno : 0, 0, what)) return;
  const std::string piece = RandomBytes(len);
  std::memcpy(static_cast<char*>(m) + (pos - map_pos), piece.data(), len);
  if (Chance(50)) {
    EXPECT_EQ(ErrName(Err(msync(m, map_len, MS_SYNC))), ErrName(0)) << "msync";
  }
  EXPECT_EQ(munmap(m, map_len), 0);
  ref_.Write(f->node, pos, piece);
}

// Up to 1.5 s without operations: the mount's background work (the commit of open files every
// 5 s, closed files settling into slices or packs, compaction) runs, and a crash may hit it.
void MountModel::OpPause() {
  const uint64_t ms = Pick(1500);
  Note("pause " + std::to_string(ms) + " ms");
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void MountModel::Step(uint64_t op_no) {
  using Op = void (MountModel::*)();
  static const struct {
    const char* name;
    int weight;
    Op op;
  } kOps[] = {{"mkdir", 60, &MountModel::OpMkdir},       {"open", 100, &MountModel::OpOpen},
              {"write", 170, &MountModel::OpWrite},      {"read", 80, &MountModel::OpRead},
              {"truncate", 50, &MountModel::OpTruncate}, {"rename", 90, &MountModel::OpRename},
              {"link", 40, &MountModel::OpLink},         {"unlink", 60, &MountModel::OpUnlink},
              {"rmdir", 40, &MountModel::OpRmdir},       {"symlink", 30, &MountModel::OpSymlink},
              {"readlink", 20, &MountModel::OpReadlink}, {"chmod", 30, &MountModel::OpChmod},
              {"xattr", 60, &MountModel::OpXattr},       {"readdir", 40, &MountModel::OpReaddir},
              {"fstat", 20, &MountModel::OpFstat},       {"fsync", 50, &MountModel::OpFsync},
              {"close", 60, &MountModel::OpClose},       {"fallocate", 25, &MountModel::OpFallocate},
              {"copy_file_range", 25, &MountModel::OpCopyRange}, {"pause", 4, &MountModel::OpPause},
              {"mmap", 25, &MountModel::OpMmap}};
  static const int kTotal = [] {
    int t = 0;
    for (const auto& o : kOps) t += o.weight;
    return t;
  }();
  Note("op " + std::to_string(op_no));
  const uint64_t r = Pick(kTotal + 8);  // 4 in kTotal + 8 a clean remount, 4 a kill -9
  if (r >= kTotal) return Remount(/*crash=*/r >= kTotal + 4);
  int64_t left = static_cast<int64_t>(r);
  for (const auto& o : kOps) {
    if ((left -= o.weight) < 0) {
      counts.ops[o.name]++;
      return (this->*o.op)();
    }
  }
}

namespace {

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 0) : fallback;
}

std::string FolioBinary() {
  const char* env = std::getenv("FOLIO_BINARY");
  return env != nullptr && *env != '\0' ? env : FOLIO_BINARY_PATH;
}

TEST(FsMountModelTest, RandomSyscallsThroughTheMountWithRemountsAndKill9) {
  if (Status s = CheckFuseDevice(); !s.ok()) GTEST_SKIP() << s.ToString();
  umask(0);
  const uint64_t seed = TestSeed();
  const uint64_t ops = ModelOps(2500);
  const uint64_t budget_s = EnvU64("FOLIO_MODEL_SECONDS", 90);
  FOLIO_SEED_TRACE(seed);
  std::printf("fs mount model: seed %llu (FOLIO_SEED=%llu to repeat), up to %llu operations\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(ops));
  const auto t0 = std::chrono::steady_clock::now();
  MountModel m(seed, FolioBinary());
  ASSERT_NO_FATAL_FAILURE(m.Setup());
  uint64_t done = 0;
  for (; done < ops; ++done) {
    SCOPED_TRACE("operation " + std::to_string(done));
    m.Step(done);
    if (::testing::Test::HasFailure()) return m.PrintRecent();
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(budget_s)) {
      std::printf("stopped after %llu operations: the %llu s budget is spent\n",
                  static_cast<unsigned long long>(done + 1), static_cast<unsigned long long>(budget_s));
      break;
    }
  }
  {
    SCOPED_TRACE("the final clean remount and kill -9");
    m.Remount(false);
    if (!::testing::Test::HasFailure()) m.Remount(true);
    if (::testing::Test::HasFailure()) return m.PrintRecent();
  }
  std::string per_op;
  uint64_t total = 0;
  for (const auto& [name, n] : m.counts.ops) {
    per_op += " " + name + " " + std::to_string(n);
    total += n;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fs mount model: %llu operations in %.1f s (%s), %llu of them expecting an error; "
              "%llu clean remounts, %llu kill -9 crashes, %llu mounts with writeback_cache, %llu "
              "with meta_sync=fsync, %llu fsck runs, all clean\n",
              static_cast<unsigned long long>(total), secs, per_op.substr(1).c_str(),
              static_cast<unsigned long long>(m.counts.errors_expected),
              static_cast<unsigned long long>(m.counts.remounts),
              static_cast<unsigned long long>(m.counts.crashes),
              static_cast<unsigned long long>(m.counts.writeback_mounts),
              static_cast<unsigned long long>(m.counts.meta_sync_fsync_mounts),
              static_cast<unsigned long long>(m.counts.fsck_runs));
}

}  // namespace
}  // namespace folio::fuse::test
