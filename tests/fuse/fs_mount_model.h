// The harness of the FS model test through the mount (fs_mount_model_test.cc, which says what
// it checks): the volume and its `folio fs mount` child, the random choice of paths, the
// comparison of one call's outcome with the reference tree's, clean remounts and kill -9 with
// fsck, and the comparison of the whole mounted tree with the reference after each. The
// operations themselves (MountModel::Op*) are in the test file.
//
// Thread safety: none (one test thread).
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mount_child.h"
#include "mount_model_ref.h"

namespace folio::fuse::test {

inline int Err(long rc) { return rc < 0 ? errno : 0; }
// "ENOENT" for ENOENT, "success" for 0.
std::string ErrName(int e);
// " O_RDWR|O_CREAT|..." for the flags the model opens with.
std::string OpenFlagNames(int flags);
// Names and d_types of a directory, without "." and ".." (and the mount root's .stats).
int ListDir(const std::string& path, bool root, std::map<std::string, unsigned>* out);
inline unsigned DType(char type) { return type == 'd' ? DT_DIR : type == 'l' ? DT_LNK : DT_REG; }

// An open descriptor on the mount and the reference node it is a file description of.
struct Fd {
  int fd = -1;
  uint64_t node = 0;
  bool append = false;
  bool readable = true;  // O_RDWR, not O_WRONLY
};

// A path operated on and what the reference resolves it to.
struct Target {
  std::string path;
  int err = 0;  // errno of resolving the parent (ENOENT, ENOTDIR); 0 when it is a directory
  uint64_t parent = 1;
  std::string name;
  uint64_t node = 0;  // 0: no entry of that name
};

// What a run did, for its summary line.
struct Counts {
  std::map<std::string, uint64_t> ops;
  uint64_t errors_expected = 0, remounts = 0, crashes = 0, fsck_runs = 0, writeback_mounts = 0,
           meta_sync_fsync_mounts = 0;
};

// One run: the volume (in a temp dir removed when the run passes), its mount, the reference
// tree and the open descriptors. Step runs one random operation (or a remount or a crash).
class MountModel {
 public:
  MountModel(uint64_t seed, std::string folio) : rng_(seed), folio_(std::move(folio)) {}
  ~MountModel();
  void Setup();
  void Step(uint64_t op_no);
  void Remount(bool crash);
  void PrintRecent() const;
  Counts counts;

 private:
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }
  std::string RandomName() { return "n" + std::to_string(Pick(12)); }
  std::string RandomBytes(size_t n);
  std::string DirPath(uint64_t id) {
    const RefNode& d = ref_.at(id);
    return id == 1 ? mnt_ : DirPath(d.parent) + "/" + d.name;
  }
  uint64_t RandomDir();
  Target PickTarget(int existing_percent);
  Target RootOr(int existing_percent) {
    if (!Chance(5)) return PickTarget(existing_percent);
    Target t;
    t.path = mnt_;
    t.node = 1;
    return t;
  }
  // Compares a call's errno with the reference's; true when both say it succeeded.
  bool Outcome(int got, int want, const std::string& what) {
    Note(what + " -> " + ErrName(got));
    if (want != 0) counts.errors_expected++;
    EXPECT_EQ(ErrName(got), ErrName(want)) << what;
    return got == 0 && want == 0;
  }
  void Note(const std::string& line);
  Fd* RandomFd() { return fds_.empty() ? nullptr : &fds_[Pick(fds_.size())]; }
  int FollowErrno(const Target& t) {  // a call that follows a final symlink (all dangle)
    return t.err ? t.err : t.node == 0 || ref_.at(t.node).type == 'l' ? ENOENT : 0;
  }

  void OpMkdir();
  void OpOpen();
  void OpWrite();
  void OpRead();
  void OpTruncate();
  void OpRename();
  void OpLink();
  void OpUnlink();
  void OpRmdir();
  void OpSymlink();
  void OpReadlink();
  void OpChmod();
  void OpXattr();
  void OpReaddir();
  void OpFstat();
  void OpFsync();
  void OpClose();
  void OpFallocate();
  void OpCopyRange();
  void OpPause();
  void OpMmap();
  void Mount();
  void Fsck();
  void CompareTree(bool crashed);
  void CompareNode(uint64_t id, const std::string& path, bool crashed);
  void CompareContent(uint64_t id, const std::string& path, bool crashed);
  void CompareXattrs(const RefNode& n, const std::string& path);

  std::mt19937_64 rng_;
  bool writeback_ = false;          // the current mount has writeback_cache
  bool crashed_writeback_ = false;  // the mount before it had (what a crash compare judges)
  const std::string folio_;
  std::string tmp_, meta_, mnt_;
  std::unique_ptr<MountChild> mount_;
  RefTree ref_;
  std::vector<Fd> fds_;
  std::map<uint64_t, ino_t> ino_of_;
  std::map<ino_t, uint64_t> node_of_;
  std::deque<std::string> recent_;
  const bool trace_ = std::getenv("FOLIO_MODEL_TRACE") != nullptr;
};

}  // namespace folio::fuse::test
