// Device specs: every form, every malformed spec, and opening them (locks, read-only opens,
// created files, RAID assembly) on files in a temporary directory.
#include "base/aligned_buffer.h"
#include "cli/device_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fs/store/store_test_util.h"
#include "fs/store/store_url.h"
#include "io/io_test_util.h"

namespace folio::cli {
namespace {

using io_test::TempDir;

void Touch(const std::string& path, uint64_t bytes) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fclose(f);
  std::filesystem::resize_file(path, bytes);
}

// The spec is refused as InvalidArgument and the message has `needle`.
void ExpectBad(const std::string& text, const std::string& needle) {
  Result<DeviceSpec> s = ParseDeviceSpec(text);
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
  EXPECT_NE(s.status().message().find(needle), std::string::npos)
      << text << ": " << s.status().message();
}

TEST(DeviceSpecTest, FileForms) {
  for (const std::string text : {"file:/d/x.img", "/d/x.img"}) {
    Result<DeviceSpec> s = ParseDeviceSpec(text);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->kind, DeviceSpec::Kind::kFile);
    EXPECT_EQ(s->text, text);
    EXPECT_EQ(s->paths, std::vector<std::string>{"/d/x.img"});
    EXPECT_EQ(s->file_path(), "/d/x.img");
    EXPECT_EQ(s->Canonical(), "file:/d/x.img");
  }
  // A relative path stays relative until resolved; an unknown kind is a path.
  Result<DeviceSpec> s = ParseDeviceSpec("nvme:0");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->paths, std::vector<std::string>{"nvme:0"});
}

TEST(DeviceSpecTest, MemForms) {
  Result<DeviceSpec> s = ParseDeviceSpec("mem:64M");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->kind, DeviceSpec::Kind::kMem);
  EXPECT_EQ(s->mem_bytes, 64u << 20);
  EXPECT_TRUE(s->paths.empty());
  EXPECT_EQ(s->file_path(), "");
  EXPECT_EQ(s->Canonical(), "mem:64M");
  s = ParseDeviceSpec("mem:8192");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->mem_bytes, 8192u);
}

TEST(DeviceSpecTest, RaidForms) {
  Result<DeviceSpec> s = ParseDeviceSpec("raid:r0,file:r1,/d/r2");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->kind, DeviceSpec::Kind::kRaid);
  EXPECT_EQ(s->paths, (std::vector<std::string>{"r0", "r1", "/d/r2"}));
  EXPECT_EQ(s->file_path(), "");
  EXPECT_EQ(s->Canonical(), "raid:r0,r1,/d/r2");
}

TEST(DeviceSpecTest, MalformedSpecs) {
  ExpectBad("", "empty device spec; use file:PATH");
  ExpectBad("file:", "file:: no path; use file:PATH");
  ExpectBad("mem:3000", "mem:3000: SIZE must be a non-zero multiple of 4K (e.g. mem:64M)");
  ExpectBad("mem:0", "multiple of 4K");
  ExpectBad("mem:", "multiple of 4K");
  ExpectBad("mem:lots", "multiple of 4K");
  ExpectBad("raid:/d/only", "raid:/d/only: raid: needs two or more");
  // An empty member (",,", a trailing or leading comma, "file:" alone) would assemble fewer
  // members than the user listed.
  for (const std::string text :
       {"raid:r0,r1,,r3", "raid:r0,r1,", "raid:,r0,r1", "raid:", "raid:r0,file:,r1"}) {
    ExpectBad(text, text + ": empty member path; use raid:PATH,PATH,...");
  }
}

TEST(DeviceSpecTest, MemBeyondThisMachinesMemory) {
  struct sysinfo si;
  ASSERT_EQ(sysinfo(&si), 0);
  const uint64_t ram = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  const std::string text = "mem:" + std::to_string((ram / 4096 + 1) * 4096);
  ExpectBad(text, text + ": larger than this machine's memory (");
  ExpectBad("mem:100T", "use a smaller size");
}

TEST(DeviceSpecTest, ResolveMakesPathsAbsolute) {
  TempDir d;
  Touch(d.File("x.img"), 1 << 20);
  Touch(d.File("y.img"), 1 << 20);
  std::filesystem::create_symlink(d.File("y.img"), d.File("link"));
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(d.path());
  Result<DeviceSpec> s = ParseDeviceSpec("raid:x.img,file:link");
  ASSERT_TRUE(s.ok());
  Status r = ResolveDevicePaths(&*s);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(r.ok()) << r.message();
  const std::string real = std::filesystem::canonical(d.path());
  EXPECT_EQ(s->paths, (std::vector<std::string>{real + "/x.img", real + "/y.img"}));
  EXPECT_EQ(s->Canonical(), "raid:" + real + "/x.img," + real + "/y.img");
  EXPECT_EQ(s->text, "raid:x.img,file:link");  // as given, for messages
}

TEST(DeviceSpecTest, ResolveRefusesMissingFilesAndDirectories) {
  TempDir d;
  Touch(d.File("x.img"), 1 << 20);
  // A bare path: the path is the spec, named once.
  Result<DeviceSpec> s = ParseDeviceSpec(d.File("absent.img"));
  ASSERT_TRUE(s.ok());
  Status r = ResolveDevicePaths(&*s);
  EXPECT_EQ(r.code(), StatusCode::kNotFound);
  EXPECT_EQ(r.message(), d.File("absent.img") +
                             ": no such file or device; use file:PATH (or a bare PATH), "
                             "raid:PATH,PATH,... or mem:SIZE");
  // A RAID member: the spec, then the member.
  const std::string raid = "raid:" + d.File("x.img") + "," + d.File("absent.img");
  s = ParseDeviceSpec(raid);
  ASSERT_TRUE(s.ok());
  r = ResolveDevicePaths(&*s);
  EXPECT_EQ(r.code(), StatusCode::kNotFound);
  EXPECT_EQ(r.message().find(raid + ": " + d.File("absent.img") + ": no such file or device"),
            0u)
      << r.message();
  // A directory.
  s = ParseDeviceSpec("file:" + d.path());
  ASSERT_TRUE(s.ok());
  r = ResolveDevicePaths(&*s);
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.message(), "file:" + d.path() + ": " + d.path() +
                             ": is a directory; give a regular file or a block device");
}

TEST(DeviceSpecTest, OpenMemDevice) {
  DeviceOpenOptions o;
  o.queue_depth = 8;
  Result<std::unique_ptr<BlockDevice>> dev = OpenDevice("mem:4M", o);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ((*dev)->size_bytes(), 4u << 20);
  EXPECT_EQ(AsRaid(dev->get()), nullptr);
  // A malformed spec fails as ParseDeviceSpec does.
  dev = OpenDevice("mem:3000", o);
  EXPECT_EQ(dev.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dev.status().message().find("mem:3000: "), 0u) << dev.status().message();
}

TEST(DeviceSpecTest, OpenFileLocksItUntilClosed) {
  TempDir d;
  const std::string path = d.File("x.img");
  Touch(path, 1 << 20);
  DeviceOpenOptions o;
  o.direct = false;  // any file system
  Result<std::unique_ptr<BlockDevice>> a = OpenDevice("file:" + path, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)->size_bytes(), 1u << 20);
  EXPECT_EQ(LockHolder(path), "process " + std::to_string(getpid()) + " (this one)");
  // A second open is Busy, naming the spec and the holder.
  Result<std::unique_ptr<BlockDevice>> b = OpenDevice(path, o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kBusy);
  EXPECT_EQ(b.status().message(), path + ": in use by process " + std::to_string(getpid()) +
                                      " (this one); stop it first");
  b = OpenDevice("file:" + path, o);
  EXPECT_EQ(b.status().message().find("file:" + path + ": " + path + ": in use by process"),
            0u)
      << b.status().message();
  // Read-only opens take no lock: they look at a device another process runs.
  DeviceOpenOptions ro = o;
  ro.read_only = true;
  b = OpenDevice(path, ro);
  EXPECT_TRUE(b.ok()) << b.status().message();
  a->reset();
  EXPECT_EQ(LockHolder(path), "");
  b = OpenDevice(path, o);
  EXPECT_TRUE(b.ok()) << b.status().message();
}

TEST(DeviceSpecTest, OpenMissingFile) {
  TempDir d;
  const std::string path = d.File("new.img");
  DeviceOpenOptions o;
  o.direct = false;
  Result<std::unique_ptr<BlockDevice>> dev = OpenDevice(path, o);
  EXPECT_EQ(dev.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dev.status().message(), path + ": no such file or device; use file:PATH (or a bare "
                                           "PATH), raid:PATH,PATH,... or mem:SIZE");
  EXPECT_FALSE(std::filesystem::exists(path));
  // With create_bytes, a missing file is made (and locked).
  o.create_bytes = 2 << 20;
  dev = OpenDevice(path, o);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ(std::filesystem::file_size(path), 2u << 20);
  EXPECT_NE(LockHolder(path), "");
  // A directory is never opened (nor created over).
  dev = OpenDevice(d.path(), o);
  EXPECT_EQ(dev.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dev.status().message().find("is a directory"), std::string::npos);
}

TEST(DeviceSpecTest, OpenMembersChecksEveryPath) {
  TempDir d;
  const std::string a = d.File("a"), b = d.File("b");
  Touch(a, 4 << 20);
  DeviceOpenOptions o;
  o.direct = false;
  std::vector<DeviceLock> locks;
  auto m = OpenMembers({a, a}, o, &locks);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "member " + a + " is listed twice");
  m = OpenMembers({a, b}, o, &locks);
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message().find("member " + b + ": no such file or device; "), 0u)
      << m.status().message();
  m = OpenMembers({a, d.path()}, o, &locks);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("member " + d.path() + ": is a directory"),
            std::string::npos);
  locks.clear();
  // Read-only: no locks taken.
  DeviceOpenOptions ro = o;
  ro.read_only = true;
  m = OpenMembers({a}, ro, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(LockHolder(a), "");
}

TEST(DeviceSpecTest, OpenRaidAssemblesAndStops) {
  TempDir d;
  const std::vector<std::string> paths = {d.File("m0"), d.File("m1"), d.File("m2")};
  DeviceOpenOptions o;
  o.direct = false;
  o.create_bytes = 4 << 20;
  {
    std::vector<DeviceLock> locks;
    auto members = OpenMembers(paths, o, &locks);
    ASSERT_TRUE(members.ok()) << members.status().message();
    EXPECT_EQ(locks.size(), 3u);
    RaidCreateOptions co;
    co.assume_clean = true;
    auto raid = RaidDevice::Create(std::move(*members), co, o.raid);
    ASSERT_TRUE(raid.ok()) << raid.status().message();
    ASSERT_TRUE((*raid)->Stop().ok());
  }
  o.create_bytes = 0;
  const std::string spec = "raid:" + paths[0] + "," + paths[1] + "," + paths[2];
  {
    Result<std::unique_ptr<BlockDevice>> dev = OpenDevice(spec, o);
    ASSERT_TRUE(dev.ok()) << dev.status().message();
    RaidDevice* raid = AsRaid(dev->get());
    ASSERT_NE(raid, nullptr);
    EXPECT_EQ(raid->Describe().member_count, 3u);
    for (const std::string& p : paths) EXPECT_NE(LockHolder(p), "") << p;
    AlignedBuffer buf(4096);
    std::memset(buf.data(), 'x', 4096);
    const Status w = (*dev)->Write(0, buf.data(), 4096);
    ASSERT_TRUE(w.ok()) << w.message();
  }
  // Stopped clean and unlocked at destruction.
  for (const std::string& p : paths) EXPECT_EQ(LockHolder(p), "") << p;
  auto members = OpenMembers(paths, DeviceOpenOptions{.direct = false, .read_only = true},
                             nullptr);
  ASSERT_TRUE(members.ok());
  auto st = RaidDevice::Inspect(std::move(*members));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->state, "clean");
  // A missing member names the spec and the member; nothing is created.
  std::filesystem::remove(paths[2]);
  Result<std::unique_ptr<BlockDevice>> dev = OpenDevice(spec, o);
  EXPECT_EQ(dev.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dev.status().message().find(spec + ": " + paths[2] + ": no such file or device"), 0u)
      << dev.status().message();
  EXPECT_FALSE(std::filesystem::exists(paths[2]));
}

// The dev: block store names its device as the command line does and opens it through
// DeviceOpener: the same forms, messages and locks.
TEST(DeviceSpecTest, DevStoreUrlsOpenThroughTheSpecLibrary) {
  TempDir d;
  const std::string path = d.File("store.img");
  Touch(path, 32 << 20);
  DeviceOpenOptions o;
  o.direct = false;
  const store::DeviceOpenFn open = DeviceOpener(o);
  const std::string url = "dev:file:" + path;
  store::FormatOptions f;
  f.segment_bytes = 2 << 20;
  ASSERT_TRUE(store::FormatBlockStore(url, "vol", f, open).ok());
  store::StoreOptions so;
  so.prefix = "vol";
  {
    auto s = store::OpenBlockStore(url, so, open);
    ASSERT_TRUE(s.ok()) << s.status().message();
    const store::ObjectKey k = store::ObjectKey::Block(1, 0, 5000);
    const std::string data = store::test::ObjectBytes(k);
    ASSERT_TRUE((*s)->Put(k, data.data()).ok());
    std::string back(k.bytes, '\0');
    ASSERT_TRUE((*s)->Get(k, 0, k.bytes, back.data()).ok());
    EXPECT_EQ(back, data);
    // The store holds the device's lock while it is open.
    auto again = store::OpenBlockStore(url, so, open);
    EXPECT_EQ(again.status().code(), StatusCode::kBusy);
    EXPECT_NE(again.status().message().find(path + ": in use by process"), std::string::npos)
        << again.status().message();
  }
  EXPECT_EQ(LockHolder(path), "");
  auto missing = store::OpenBlockStore("dev:" + d.File("absent.img"), so, open);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), d.File("absent.img") + ": no such file or device; " +
                                            std::string(kDeviceSpecForms));
  auto bad = store::OpenBlockStore("dev:mem:3000", so, open);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().find("mem:3000: SIZE must be"), 0u) << bad.status().message();
}

TEST(DeviceSpecTest, ForSpecPutsTheNameInFront) {
  Status s = ForSpec("--device", Status::InvalidArgument("mem:3: SIZE must be ..."));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--device mem:3: SIZE must be ...");
  EXPECT_TRUE(ForSpec("--device", Status::OK()).ok());
  EXPECT_EQ(ForSpec("DST", Status::Busy("x: in use")).code(), StatusCode::kBusy);
}

}  // namespace
}  // namespace folio::cli
