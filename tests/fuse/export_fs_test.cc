// ExportFs without a mount: the namespace, the block-device semantics of volume files, and a
// seeded model run (writes, reads, punches, fsyncs, releases against a byte vector), checking
// the device itself after every release and at the end.
#include "fuse/export_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/test_seed.h"
#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "folio/page_cache.h"

namespace folio::fuse {
namespace {

constexpr uint64_t kDeviceBytes = 4ull << 20;
constexpr InodeId kVolumeIno{4};

class ExportFsTest : public ::testing::Test {
 protected:
  void SetUp() override { Build("dynamic"); }

  void Build(const std::string& policy) {
    fs_.reset();
    mapping_.reset();
    cache_.reset();
    device_.reset();
    MemDeviceOptions mo;
    mo.size_bytes = kDeviceBytes;
    mo.logical_block_bytes = 4096;
    device_ = std::move(NewMemDevice(mo).value());
    PageCacheOptions po;
    po.memory_bytes = 32ull << 20;
    po.policy = FolioPolicy::Parse(policy).value();
    po.dirty_writeback_ms = 50;
    cache_ = std::move(PageCache::Create(po).value());
    AddressSpaceOptions ao;
    ao.name = "vol";
    mapping_ = std::move(cache_->Open(device_.get(), ao).value());
    std::vector<ExportVolume> volumes;
    volumes.push_back(ExportVolume{"vol", "mem:4M", mapping_.get(), nullptr});
    ExportOptions eo;
    eo.uid = 1234;
    eo.mountpoint = "/nowhere";
    fs_ = std::make_unique<ExportFs>(cache_.get(), std::move(volumes), eo);
  }

  // The device's bytes, read past the cache.
  std::vector<char> DeviceBytes() {
    std::vector<char> out(kDeviceBytes);
    AlignedBuffer buf(kDeviceBytes);
    EXPECT_TRUE(device_->Read(0, buf.data(), kDeviceBytes).ok());
    std::memcpy(out.data(), buf.data(), kDeviceBytes);
    return out;
  }

  std::unique_ptr<BlockDevice> device_;
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<AddressSpace> mapping_;
  std::unique_ptr<ExportFs> fs_;
};

TEST_F(ExportFsTest, NamespaceAndAttributes) {
  Result<std::vector<DirEntry>> dir = fs_->ReadDir(kRootInode);
  ASSERT_TRUE(dir.ok());
  ASSERT_EQ(dir->size(), 4u);
  EXPECT_EQ((*dir)[0].name, ".");
  EXPECT_EQ((*dir)[1].name, "..");
  EXPECT_EQ((*dir)[2].name, ".stats");
  EXPECT_EQ((*dir)[3].name, "vol");

  Result<EntryReply> e = fs_->Lookup(kRootInode, "vol");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->attr.ino, kVolumeIno);
  EXPECT_EQ(e->attr.mode, static_cast<mode_t>(S_IFREG | 0644));
  EXPECT_EQ(e->attr.size_bytes, kDeviceBytes);
  EXPECT_EQ(e->attr.blksize_bytes, 4096u);
  EXPECT_EQ(e->attr.uid, 1234u);
  EXPECT_EQ(fs_->Lookup(kRootInode, ".stats")->attr.mode, static_cast<mode_t>(S_IFREG | 0444));
  EXPECT_EQ(fs_->Lookup(kRootInode, "nope").status().ToErrno(), ENOENT);
  EXPECT_EQ(fs_->Lookup(kVolumeIno, "x").status().ToErrno(), ENOTDIR);
  EXPECT_EQ(fs_->GetAttr(kRootInode)->mode, static_cast<mode_t>(S_IFDIR | 0555));
  EXPECT_EQ(fs_->GetAttr(InodeId{99}).status().ToErrno(), ENOENT);
  EXPECT_EQ(fs_->StatFs()->blocks, kDeviceBytes / 4096);
}

TEST_F(ExportFsTest, VolumeBehavesLikeABlockDevice) {
  Result<OpenReply> o = fs_->Open(kVolumeIno, O_RDWR | O_TRUNC);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->direct_io);  // default: one copy, in Folio
  std::string data(10000, 'x');
  // A write across the end is cut short; one at the end gets ENOSPC.
  EXPECT_EQ(*fs_->Write(kVolumeIno, o->fh, kDeviceBytes - 100, {data.data(), data.size()}), 100u);
  EXPECT_EQ(fs_->Write(kVolumeIno, o->fh, kDeviceBytes, {data.data(), 1}).status().ToErrno(),
            ENOSPC);
  std::vector<char> buf(4096);
  EXPECT_EQ(*fs_->Read(kVolumeIno, o->fh, kDeviceBytes - 50, {buf.data(), buf.size()}), 50u);
  EXPECT_EQ(*fs_->Read(kVolumeIno, o->fh, kDeviceBytes, {buf.data(), buf.size()}), 0u);
  // O_TRUNC was ignored: the size is the device's; only a truncate to it succeeds.
  SetAttrRequest t;
  t.has_size = true;
  t.size_bytes = 0;
  EXPECT_EQ(fs_->SetAttr(kVolumeIno, t).status().ToErrno(), EINVAL);
  t.size_bytes = kDeviceBytes;
  EXPECT_TRUE(fs_->SetAttr(kVolumeIno, t).ok());
  SetAttrRequest chmod;
  chmod.has_mode = true;
  EXPECT_EQ(fs_->SetAttr(kVolumeIno, chmod).status().ToErrno(), EPERM);
  // fallocate: allocation inside the device is a no-op success, other modes are refused.
  EXPECT_TRUE(fs_->Fallocate(kVolumeIno, o->fh, 0, 0, 4096).ok());
  EXPECT_EQ(fs_->Fallocate(kVolumeIno, o->fh, 0, kDeviceBytes, 4096).ToErrno(), ENOSPC);
  EXPECT_EQ(fs_->Fallocate(kVolumeIno, o->fh, FALLOC_FL_ZERO_RANGE, 0, 4096).ToErrno(), EOPNOTSUPP);
  EXPECT_TRUE(fs_->Release(kVolumeIno, o->fh).ok());
  EXPECT_EQ(fs_->Open(kRootInode, O_RDONLY).status().ToErrno(), EISDIR);
}

TEST_F(ExportFsTest, StatsIsReadOnlyLiveJson) {
  EXPECT_EQ(fs_->Open(kStatsInode, O_WRONLY).status().ToErrno(), EACCES);
  Result<OpenReply> o = fs_->Open(kStatsInode, O_RDONLY);
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->direct_io);  // size 0: only direct I/O lets reads go past it
  std::string text;
  std::vector<char> buf(100);
  for (uint64_t pos = 0;;) {
    Result<size_t> n = fs_->Read(kStatsInode, o->fh, pos, {buf.data(), buf.size()});
    ASSERT_TRUE(n.ok());
    if (*n == 0) break;
    text.append(buf.data(), *n);
    pos += *n;
  }
  EXPECT_TRUE(fs_->Release(kStatsInode, o->fh).ok());
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["policy"], "dynamic");
  ASSERT_EQ(j["volumes"].size(), 1u);
  EXPECT_EQ(j["volumes"][0]["name"], "vol");
  EXPECT_EQ(j["volumes"][0]["size_bytes"], kDeviceBytes);
  EXPECT_EQ(j["cache"]["orders"].size(), static_cast<size_t>(kNumOrders));
  EXPECT_EQ(fs_->Read(kStatsInode, o->fh, 0, {buf.data(), buf.size()}).status().ToErrno(), EBADF);
}

TEST_F(ExportFsTest, PunchHoleZeroesAndTrims) {
  Result<OpenReply> o = fs_->Open(kVolumeIno, O_RDWR);
  ASSERT_TRUE(o.ok());
  std::string ones(64 << 10, '\1');
  ASSERT_EQ(*fs_->Write(kVolumeIno, o->fh, 0, {ones.data(), ones.size()}), ones.size());
  ASSERT_TRUE(fs_->Fsync(kVolumeIno, o->fh, SyncKind::kData).ok());
  // Unaligned: [1000, 50000) covers pages 1..11 whole and parts of pages 0 and 12.
  ASSERT_TRUE(
      fs_->Fallocate(kVolumeIno, o->fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 49000)
          .ok());
  std::vector<char> got(64 << 10);
  ASSERT_EQ(*fs_->Read(kVolumeIno, o->fh, 0, {got.data(), got.size()}), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], (i >= 1000 && i < 50000) ? 0 : 1) << "byte " << i;
  }
  EXPECT_GE(device_->stats().trims, 1u);
  ASSERT_TRUE(fs_->Release(kVolumeIno, o->fh).ok());
  std::vector<char> disk = DeviceBytes();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(disk[i], got[i]) << "device byte " << i;
}

// Issue 8 item 5, the A/B scenario on a volume whose device is full (writes fail with
// ENOSPC): every open file gets the error at its next fsync, with ENOSPC; release does not
// consume it; a file opened later gets an error nobody has seen; the loss is reported.
class ExportFsErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemDeviceOptions mo;
    mo.size_bytes = kDeviceBytes;
    mo.logical_block_bytes = 4096;
    device_ = FaultDevice::Wrap(std::move(NewMemDevice(mo).value()));
    PageCacheOptions po;
    po.memory_bytes = 32ull << 20;
    po.writeback_threads = 0;  // background writeback runs when the test says so
    cache_ = std::move(PageCache::Create(po).value());
    AddressSpaceOptions ao;
    ao.name = "vol";
    mapping_ = std::move(cache_->Open(device_.get(), ao).value());
    std::vector<ExportVolume> volumes;
    volumes.push_back(ExportVolume{"vol", "mem:4M", mapping_.get(), nullptr});
    fs_ = std::make_unique<ExportFs>(cache_.get(), std::move(volumes), ExportOptions{});
  }
  void TearDown() override {
    fs_.reset();
    mapping_.reset();
    cache_.reset();
    device_.reset();
  }

  uint64_t OpenVolume() {
    Result<OpenReply> o = fs_->Open(kVolumeIno, O_RDWR);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? o->fh : 0;
  }
  void WriteMiB(uint64_t fh) {
    std::string data(1 << 20, 'a');
    Result<size_t> n = fs_->Write(kVolumeIno, fh, 0, {data.data(), data.size()});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
  }
  void FillUpAndWriteBackInTheBackground() {
    device_->SetInjectedErrno(ENOSPC);
    device_->FailRange(0, kDeviceBytes, /*reads=*/false, /*writes=*/true);
    EXPECT_TRUE(cache_->SyncAll().IsNoSpace());  // what the writeback thread runs
  }
  int FsyncErrno(uint64_t fh) { return fs_->Fsync(kVolumeIno, fh, SyncKind::kData).ToErrno(); }

  std::unique_ptr<FaultDevice> device_;
  std::unique_ptr<PageCache> cache_;
  std::unique_ptr<AddressSpace> mapping_;
  std::unique_ptr<ExportFs> fs_;
};

TEST_F(ExportFsErrorTest, EveryOpenFileGetsTheWritebackErrorAtItsNextFsync) {
  const uint64_t a = OpenVolume();
  WriteMiB(a);
  FillUpAndWriteBackInTheBackground();
  const uint64_t b = OpenVolume();  // opened after the error, which nobody has seen
  EXPECT_EQ(FsyncErrno(b), ENOSPC);
  EXPECT_EQ(FsyncErrno(b), 0);       // once
  EXPECT_EQ(FsyncErrno(a), ENOSPC);  // A was open when it happened: it gets it too
  EXPECT_EQ(FsyncErrno(a), 0);
  EXPECT_TRUE(fs_->Release(kVolumeIno, a).ok());
  EXPECT_TRUE(fs_->Release(kVolumeIno, b).ok());
  EXPECT_EQ(fs_->ReportUnwritten(), 1u << 20);
  EXPECT_EQ(fs_->Fsync(kVolumeIno, a, SyncKind::kData).ToErrno(), EBADF);  // released
}

TEST_F(ExportFsErrorTest, TheLastReleaseDoesNotConsumeTheError) {
  const uint64_t a = OpenVolume();
  WriteMiB(a);
  device_->SetInjectedErrno(ENOSPC);
  device_->FailRange(0, kDeviceBytes, /*reads=*/false, /*writes=*/true);
  // The last close writes back (and fails); nobody has fsynced.
  EXPECT_EQ(fs_->Release(kVolumeIno, a).ToErrno(), ENOSPC);
  const uint64_t c = OpenVolume();
  EXPECT_EQ(FsyncErrno(c), ENOSPC);
  EXPECT_EQ(FsyncErrno(c), 0);
  const uint64_t d = OpenVolume();  // opened after C saw it
  EXPECT_EQ(FsyncErrno(d), 0);
  EXPECT_TRUE(fs_->Release(kVolumeIno, c).ok());
  EXPECT_TRUE(fs_->Release(kVolumeIno, d).ok());
  // Shutdown: nothing left to write, but the megabyte never reached the device.
  EXPECT_TRUE(fs_->SyncAll().ok());
  EXPECT_EQ(fs_->ReportUnwritten(), 1u << 20);
  nlohmann::json j = fs_->StatsJson();
  EXPECT_EQ(j["volumes"][0]["writeback_errors"]["unwritten_bytes"], 1u << 20);
}

// Seeded model: random writes, reads, punches, fsyncs and open/release cycles against a byte
// vector; after each last release the device itself must hold the model's bytes.
TEST_F(ExportFsTest, ModelRun) {
  for (const char* policy : {"4k", "fixed:64k", "dynamic"}) {
    const uint64_t seed = TestSeed();
    SCOPED_TRACE(std::string("policy ") + policy + ", " + SeedTrace(seed));
    Build(policy);
    std::mt19937_64 rng(seed);
    std::vector<char> model(kDeviceBytes, 0);
    std::vector<char> buf(1 << 20);
    uint64_t fh = fs_->Open(kVolumeIno, O_RDWR)->fh;
    auto pos_len = [&](uint64_t max_len) {
      const bool aligned = rng() % 2 == 0;
      uint64_t len = 1 + rng() % max_len;
      uint64_t pos = rng() % kDeviceBytes;
      if (aligned) {
        pos &= ~uint64_t{4095};
        len = (len + 4095) & ~uint64_t{4095};
      }
      return std::pair<uint64_t, uint64_t>(pos, len);
    };
    for (int step = 0; step < 300; ++step) {
      const int op = static_cast<int>(rng() % 20);
      if (op < 8) {
        auto [pos, len] = pos_len(rng() % 4 == 0 ? (512 << 10) : 16384);
        for (uint64_t i = 0; i < len; i += 8) {
          const uint64_t r = rng();
          std::memcpy(buf.data() + i, &r, std::min<uint64_t>(8, len - i));
        }
        Result<size_t> n = fs_->Write(kVolumeIno, fh, pos, {buf.data(), len});
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        const uint64_t want = std::min(len, kDeviceBytes - pos);
        ASSERT_EQ(*n, want);
        std::memcpy(model.data() + pos, buf.data(), want);
      } else if (op < 15) {
        auto [pos, len] = pos_len(1 << 20);
        Result<size_t> n = fs_->Read(kVolumeIno, fh, pos, {buf.data(), len});
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        ASSERT_EQ(*n, std::min(len, kDeviceBytes - pos));
        ASSERT_EQ(std::memcmp(buf.data(), model.data() + pos, *n), 0)
            << "step " << step << " read " << len << " at " << pos;
      } else if (op < 17) {
        auto [pos, len] = pos_len(256 << 10);
        ASSERT_TRUE(
            fs_->Fallocate(kVolumeIno, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, pos, len)
                .ok());
        std::memset(model.data() + pos, 0, std::min(len, kDeviceBytes - pos));
      } else if (op < 19) {
        ASSERT_TRUE(fs_->Fsync(kVolumeIno, fh, SyncKind::kData).ok());
      } else {
        ASSERT_TRUE(fs_->Release(kVolumeIno, fh).ok());
        ASSERT_TRUE(DeviceBytes() == model)
            << "device differs after the last release, step " << step;
        fh = fs_->Open(kVolumeIno, O_RDWR)->fh;
      }
    }
    ASSERT_TRUE(fs_->Release(kVolumeIno, fh).ok());
    ASSERT_TRUE(DeviceBytes() == model);
  }
}

}  // namespace
}  // namespace folio::fuse
