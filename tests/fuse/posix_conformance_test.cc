// POSIX conformance through a real Folio FS mount, written from POSIX and the Linux man pages
// (open(2), mkdir(2), rmdir(2), unlink(2), rename(2), link(2), symlink(2), readlink(2),
// truncate(2), chmod(2), chown(2), utimensat(2), xattr(7), flock(2), fcntl(2), lseek(2),
// inode(7)): every operation's error codes, the same calls as an unprivileged user (nobody,
// through the kernel's checks and then Folio's), sticky and setgid directories, O_EXCL, link
// counts, which timestamps each operation changes on the file and on its parent, sparse files
// and st_blocks, truncate both ways, and locks between two processes.
//
// One volume (sqlite: + dir: store) is formatted and mounted by this build's `folio` for the
// whole suite; each test works in its own directory; fsck must be clean after the unmount.
// Every check is counted under the operation it exercises, and the suite prints the counts.
// Needs root (the unprivileged checks switch to uid 65534 in a child process) and /dev/fuse.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "fuse/mount_point.h"
#include "mount_child.h"

namespace folio::fuse::test {
namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kOtherGroup = 4242;  // a group nobody is put in for the setgid checks

std::map<std::string, int>& Counts() {
  static std::map<std::string, int> counts;
  return counts;
}

// In a child running as another user, checks are reported through this pipe ("op\tmessage",
// empty message: passed) instead of through gtest; the parent counts them and fails the test.
int g_report_fd = -1;

void Record(const std::string& op, const std::string& failure) {
  if (g_report_fd >= 0) {
    const std::string line = op + "\t" + failure + "\n";  // failure messages have no newline
    (void)!write(g_report_fd, line.data(), line.size());
    return;
  }
  Counts()[op]++;
  if (!failure.empty()) ADD_FAILURE() << op << ": " << failure;
}

std::string ErrName(int e) {
  if (e == 0) return "success";
  const char* n = strerrorname_np(e);
  return n ? n : std::to_string(e);
}

void CheckErrno(const std::string& op, int got, int want, const std::string& what) {
  Record(op, got == want ? "" : what + ": " + ErrName(got) + ", want " + ErrName(want));
}

void CheckTrue(const std::string& op, bool ok, const std::string& what) {
  Record(op, ok ? "" : what);
}

// CHECK_ERR(op, call, want): the call fails with errno want (0: it succeeds).
#define CHECK_ERR(op, call, want)                      \
  do {                                                 \
    errno = 0;                                         \
    const long rc_ = static_cast<long>(call);          \
    const int e_ = rc_ < 0 ? errno : 0;                \
    CheckErrno(op, e_, want, #call);                   \
  } while (0)
#define CHECK_THAT(op, cond) CheckTrue(op, (cond), #cond)

bool After(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}
bool Same(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}
struct stat Stat(const std::string& p) {
  struct stat st{};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p << ": " << std::strerror(errno);
  return st;
}
void WriteFile(const std::string& p, const std::string& data, mode_t mode = 0644) {
  const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  ASSERT_GE(fd, 0) << p << ": " << std::strerror(errno);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(close(fd), 0);
  ASSERT_EQ(chmod(p.c_str(), mode), 0);
}
std::string ReadAll(const std::string& p) {
  std::string out;
  const int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return "<" + ErrName(errno) + ">";
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}
// The clock must move past the last timestamp before an operation whose times are compared.
void Tick() { std::this_thread::sleep_for(std::chrono::milliseconds(15)); }

class PosixConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!CheckFuseDevice().ok() || geteuid() != 0) return;
    char tmpl[] = "/tmp/folio-posix-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
    tmp_ = new std::string(tmpl);
    ASSERT_EQ(chmod(tmp_->c_str(), 0755), 0);  // nobody reaches the mount point through it
    meta_ = new std::string("sqlite:" + *tmp_ + "/meta.db");
    const std::string mnt = *tmp_ + "/mnt";
    ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
    const CommandResult f = RunCommand({FOLIO_BINARY_PATH, "fs", "format", *meta_, "posix",
                                        "--storage", "dir:" + *tmp_ + "/store"});
    ASSERT_EQ(f.code, 0) << f.output;
    mount_ = new MountChild(FOLIO_BINARY_PATH, *meta_, mnt, *tmp_ + "/mount.log");
    // Timeouts of 0: every check sees the server's answer, not the kernel's cached one.
    Status s = mount_->Start({"--cache", "64M", "-o", "attr_timeout=0,entry_timeout=0"});
    ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << mount_->LogTail();
    mnt_ = new std::string(mnt);
  }

  static void TearDownTestSuite() {
    if (mount_ != nullptr) {
      Status s = mount_->Stop();
      EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << mount_->LogTail();
      const CommandResult r = RunCommand({FOLIO_BINARY_PATH, "fs", "fsck", *meta_, "--json"});
      EXPECT_EQ(r.code, 0) << r.output;
      EXPECT_NE(r.output.find("\"clean\": true"), std::string::npos) << r.output;
      delete mount_;
      mount_ = nullptr;
    }
    int total = 0;
    std::printf("POSIX conformance checks per operation:\n");
    for (const auto& [op, n] : Counts()) {
      std::printf("  %-28s %4d\n", op.c_str(), n);
      total += n;
    }
    std::printf("  %-28s %4d\n", "total", total);
    if (tmp_ != nullptr) (void)RunCommand({"/bin/rm", "-rf", *tmp_});
  }

  void SetUp() override {
    if (mnt_ == nullptr) GTEST_SKIP() << "needs root and /dev/fuse";
    dir_ = *mnt_ + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0) << std::strerror(errno);
  }

  std::string P(const std::string& name) const { return dir_ + "/" + name; }

  // Runs fn in a child process as uid (primary group uid's, supplementary `groups`); its
  // checks come back through a pipe and count here.
  void AsUser(uid_t uid, std::vector<gid_t> groups, const std::function<void()>& fn) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      g_report_fd = fds[1];
      if (setgroups(groups.size(), groups.data()) != 0 || setresgid(uid, uid, uid) != 0 ||
          setresuid(uid, uid, uid) != 0) {
        Record("setup", std::string("switching to uid ") + std::to_string(uid) + ": " + std::strerror(errno));
        _exit(1);
      }
      fn();
      _exit(0);
    }
    close(fds[1]);
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) all.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child as uid " << uid;
    size_t at = 0;
    while (at < all.size()) {
      const size_t end = all.find('\n', at);
      const std::string line = all.substr(at, end - at);
      at = end == std::string::npos ? all.size() : end + 1;
      const size_t tab = line.find('\t');
      Record(line.substr(0, tab) + (uid == 0 ? " (2nd process)" : " (as nobody)"),
             tab == std::string::npos ? "bad report" : line.substr(tab + 1));
    }
  }

  static std::string* tmp_;
  static std::string* meta_;
  static std::string* mnt_;
  static MountChild* mount_;
  std::string dir_;
};

std::string* PosixConformance::tmp_ = nullptr;
std::string* PosixConformance::meta_ = nullptr;
std::string* PosixConformance::mnt_ = nullptr;
MountChild* PosixConformance::mount_ = nullptr;

TEST_F(PosixConformance, Open) {
  WriteFile(P("f"), "abc");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(symlink("loop2", P("loop1").c_str()), 0);
  ASSERT_EQ(symlink("loop1", P("loop2").c_str()), 0);
  ASSERT_EQ(symlink("f", P("sym").c_str()), 0);
  CHECK_ERR("open", open(P("f").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
  CHECK_ERR("open", open(P("sym").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
  CHECK_ERR("open", open(P("missing").c_str(), O_RDONLY), ENOENT);
  CHECK_ERR("open", open(P("nodir/x").c_str(), O_CREAT | O_WRONLY, 0644), ENOENT);
  CHECK_ERR("open", open(P("d").c_str(), O_WRONLY), EISDIR);
  CHECK_ERR("open", open(P("d").c_str(), O_RDWR), EISDIR);
  CHECK_ERR("open", open(P("f/x").c_str(), O_RDONLY), ENOTDIR);
  CHECK_ERR("open", open(P("f").c_str(), O_RDONLY | O_DIRECTORY), ENOTDIR);
  CHECK_ERR("open", open(P("loop1").c_str(), O_RDONLY), ELOOP);
  CHECK_ERR("open", open(P("sym").c_str(), O_RDONLY | O_NOFOLLOW), ELOOP);
  CHECK_ERR("open", open(P(std::string(256, 'n')).c_str(), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
  const int fd255 = open(P(std::string(255, 'n')).c_str(), O_CREAT | O_WRONLY, 0644);
  CHECK_THAT("open", fd255 >= 0);
  if (fd255 >= 0) close(fd255);
  // O_TRUNC empties, O_APPEND writes at the end whatever the offset.
  int fd = open(P("f").c_str(), O_WRONLY | O_TRUNC);
  CHECK_THAT("open", fd >= 0 && Stat(P("f")).st_size == 0);
  if (fd >= 0) close(fd);
  WriteFile(P("f"), "abc");
  fd = open(P("f").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  CHECK_THAT("open", lseek(fd, 0, SEEK_SET) == 0 && write(fd, "de", 2) == 2);
  close(fd);
  CHECK_THAT("open", ReadAll(P("f")) == "abcde");
  // A read-only descriptor refuses writes; a write-only one refuses reads.
  fd = open(P("f").c_str(), O_RDONLY);
  CHECK_ERR("write", write(fd, "x", 1), EBADF);
  close(fd);
  fd = open(P("f").c_str(), O_WRONLY);
  char c;
  CHECK_ERR("read", read(fd, &c, 1), EBADF);
  close(fd);
}

TEST_F(PosixConformance, MkdirAndRmdir) {
  WriteFile(P("f"), "");
  const struct stat before = Stat(dir_);
  CHECK_ERR("mkdir", mkdir(P("a").c_str(), 0755), 0);
  CHECK_THAT("mkdir", Stat(dir_).st_nlink == before.st_nlink + 1);  // a's ".."
  CHECK_THAT("mkdir", Stat(P("a")).st_nlink == 2);
  CHECK_ERR("mkdir", mkdir(P("a").c_str(), 0755), EEXIST);
  CHECK_ERR("mkdir", mkdir(P("f").c_str(), 0755), EEXIST);
  CHECK_ERR("mkdir", mkdir(P("missing/b").c_str(), 0755), ENOENT);
  CHECK_ERR("mkdir", mkdir(P("f/b").c_str(), 0755), ENOTDIR);
  CHECK_ERR("mkdir", mkdir(P(std::string(256, 'm')).c_str(), 0755), ENAMETOOLONG);
  ASSERT_EQ(mkdir(P("a/sub").c_str(), 0755), 0);
  CHECK_ERR("rmdir", rmdir(P("a").c_str()), ENOTEMPTY);
  CHECK_ERR("rmdir", rmdir(P("f").c_str()), ENOTDIR);
  CHECK_ERR("rmdir", rmdir(P("missing").c_str()), ENOENT);
  CHECK_ERR("rmdir", rmdir(P("a/sub/.").c_str()), EINVAL);
  CHECK_ERR("rmdir", rmdir(P("a/sub").c_str()), 0);
  CHECK_ERR("rmdir", rmdir(P("a").c_str()), 0);
  CHECK_THAT("rmdir", Stat(dir_).st_nlink == before.st_nlink);
  CHECK_ERR("rmdir", access(P("a").c_str(), F_OK), ENOENT);
}

TEST_F(PosixConformance, UnlinkAndLinkCounts) {
  WriteFile(P("f"), "data");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  CHECK_ERR("link", link(P("f").c_str(), P("g").c_str()), 0);
  CHECK_THAT("link", Stat(P("f")).st_nlink == 2 && Stat(P("f")).st_ino == Stat(P("g")).st_ino);
  CHECK_ERR("link", link(P("f").c_str(), P("g").c_str()), EEXIST);
  CHECK_ERR("link", link(P("missing").c_str(), P("h").c_str()), ENOENT);
  CHECK_ERR("link", link(P("d").c_str(), P("dlink").c_str()), EPERM);
  CHECK_ERR("link", link(P("f").c_str(), "/tmp/folio-posix-exdev-link"), EXDEV);
  CHECK_ERR("unlink", unlink(P("d").c_str()), EISDIR);
  CHECK_ERR("unlink", unlink(P("missing").c_str()), ENOENT);
  CHECK_ERR("unlink", unlink(P("f/x").c_str()), ENOTDIR);
  CHECK_ERR("unlink", unlink(P("f").c_str()), 0);
  CHECK_THAT("unlink", Stat(P("g")).st_nlink == 1 && ReadAll(P("g")) == "data");
  // Unlinked while open: readable and writable through the descriptor until the last close.
  const int fd = open(P("g").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  CHECK_ERR("unlink", unlink(P("g").c_str()), 0);
  struct stat st{};
  CHECK_THAT("unlink", fstat(fd, &st) == 0 && st.st_nlink == 0);
  char buf[8] = {};
  CHECK_THAT("unlink", pwrite(fd, "DA", 2, 0) == 2 && pread(fd, buf, 4, 0) == 4 && std::string(buf) == "DAta");
  close(fd);
  CHECK_ERR("unlink", access(P("g").c_str(), F_OK), ENOENT);
}

TEST_F(PosixConformance, Rename) {
  WriteFile(P("f"), "F");
  WriteFile(P("g"), "G");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("d/sub").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("e").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("full").c_str(), 0755), 0);
  WriteFile(P("full/x"), "");
  CHECK_ERR("rename", rename(P("d").c_str(), P("d/sub/inner").c_str()), EINVAL);
  CHECK_ERR("rename", rename(P("e").c_str(), P("full").c_str()), ENOTEMPTY);
  CHECK_ERR("rename", rename(P("e").c_str(), P("f").c_str()), ENOTDIR);
  CHECK_ERR("rename", rename(P("f").c_str(), P("e").c_str()), EISDIR);
  CHECK_ERR("rename", rename(P("missing").c_str(), P("x").c_str()), ENOENT);
  CHECK_ERR("rename", rename(P("f").c_str(), P("missing/x").c_str()), ENOENT);
  CHECK_ERR("rename", rename(P("f").c_str(), "/tmp/folio-posix-exdev-rename"), EXDEV);
  CHECK_ERR("rename", renameat2(AT_FDCWD, P("f").c_str(), AT_FDCWD, P("g").c_str(), RENAME_NOREPLACE), EEXIST);
  CHECK_ERR("rename", renameat2(AT_FDCWD, P("f").c_str(), AT_FDCWD, P("none").c_str(), RENAME_EXCHANGE), ENOENT);
  CHECK_ERR("rename", renameat2(AT_FDCWD, P("f").c_str(), AT_FDCWD, P("g").c_str(), RENAME_EXCHANGE), 0);
  CHECK_THAT("rename", ReadAll(P("f")) == "G" && ReadAll(P("g")) == "F");
  // Over an existing file: the target's inode goes, the source's name goes.
  const ino_t src = Stat(P("f")).st_ino;
  CHECK_ERR("rename", rename(P("f").c_str(), P("g").c_str()), 0);
  CHECK_THAT("rename", Stat(P("g")).st_ino == src && access(P("f").c_str(), F_OK) != 0);
  // Two links of one file: rename(2) does nothing and both stay.
  ASSERT_EQ(link(P("g").c_str(), P("h").c_str()), 0);
  CHECK_ERR("rename", rename(P("g").c_str(), P("h").c_str()), 0);
  CHECK_THAT("rename", access(P("g").c_str(), F_OK) == 0 && Stat(P("h")).st_nlink == 2);
  // A directory across directories: both parents' link counts follow its "..".
  const nlink_t d_links = Stat(P("d")).st_nlink, e_links = Stat(P("e")).st_nlink;
  CHECK_ERR("rename", rename(P("d/sub").c_str(), P("e/sub").c_str()), 0);
  CHECK_THAT("rename", Stat(P("d")).st_nlink == d_links - 1 && Stat(P("e")).st_nlink == e_links + 1);
  // Over an empty directory.
  ASSERT_EQ(mkdir(P("empty").c_str(), 0755), 0);
  CHECK_ERR("rename", rename(P("e/sub").c_str(), P("empty").c_str()), 0);
  CHECK_ERR("rename", access(P("e/sub").c_str(), F_OK), ENOENT);
}

TEST_F(PosixConformance, SymlinkAndReadlink) {
  WriteFile(P("f"), "x");
  const std::string target = "some/where/" + std::string(200, 't');
  CHECK_ERR("symlink", symlink(target.c_str(), P("s").c_str()), 0);
  char buf[512] = {};
  CHECK_THAT("readlink", readlink(P("s").c_str(), buf, sizeof(buf)) == static_cast<ssize_t>(target.size()) &&
                             target == buf);
  CHECK_THAT("symlink", Stat(P("s")).st_size == static_cast<off_t>(target.size()) && S_ISLNK(Stat(P("s")).st_mode));
  CHECK_ERR("symlink", symlink("x", P("f").c_str()), EEXIST);
  CHECK_ERR("symlink", symlink("x", P("missing/s").c_str()), ENOENT);
  CHECK_ERR("readlink", readlink(P("f").c_str(), buf, sizeof(buf)), EINVAL);
  CHECK_ERR("readlink", readlink(P("missing").c_str(), buf, sizeof(buf)), ENOENT);
  // A dangling link: lstat works, stat does not; a path through it is ENOENT.
  ASSERT_EQ(symlink("nothing", P("dangling").c_str()), 0);
  struct stat st{};
  CHECK_ERR("symlink", stat(P("dangling").c_str(), &st), ENOENT);
  CHECK_ERR("symlink", lstat(P("dangling").c_str(), &st), 0);
}

TEST_F(PosixConformance, TruncateAndSparseFiles) {
  WriteFile(P("f"), std::string(10000, 'a'));
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  CHECK_ERR("truncate", truncate(P("f").c_str(), -1), EINVAL);
  CHECK_ERR("truncate", truncate(P("d").c_str(), 0), EISDIR);
  CHECK_ERR("truncate", truncate(P("missing").c_str(), 0), ENOENT);
  CHECK_ERR("truncate", truncate(P("f").c_str(), 3000), 0);
  CHECK_THAT("truncate", ReadAll(P("f")) == std::string(3000, 'a'));
  CHECK_ERR("truncate", truncate(P("f").c_str(), 9000), 0);
  CHECK_THAT("truncate", ReadAll(P("f")) == std::string(3000, 'a') + std::string(6000, '\0'));
  const int fd = open(P("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  CHECK_ERR("ftruncate", ftruncate(fd, 0), EINVAL);  // not open for writing
  close(fd);
  // A file with a hole of 64 MiB and 4 KiB of data: st_blocks counts the data, not the size.
  const int sp = open(P("sparse").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(sp, 0);
  ASSERT_EQ(pwrite(sp, std::string(4096, 'z').data(), 4096, 64 << 20), 4096);
  ASSERT_EQ(fsync(sp), 0);
  struct stat st{};
  ASSERT_EQ(fstat(sp, &st), 0);
  CHECK_THAT("sparse", st.st_size == (64 << 20) + 4096);
  CHECK_THAT("sparse", st.st_blocks > 0 && st.st_blocks <= 64);  // 512-byte units
  CHECK_THAT("lseek", lseek(sp, 0, SEEK_DATA) == (64 << 20));
  CHECK_THAT("lseek", lseek(sp, 0, SEEK_HOLE) == 0);
  CHECK_ERR("lseek", lseek(sp, (64 << 20) + 4096, SEEK_DATA), ENXIO);
  // Punching the data out reads zeros, size kept.
  CHECK_ERR("fallocate", fallocate(sp, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 64 << 20, 4096), 0);
  char buf[4096];
  CHECK_THAT("fallocate", pread(sp, buf, 4096, 64 << 20) == 4096 && buf[0] == 0 && buf[4095] == 0);
  CHECK_ERR("fallocate", fallocate(sp, FALLOC_FL_PUNCH_HOLE, 0, 4096), EOPNOTSUPP);  // needs KEEP_SIZE
  close(sp);
}

TEST_F(PosixConformance, TimestampsPerOperation) {
  WriteFile(P("f"), "x");
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  // Each step: what must move (after) and what must stay (same), on the file and the parent.
  struct stat d0 = Stat(dir_), f0 = Stat(P("f"));
  Tick();
  ASSERT_EQ(close(open(P("new").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  struct stat d1 = Stat(dir_);
  CHECK_THAT("create", After(d1.st_mtim, d0.st_mtim) && After(d1.st_ctim, d0.st_ctim));
  Tick();
  const int fd = open(P("f").c_str(), O_WRONLY);
  ASSERT_EQ(write(fd, "y", 1), 1);
  close(fd);
  struct stat f1 = Stat(P("f")), d2 = Stat(dir_);
  CHECK_THAT("write", After(f1.st_mtim, f0.st_mtim) && After(f1.st_ctim, f0.st_ctim));
  CHECK_THAT("write", Same(d2.st_mtim, d1.st_mtim));  // the parent does not change
  Tick();
  ASSERT_EQ(chmod(P("f").c_str(), 0600), 0);
  struct stat f2 = Stat(P("f"));
  CHECK_THAT("chmod", After(f2.st_ctim, f1.st_ctim) && Same(f2.st_mtim, f1.st_mtim));
  Tick();
  ASSERT_EQ(truncate(P("f").c_str(), 0), 0);
  struct stat f3 = Stat(P("f"));
  CHECK_THAT("truncate", After(f3.st_mtim, f2.st_mtim) && After(f3.st_ctim, f2.st_ctim));
  Tick();
  ASSERT_EQ(link(P("f").c_str(), P("f2").c_str()), 0);
  struct stat f4 = Stat(P("f")), d3 = Stat(dir_);
  CHECK_THAT("link", After(f4.st_ctim, f3.st_ctim) && Same(f4.st_mtim, f3.st_mtim));
  CHECK_THAT("link", After(d3.st_mtim, d2.st_mtim));
  Tick();
  ASSERT_EQ(unlink(P("f2").c_str()), 0);
  struct stat f5 = Stat(P("f")), d4 = Stat(dir_);
  CHECK_THAT("unlink", After(f5.st_ctim, f4.st_ctim) && After(d4.st_mtim, d3.st_mtim));
  Tick();
  struct stat dd0 = Stat(P("d"));
  ASSERT_EQ(rename(P("new").c_str(), P("d/new").c_str()), 0);
  struct stat d5 = Stat(dir_), dd1 = Stat(P("d"));
  CHECK_THAT("rename", After(d5.st_mtim, d4.st_mtim) && After(dd1.st_mtim, dd0.st_mtim));
  Tick();
  ASSERT_EQ(mkdir(P("d/sub").c_str(), 0755), 0);
  struct stat dd2 = Stat(P("d"));
  CHECK_THAT("mkdir", After(dd2.st_mtim, dd1.st_mtim) && After(dd2.st_ctim, dd1.st_ctim));
  Tick();
  ASSERT_EQ(rmdir(P("d/sub").c_str()), 0);
  struct stat dd3 = Stat(P("d"));
  CHECK_THAT("rmdir", After(dd3.st_mtim, dd2.st_mtim));
  // utimensat: explicit values, UTIME_OMIT keeps, UTIME_NOW sets now; ctime moves every time.
  struct timespec ts[2] = {{1000000000, 123456789}, {1100000000, 987654321}};
  CHECK_ERR("utimensat", utimensat(AT_FDCWD, P("f").c_str(), ts, 0), 0);
  struct stat f6 = Stat(P("f"));
  CHECK_THAT("utimensat", Same(f6.st_atim, ts[0]) && Same(f6.st_mtim, ts[1]) && After(f6.st_ctim, f5.st_ctim));
  struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  CHECK_ERR("utimensat", utimensat(AT_FDCWD, P("f").c_str(), omit, 0), 0);
  struct stat f7 = Stat(P("f"));
  CHECK_THAT("utimensat", Same(f7.st_atim, ts[0]) && After(f7.st_mtim, ts[1]));
  CHECK_ERR("utimensat", utimensat(AT_FDCWD, P("missing").c_str(), ts, 0), ENOENT);
}

TEST_F(PosixConformance, PermissionsAsAnUnprivilegedUser) {
  WriteFile(P("secret"), "s", 0600);
  WriteFile(P("public"), "p", 0644);
  WriteFile(P("writable"), "w", 0666);
  ASSERT_EQ(mkdir(P("closed").c_str(), 0700), 0);
  WriteFile(P("closed/inner"), "i", 0644);
  ASSERT_EQ(mkdir(P("readonly_dir").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("open_dir").c_str(), 0777), 0);
  ASSERT_EQ(chmod(P("open_dir").c_str(), 0777), 0);
  const std::string d = dir_;
  AsUser(kNobody, {}, [&] {
    auto p = [&](const std::string& n) { return d + "/" + n; };
    CHECK_ERR("open", open(p("secret").c_str(), O_RDONLY), EACCES);
    CHECK_ERR("open", open(p("public").c_str(), O_WRONLY), EACCES);
    CHECK_ERR("open", open(p("public").c_str(), O_RDONLY), 0);
    CHECK_ERR("open", open(p("writable").c_str(), O_WRONLY), 0);
    CHECK_ERR("open", open(p("closed/inner").c_str(), O_RDONLY), EACCES);  // no search on closed
    CHECK_ERR("open", open(p("readonly_dir/new").c_str(), O_CREAT | O_WRONLY, 0644), EACCES);
    CHECK_ERR("mkdir", mkdir(p("readonly_dir/sub").c_str(), 0755), EACCES);
    CHECK_ERR("unlink", unlink(p("public").c_str()), EACCES);
    CHECK_ERR("rename", rename(p("public").c_str(), p("open_dir/public").c_str()), EACCES);
    CHECK_ERR("chmod", chmod(p("public").c_str(), 0777), EPERM);
    CHECK_ERR("chown", chown(p("public").c_str(), kNobody, kNobody), EPERM);
    CHECK_ERR("truncate", truncate(p("public").c_str(), 0), EACCES);
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    CHECK_ERR("utimensat", utimensat(AT_FDCWD, p("public").c_str(), ts, 0), EPERM);
    CHECK_ERR("utimensat", utimensat(AT_FDCWD, p("writable").c_str(), nullptr, 0), 0);  // now: write access is enough
    CHECK_ERR("utimensat", utimensat(AT_FDCWD, p("writable").c_str(), ts, 0), EPERM);
    CHECK_ERR("setxattr", setxattr(p("public").c_str(), "user.k", "v", 1, 0), EACCES);
    CHECK_ERR("setxattr", setxattr(p("public").c_str(), "trusted.k", "v", 1, 0), EPERM);
    // What nobody creates is nobody's, with the mode asked for less the umask.
    umask(022);
    CHECK_ERR("open", close(open(p("open_dir/mine").c_str(), O_CREAT | O_WRONLY, 0666)), 0);
    struct stat st{};
    CHECK_THAT("open", lstat(p("open_dir/mine").c_str(), &st) == 0 && st.st_uid == kNobody &&
                           st.st_gid == kNobody && (st.st_mode & 07777) == 0644);
    CHECK_ERR("chmod", chmod(p("open_dir/mine").c_str(), 0600), 0);
    CHECK_ERR("chown", chown(p("open_dir/mine").c_str(), 0, -1), EPERM);
  });
}

TEST_F(PosixConformance, StickyDirectory) {
  ASSERT_EQ(mkdir(P("tmp").c_str(), 0777), 0);
  ASSERT_EQ(chmod(P("tmp").c_str(), 01777), 0);
  WriteFile(P("tmp/roots"), "r", 0666);
  const std::string d = dir_;
  AsUser(kNobody, {}, [&] {
    CHECK_ERR("unlink", unlink((d + "/tmp/roots").c_str()), EPERM);
    CHECK_ERR("rename", rename((d + "/tmp/roots").c_str(), (d + "/tmp/mine").c_str()), EPERM);
    CHECK_ERR("open", close(open((d + "/tmp/own").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
    CHECK_ERR("rename", rename((d + "/tmp/own").c_str(), (d + "/tmp/own2").c_str()), 0);
    CHECK_ERR("unlink", unlink((d + "/tmp/own2").c_str()), 0);
  });
  // root may remove anyone's file from a sticky directory.
  CHECK_ERR("unlink", unlink(P("tmp/roots").c_str()), 0);
}

TEST_F(PosixConformance, SetgidDirectoryAndSuidClearing) {
  ASSERT_EQ(mkdir(P("g").c_str(), 0777), 0);
  ASSERT_EQ(chown(P("g").c_str(), 0, kOtherGroup), 0);
  ASSERT_EQ(chmod(P("g").c_str(), 02777), 0);
  // New entries take the directory's group; a new subdirectory keeps the setgid bit.
  ASSERT_EQ(close(open(P("g/f").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  ASSERT_EQ(mkdir(P("g/sub").c_str(), 0755), 0);
  CHECK_THAT("setgid", Stat(P("g/f")).st_gid == kOtherGroup);
  CHECK_THAT("setgid", Stat(P("g/sub")).st_gid == kOtherGroup && (Stat(P("g/sub")).st_mode & S_ISGID) != 0);
  // A write by someone else clears set-user-ID and set-group-ID on an executable file.
  WriteFile(P("prog"), "#!", 0777);
  ASSERT_EQ(chmod(P("prog").c_str(), 06777), 0);
  const std::string prog = P("prog");
  AsUser(kNobody, {}, [&] {
    const int fd = open(prog.c_str(), O_WRONLY);
    CHECK_ERR("open", fd, 0);
    CHECK_ERR("write", write(fd, "x", 1), 0);
    if (fd >= 0) close(fd);
  });
  CHECK_THAT("write", (Stat(prog).st_mode & (S_ISUID | S_ISGID)) == 0);
  // Dropping them by chmod(2) is still the owner's alone (the server lets the kernel's own
  // drop through; the kernel refuses a user's).
  ASSERT_EQ(chmod(prog.c_str(), 06777), 0);
  AsUser(kNobody, {}, [&] { CHECK_ERR("chmod", chmod(prog.c_str(), 0777), EPERM); });
  CHECK_THAT("chmod", (Stat(prog).st_mode & 07777) == 06777);
  // chown by root of an executable clears them too.
  ASSERT_EQ(chmod(prog.c_str(), 06755), 0);
  ASSERT_EQ(chown(prog.c_str(), kNobody, kNobody), 0);
  CHECK_THAT("chown", (Stat(prog).st_mode & (S_ISUID | S_ISGID)) == 0);
  // A member of the group may set it as group; someone outside it may not chgrp there.
  WriteFile(P("owned"), "o", 0644);
  ASSERT_EQ(chown(P("owned").c_str(), kNobody, kNobody), 0);
  const std::string owned = P("owned");
  AsUser(kNobody, {kOtherGroup}, [&] { CHECK_ERR("chown", chown(owned.c_str(), -1, kOtherGroup), 0); });
  AsUser(kNobody, {}, [&] { CHECK_ERR("chown", chown(owned.c_str(), -1, 0), EPERM); });
}

TEST_F(PosixConformance, Xattrs) {
  WriteFile(P("f"), "");
  ASSERT_EQ(symlink("f", P("s").c_str()), 0);
  char buf[64];
  CHECK_ERR("getxattr", getxattr(P("f").c_str(), "user.none", buf, sizeof(buf)), ENODATA);
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "user.k", "v1", 2, XATTR_REPLACE), ENODATA);
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "user.k", "v1", 2, XATTR_CREATE), 0);
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "user.k", "v2", 2, XATTR_CREATE), EEXIST);
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "user.k", "v3", 2, XATTR_REPLACE), 0);
  CHECK_THAT("getxattr", getxattr(P("f").c_str(), "user.k", buf, sizeof(buf)) == 2 && std::string(buf, 2) == "v3");
  CHECK_ERR("getxattr", getxattr(P("f").c_str(), "user.k", buf, 1), ERANGE);
  CHECK_ERR("setxattr", lsetxattr(P("s").c_str(), "user.k", "v", 1, 0), EPERM);  // user.* on a symlink
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "trusted.k", "t", 1, 0), 0);
  CHECK_ERR("setxattr", setxattr(P("f").c_str(), "bogus.k", "b", 1, 0), EOPNOTSUPP);
  char list[256];
  const ssize_t n = listxattr(P("f").c_str(), list, sizeof(list));
  CHECK_THAT("listxattr", n > 0 && std::string(list, static_cast<size_t>(n)).find("user.k") != std::string::npos);
  CHECK_ERR("removexattr", removexattr(P("f").c_str(), "user.k"), 0);
  CHECK_ERR("removexattr", removexattr(P("f").c_str(), "user.k"), ENODATA);
}

// Locks between two processes: the child tries what the parent holds.
TEST_F(PosixConformance, LocksBetweenTwoProcesses) {
  WriteFile(P("f"), std::string(100, 'l'));
  const int fd = open(P("f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 10;
  fl.l_len = 20;
  ASSERT_EQ(fcntl(fd, F_SETLK, &fl), 0);
  const pid_t parent = getpid();
  const std::string f = P("f");
  AsUser(0, {}, [&] {
    const int cfd = open(f.c_str(), O_RDWR);
    CHECK_ERR("flock", flock(cfd, LOCK_EX | LOCK_NB), EWOULDBLOCK);
    CHECK_ERR("flock", flock(cfd, LOCK_SH | LOCK_NB), EWOULDBLOCK);
    struct flock w{};
    w.l_type = F_WRLCK;
    w.l_whence = SEEK_SET;
    w.l_start = 25;
    w.l_len = 10;
    CHECK_ERR("fcntl_lock", fcntl(cfd, F_SETLK, &w), EAGAIN);
    struct flock q = w;
    CHECK_THAT("fcntl_lock", fcntl(cfd, F_GETLK, &q) == 0 && q.l_type == F_WRLCK && q.l_pid == parent &&
                                 q.l_start == 10 && q.l_len == 20);
    w.l_start = 30;  // just past the parent's range
    CHECK_ERR("fcntl_lock", fcntl(cfd, F_SETLK, &w), 0);
    close(cfd);
  });
  // After the parent closes its descriptor, both kinds of lock are free.
  close(fd);
  AsUser(0, {}, [&] {
    const int cfd = open(f.c_str(), O_RDWR);
    CHECK_ERR("flock", flock(cfd, LOCK_EX | LOCK_NB), 0);
    struct flock w{};
    w.l_type = F_WRLCK;
    w.l_whence = SEEK_SET;
    w.l_start = 0;
    w.l_len = 0;
    CHECK_ERR("fcntl_lock", fcntl(cfd, F_SETLK, &w), 0);
    close(cfd);
  });
}

}  // namespace
}  // namespace folio::fuse::test
