// DeviceLock: exclusive flock per path, the holder's PID in the error, release on destruction
// and on process exit.
#include "base/device_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace folio {
namespace {

class DeviceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/folio-lock-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/member.img";
    const int fd = open(path_.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_, path_;
};

TEST_F(DeviceLockTest, SecondLockIsBusyAndNamesThisProcess) {
  Result<DeviceLock> first = LockDevicePath(path_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->held());
  Result<DeviceLock> second = LockDevicePath(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  const std::string msg(second.status().message());
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
  EXPECT_NE(msg.find("process " + std::to_string(getpid())), std::string::npos) << msg;
}

TEST_F(DeviceLockTest, ReleasedWhenDestroyedOrMovedFrom) {
  {
    Result<DeviceLock> first = LockDevicePath(path_);
    ASSERT_TRUE(first.ok());
    DeviceLock moved = std::move(first.value());
    EXPECT_FALSE(first->held());
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(LockDevicePath(path_).ok());
  }
  EXPECT_TRUE(LockDevicePath(path_).ok());
}

TEST_F(DeviceLockTest, HolderPidComesFromProcLocksAndDiesWithTheHolder) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<DeviceLock> l = LockDevicePath(path_);
    char c = l.ok() ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(FlockHolderPid(st.st_dev, st.st_ino), child);
  Result<DeviceLock> busy = LockDevicePath(path_);
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(std::string(busy.status().message()).find("process " + std::to_string(child)),
            std::string::npos)
      << busy.status().message();
  kill(child, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(FlockHolderPid(st.st_dev, st.st_ino), 0);
  EXPECT_TRUE(LockDevicePath(path_).ok());
}

TEST_F(DeviceLockTest, MissingPathIsNotFound) {
  Result<DeviceLock> l = LockDevicePath(dir_ + "/absent.img");
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(l.status().IsNotFound()) << l.status().ToString();
}

}  // namespace
}  // namespace folio
