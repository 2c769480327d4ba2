// The FUSE plumbing for real: an ExportFs over a memory device mounted in this process and
// driven with system calls (pread / pwrite / O_DIRECT / fallocate / fsync / readdir / stat)
// from several threads, against a model; then the unmount paths. Also the mount-point checks
// and mountinfo parsing. Skipped only where /dev/fuse does not exist.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "folio/block_device.h"
#include "base/aligned_buffer.h"
#include "base/test_seed.h"
#include "folio/page_cache.h"
#include "fuse/export_fs.h"
#include "fuse/mount_point.h"
#include "fuse/session.h"

namespace folio::fuse {
namespace {

constexpr uint64_t kMountDeviceBytes = 16ull << 20;

std::string MakeTempDir() {
  char tmpl[] = "/tmp/folio-fuse-test-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl), nullptr);
  return tmpl;
}

TEST(MountPointTest, ParsesMountInfoWithEscapesAndPid) {
  std::optional<MountEntry> e = ParseMountInfoLine(
      "97 30 0:52 / /tmp/my\\040dir rw,nosuid,nodev,relatime shared:51 - fuse.folio "
      "folio:4242 rw,user_id=0,group_id=0,default_permissions");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->mountpoint, "/tmp/my dir");
  EXPECT_EQ(e->fstype, "fuse.folio");
  EXPECT_EQ(e->source, "folio:4242");
  EXPECT_EQ(e->pid, 4242);
  std::optional<MountEntry> other =
      ParseMountInfoLine("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->pid, 0);
  EXPECT_FALSE(ParseMountInfoLine("garbage").has_value());
  EXPECT_EQ(FsnameForPid(77), "folio:77");
}

TEST(MountPointTest, RejectsMissingFileAndNonEmptyMountPoints) {
  const std::string dir = MakeTempDir();
  Status missing = CheckMountPoint("--mount", dir + "/absent");
  EXPECT_TRUE(missing.IsInvalidArgument());
  EXPECT_NE(std::string(missing.message()).find("no such directory"), std::string::npos);
  const std::string file = dir + "/f";
  std::ofstream(file) << "x";
  Status not_dir = CheckMountPoint("--mount", file);
  EXPECT_NE(std::string(not_dir.message()).find("not a directory"), std::string::npos);
  Status not_empty = CheckMountPoint("--mount", dir);
  EXPECT_NE(std::string(not_empty.message()).find("not empty"), std::string::npos);
  unlink(file.c_str());
  EXPECT_TRUE(CheckMountPoint("--mount", dir).ok());
  EXPECT_TRUE(FindFuseMount(dir).status().IsNotFound());
  rmdir(dir.c_str());
}

class MountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/dev/fuse", F_OK) != 0) {
      GTEST_SKIP() << "/dev/fuse does not exist on this machine: the FUSE mount tests need it";
    }
    MemDeviceOptions mo;
    mo.size_bytes = kMountDeviceBytes;
    mo.logical_block_bytes = 4096;
    device_ = std::move(NewMemDevice(mo).value());
    PageCacheOptions po;
    po.memory_bytes = 64ull << 20;
    cache_ = std::move(PageCache::Create(po).value());
    AddressSpaceOptions ao;
    ao.name = "disk";
    mapping_ = std::move(cache_->Open(device_.get(), ao).value());
    std::vector<ExportVolume> volumes;
    volumes.push_back(ExportVolume{"disk", "mem:16M", mapping_.get(), nullptr});
    dir_ = MakeTempDir();
    ExportOptions eo;
    eo.uid = getuid();
    eo.gid = getgid();
    eo.mountpoint = dir_;
    fs_ = std::make_unique<ExportFs>(cache_.get(), std::move(volumes), eo);
    MountOptions opts;
    opts.mountpoint = dir_;
    opts.max_threads = 8;
    Result<std::unique_ptr<FuseServer>> server = FuseServer::Mount(fs_.get(), opts);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server.value());
    fs_->SetRequestStats(&server_->stats());
    loop_ = std::thread([this] { loop_status_ = server_->Run(); });
    file_ = dir_ + "/disk";
  }

  void TearDown() override {
    StopServer();
    fs_.reset();
    mapping_.reset();
    cache_.reset();
    device_.reset();
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

  void StopServer() {
    if (!server_) return;
    server_->RequestUnmount();
    loop_.join();
    EXPECT_TRUE(loop_status_.ok()) << loop_status_.ToString();
    EXPECT_TRUE(fs_->SyncAll().ok());
    server_.reset();
  }

  std::string ReadStats() {
    std::ifstream in(dir_ + "/.stats");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::unique_ptr<BlockDevice> device_;
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<AddressSpace> mapping_;
  std::unique_ptr<ExportFs> fs_;
  std::unique_ptr<FuseServer> server_;
  std::thread loop_;
  Status loop_status_;
  std::string dir_, file_;
};

TEST_F(MountTest, DirectoryStatAndStats) {
  std::set<std::string> names;
  DIR* d = opendir(dir_.c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) names.insert(e->d_name);
  closedir(d);
  EXPECT_EQ(names, (std::set<std::string>{".", "..", ".stats", "disk"}));
  struct stat st;
  ASSERT_EQ(stat(file_.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kMountDeviceBytes);
  EXPECT_EQ(st.st_mode, static_cast<mode_t>(S_IFREG | 0644));
  EXPECT_EQ(st.st_blksize, 4096);
  struct statvfs sv;
  ASSERT_EQ(statvfs(dir_.c_str(), &sv), 0);
  EXPECT_EQ(sv.f_blocks * sv.f_frsize, kMountDeviceBytes);
  // Namespace changes are refused.
  EXPECT_LT(open((dir_ + "/new").c_str(), O_CREAT | O_WRONLY, 0644), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(unlink(file_.c_str()), 0);
  EXPECT_LT(open((dir_ + "/.stats").c_str(), O_WRONLY), 0);

  nlohmann::json j = nlohmann::json::parse(ReadStats());
  EXPECT_EQ(j["volumes"][0]["name"], "disk");
  EXPECT_GE(j["fuse"]["requests"]["lookup"].get<uint64_t>(), 1u);
  Result<MountEntry> m = FindFuseMount(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->pid, getpid());
  EXPECT_EQ(m->fstype, "fuse.folio");
}

// Several threads write their own random ranges (buffered and O_DIRECT, up to 1 MiB), read
// them back, punch some, and fsync; then the whole file must equal the model, through the
// mount and on the device after the unmount.
TEST_F(MountTest, ConcurrentModelThroughTheKernel) {
  constexpr int kThreads = 4;
  constexpr uint64_t kSlice = kMountDeviceBytes / kThreads;
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::vector<char> model(kMountDeviceBytes, 0);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      const int flags = O_RDWR | (t % 2 == 0 ? O_DIRECT : 0);
      const int fd = open(file_.c_str(), flags);
      if (fd < 0) {
        failures[t] = "open: " + std::string(std::strerror(errno));
        return;
      }
      AlignedBuffer mem(1 << 20);
      char* buf = mem.data();
      const uint64_t base = t * kSlice;
      for (int step = 0; step < 150 && failures[t].empty(); ++step) {
        uint64_t len = 4096 * (1 + rng() % (rng() % 4 == 0 ? 256 : 8));
        const uint64_t pos = base + (rng() % ((kSlice - len) / 4096)) * 4096;
        const int op = static_cast<int>(rng() % 10);
        if (op < 5) {
          for (uint64_t i = 0; i < len; i += 8) {
            const uint64_t r = rng();
            std::memcpy(buf + i, &r, 8);
          }
          if (pwrite(fd, buf, len, pos) != static_cast<ssize_t>(len)) {
            failures[t] = "pwrite: " + std::string(std::strerror(errno));
          }
          std::memcpy(model.data() + pos, buf, len);
        } else if (op < 8) {
          if (pread(fd, buf, len, pos) != static_cast<ssize_t>(len) ||
              std::memcmp(buf, model.data() + pos, len) != 0) {
            failures[t] = "read back differs at " + std::to_string(pos);
          }
        } else if (op < 9) {
          if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos, len) != 0) {
            failures[t] = "punch: " + std::string(std::strerror(errno));
          }
          std::memset(model.data() + pos, 0, len);
        } else if (fdatasync(fd) != 0) {
          failures[t] = "fdatasync: " + std::string(std::strerror(errno));
        }
      }
      close(fd);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(failures[t], "") << "thread " << t;

  std::vector<char> all(kMountDeviceBytes);
  const int fd = open(file_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pread(fd, all.data(), all.size(), 0), static_cast<ssize_t>(all.size()));
  close(fd);
  ASSERT_TRUE(all == model);

  nlohmann::json j = nlohmann::json::parse(ReadStats());
  EXPECT_GT(j["fuse"]["requests"]["write"].get<uint64_t>(), 0u);
  // Requests of up to 1 MiB reach the server (max_write 1 MiB, max_pages 256).
  EXPECT_GT(j["fuse"]["write_request_bytes"]["max"].get<uint64_t>(), 128u << 10);

  StopServer();
  AlignedBuffer mem(kMountDeviceBytes);
  ASSERT_TRUE(device_->Read(0, mem.data(), kMountDeviceBytes).ok());
  EXPECT_EQ(std::memcmp(mem.data(), model.data(), kMountDeviceBytes), 0);
}

TEST_F(MountTest, UnmountFromOutsideEndsTheLoopAndBusyIsReported) {
  const int fd = open(file_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "hello", 5, 8192), 5);
  Status busy = UnmountPath(dir_, UnmountMode::kNormal);
  EXPECT_EQ(busy.code(), StatusCode::kBusy) << busy.ToString();
  close(fd);
  // What `folio export --unmount` does from another shell.
  ASSERT_TRUE(UnmountPath(dir_, UnmountMode::kNormal).ok());
  loop_.join();
  EXPECT_TRUE(loop_status_.ok());
  EXPECT_TRUE(FindFuseMount(dir_).status().IsNotFound());
  // The kernel sends release asynchronously and an unmount may drop it, so the export writes
  // everything back after its loop ends, as here.
  EXPECT_TRUE(fs_->SyncAll().ok());
  char buf[4096];
  ASSERT_TRUE(device_->Read(8192, buf, 4096).ok());
  EXPECT_EQ(std::string(buf, 5), "hello");
  server_.reset();
}

}  // namespace
}  // namespace folio::fuse
