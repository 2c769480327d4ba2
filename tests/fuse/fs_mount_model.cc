#include "fs_mount_model.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace folio::fuse::test {
namespace {

char TypeOf(mode_t m) { return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISREG(m) ? 'f' : '?'; }

// Reads the whole file at path; returns the errno of the first failing call.
int ReadAll(const std::string& path, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  out->clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(out->size()));
    if (n < 0) {
      const int e = errno;
      close(fd);
      return e;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return close(fd) == 0 ? 0 : errno;
}

}  // namespace

std::string ErrName(int e) {
  if (e == 0) return "success";
  const char* n = strerrorname_np(e);
  return n != nullptr ? n : std::to_string(e);
}

// Names and d_types of a directory, without "." and ".." (and the mount root's .stats).
int ListDir(const std::string& path, bool root, std::map<std::string, unsigned>* out) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return errno;
  out->clear();
  errno = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && !(root && name == ".stats")) (*out)[name] = e->d_type;
  }
  const int err = errno;
  closedir(d);
  return err;
}

std::string OpenFlagNames(int flags) {
  std::string s = (flags & O_ACCMODE) == O_WRONLY ? " O_WRONLY" : " O_RDWR";
  if (flags & O_CREAT) s += "|O_CREAT";
  if (flags & O_EXCL) s += "|O_EXCL";
  if (flags & O_TRUNC) s += "|O_TRUNC";
  if (flags & O_APPEND) s += "|O_APPEND";
  return s;
}

MountModel::~MountModel() {
  for (const Fd& f : fds_) close(f.fd);
  mount_.reset();  // kills and detaches a mount still running
  if (!tmp_.empty() && !::testing::Test::HasFailure()) std::filesystem::remove_all(tmp_);
  if (!tmp_.empty() && ::testing::Test::HasFailure()) std::printf("kept %s\n", tmp_.c_str());
}

void MountModel::Note(const std::string& line) {
  if (trace_) std::fprintf(stderr, "  %s\n", line.c_str());
  recent_.push_back(line);
  if (recent_.size() > 25) recent_.pop_front();
}

void MountModel::PrintRecent() const {
  std::printf("last operations:\n");
  for (const std::string& l : recent_) std::printf("  %s\n", l.c_str());
  if (mount_ != nullptr) std::printf("mount log:%s\n", mount_->LogTail().c_str());
}

std::string MountModel::RandomBytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng_();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

uint64_t MountModel::RandomDir() {
  std::vector<uint64_t> dirs;
  for (const auto& [id, n] : ref_.nodes) {
    if (n.type == 'd') dirs.push_back(id);
  }
  return dirs[Pick(dirs.size())];
}

// An existing entry (existing_percent of the time, when there is one) or a random name in a
// random directory; now and then one component more, so the parent is a missing name, a file or
// a dangling symlink (every target is "t/N", and no directory holds a "t").
Target MountModel::PickTarget(int existing_percent) {
  Target t;
  std::vector<std::pair<uint64_t, std::string>> entries;
  if (Chance(existing_percent)) {
    for (const auto& [id, n] : ref_.nodes) {
      for (const auto& [name, kid] : n.kids) entries.emplace_back(id, name);
    }
  }
  if (!entries.empty()) {
    std::tie(t.parent, t.name) = entries[Pick(entries.size())];
  } else {
    t.parent = RandomDir();
    t.name = RandomName();
  }
  t.path = DirPath(t.parent) + "/" + t.name;
  t.node = ref_.Lookup(t.parent, t.name);
  if (Chance(6)) {
    const uint64_t via = t.node;
    t.name = RandomName();
    t.path += "/" + t.name;
    t.node = 0;
    if (via == 0 || ref_.at(via).type == 'l') {
      t.err = ENOENT;
    } else if (ref_.at(via).type == 'f') {
      t.err = ENOTDIR;
    } else {
      t.parent = via;
      t.node = ref_.Lookup(via, t.name);
    }
  }
  return t;
}

void MountModel::Mount() {
  std::vector<std::string> args = {"--cache", "64M"};
  std::string options;
  crashed_writeback_ = writeback_;  // the compare after this mount judges the previous one
  writeback_ = Chance(30);
  if (writeback_) {
    options = "writeback_cache";
    counts.writeback_mounts++;
  }
  // The kill -9 contract is the same: the WAL is in the kernel's page cache either way.
  if (Chance(50)) {
    options += std::string(options.empty() ? "" : ",") + "meta_sync=fsync";
    counts.meta_sync_fsync_mounts++;
  }
  if (!options.empty()) args.insert(args.end(), {"-o", options});
  Note("mount" + (options.empty() ? std::string() : " -o " + options));
  Status s = mount_->Start(args);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void MountModel::Fsck() {
  counts.fsck_runs++;
  const CommandResult r = RunCommand({folio_, "fs", "fsck", meta_, "--json"});
  ASSERT_EQ(r.code, 0) << "folio fs fsck " << meta_ << ":\n" << r.output;
  ASSERT_NE(r.output.find("\"clean\": true"), std::string::npos) << r.output;
}

void MountModel::Setup() {
  char tmpl[] = "/tmp/folio-mount-model-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
  tmp_ = tmpl;
  meta_ = "sqlite:" + tmp_ + "/meta.db";
  mnt_ = tmp_ + "/mnt";
  ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
  // Small blocks make most files span several; packing is at most half a block.
  const bool small = Chance(50);
  const std::string block = small ? "64K" : "4M", pack = Chance(25) ? "0" : small ? "32K" : "64K";
  std::printf("volume: --block-size %s --pack-below %s in %s\n", block.c_str(), pack.c_str(),
              tmp_.c_str());
  const CommandResult f = RunCommand({folio_, "fs", "format", meta_, "model", "--storage",
                                      "dir:" + tmp_ + "/store", "--block-size", block,
                                      "--pack-below", pack});
  ASSERT_EQ(f.code, 0) << f.output;
  mount_ = std::make_unique<MountChild>(folio_, meta_, mnt_, tmp_ + "/mount.log");
  Mount();
  struct stat st;
  ASSERT_EQ(lstat(mnt_.c_str(), &st), 0);
  ref_.at(1).mode = st.st_mode & 07777;
}

// A clean remount (every fd closed, umount, the server exits 0) or a crash (kill -9, the fds
// dropped); then fsck, mount, and the whole tree compared.
void MountModel::Remount(bool crash) {
  Note(crash ? "kill -9 of the mount" : "clean remount");
  if (crash) {
    counts.crashes++;
    Status s = mount_->Kill9();
    for (const Fd& f : fds_) close(f.fd);  // ENOTCONN: the connection is gone
    ASSERT_TRUE(s.ok()) << s.ToString();
  } else {
    counts.remounts++;
    for (const Fd& f : fds_) EXPECT_EQ(ErrName(Err(close(f.fd))), ErrName(0)) << "close";
    Status s = mount_->Stop();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  fds_.clear();
  for (auto it = ref_.nodes.begin(); it != ref_.nodes.end();) {
    it->second.open = 0;
    if (it->second.nlink == 0) {
      it = ref_.nodes.erase(it);  // unlinked while open: freed with the last close or the crash
      continue;
    }
    if (!crash && it->second.type == 'f') RefTree::MakeDurable(it->second);
    ++it;
  }
  ASSERT_NO_FATAL_FAILURE(Fsck());
  ASSERT_NO_FATAL_FAILURE(Mount());
  CompareTree(crash);
}

void MountModel::CompareTree(bool crashed) {
  ino_of_.clear();
  node_of_.clear();
  CompareNode(1, mnt_, crashed);
}

void MountModel::CompareNode(uint64_t id, const std::string& path, bool crashed) {
  struct stat st;
  ASSERT_EQ(ErrName(Err(lstat(path.c_str(), &st))), ErrName(0)) << "lstat " << path;
  RefNode& n = ref_.at(id);
  EXPECT_EQ(TypeOf(st.st_mode), n.type) << path;
  if (n.type != 'l') {
    EXPECT_EQ(st.st_mode & 07777, n.mode) << path << ": mode";
  }
  EXPECT_EQ(st.st_nlink, n.nlink) << path << ": nlink";
  const auto [ino, fresh] = ino_of_.emplace(id, st.st_ino);
  EXPECT_EQ(ino->second, st.st_ino) << path << ": names of one file show two inode numbers";
  const auto [node, fresh_ino] = node_of_.emplace(st.st_ino, id);
  EXPECT_EQ(node->second, id) << path << ": two files show one inode number";
  if (!fresh) return;  // a hard link of a file already compared
  CompareXattrs(n, path);
  if (n.type == 'l') {
    char buf[256];
    const ssize_t r = readlink(path.c_str(), buf, sizeof buf);
    ASSERT_GT(r, 0) << "readlink " << path << ": " << std::strerror(errno);
    EXPECT_EQ(std::string(buf, static_cast<size_t>(r)), n.target) << path;
  } else if (n.type == 'f') {
    CompareContent(id, path, crashed);
  } else {
    std::map<std::string, unsigned> got, want;
    ASSERT_EQ(ErrName(ListDir(path, id == 1, &got)), ErrName(0)) << "readdir " << path;
    for (const auto& [name, kid] : n.kids) want[name] = DType(ref_.at(kid).type);
    EXPECT_EQ(got, want) << "readdir " << path << " (names -> d_type)";
    for (const auto& [name, kid] : n.kids) CompareNode(kid, path + "/" + name, crashed);
  }
}

void MountModel::CompareContent(uint64_t id, const std::string& path, bool crashed) {
  RefNode& n = ref_.at(id);
  std::string got;
  ASSERT_EQ(ErrName(ReadAll(path, &got)), ErrName(0)) << "read " << path;
  if (!crashed) {
    ASSERT_EQ(got.size(), n.data.size()) << path << ": size";
    const auto diff = std::mismatch(got.begin(), got.end(), n.data.begin());
    ASSERT_TRUE(diff.first == got.end())
        << path << ": content differs first at byte " << (diff.first - got.begin());
    return;
  }
  const std::string problem = RefTree::CrashContentProblem(n, got, crashed_writeback_);
  ASSERT_EQ(problem, "") << path << " (node " << id << ") after kill -9 (" << n.since.size()
                         << " writes since its last fsync)";
  n.data = got;
  RefTree::MakeDurable(n);
}

void MountModel::CompareXattrs(const RefNode& n, const std::string& path) {
  char names[4096];
  const ssize_t r = llistxattr(path.c_str(), names, sizeof names);
  ASSERT_GE(r, 0) << "llistxattr " << path << ": " << std::strerror(errno);
  std::map<std::string, std::string> got;
  for (ssize_t i = 0; i < r; i += static_cast<ssize_t>(std::strlen(names + i)) + 1) {
    char value[256];
    const ssize_t v = lgetxattr(path.c_str(), names + i, value, sizeof value);
    ASSERT_GE(v, 0) << "lgetxattr " << path << " " << names + i << ": " << std::strerror(errno);
    got[names + i] = std::string(value, static_cast<size_t>(v));
  }
  EXPECT_EQ(got, n.xattrs) << path << ": xattrs";
}

}  // namespace folio::fuse::test
