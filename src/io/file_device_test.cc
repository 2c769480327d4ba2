// File-device specifics: opening errors, engine fallback, read-only, short reads at EOF.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "folio/arena.h"
#include "folio/block_device.h"
#include "io/file_device_impl.h"
#include "io/io_test_util.h"

namespace folio {
namespace {


class FileDeviceTest : public ::testing::TestWithParam<FileEngine> {
 protected:
  FileDeviceOptions Options(uint64_t size_bytes = 0) const {
    FileDeviceOptions o;
    o.engine = GetParam();
    o.create = size_bytes > 0;
    o.size_bytes = size_bytes;
    return o;
  }
  void ShortReadAtEndOfFile(bool direct);
  io_test::TempDir dir_;
};

TEST_P(FileDeviceTest, MissingPathIsNotFound) {
  auto dev = OpenFileDevice(dir_.File("nope"), Options());
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(dev.status().IsNotFound());
  EXPECT_NE(dev.status().ToString().find(dir_.File("nope")), std::string::npos);
}

TEST_P(FileDeviceTest, DirectoryIsInvalidArgument) {
  auto dev = OpenFileDevice(dir_.path(), Options());
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(dev.status().IsInvalidArgument()) << dev.status().ToString();
  EXPECT_NE(dev.status().ToString().find("is a directory"), std::string::npos);
}

TEST_P(FileDeviceTest, SizeMustBeMultipleOf4096) {
  auto dev = OpenFileDevice(dir_.File("f"), Options(5000));
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(dev.status().IsInvalidArgument());
  EXPECT_NE(dev.status().ToString().find("5000 is not a multiple of 4096"), std::string::npos);
}

TEST_P(FileDeviceTest, CreateExtendsAndReopenKeepsData) {
  const std::string path = dir_.File("f");
  AlignedBuffer buf(8192);
  std::memset(buf.data(), 0x33, 8192);
  {
    auto dev = OpenFileDevice(path, Options(1 << 20));
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_EQ((*dev)->size_bytes(), 1u << 20);
    EXPECT_EQ((*dev)->name(), "file:" + path);
    ASSERT_TRUE((*dev)->Write(8192, buf.data(), 8192).ok());
    ASSERT_TRUE((*dev)->Flush().ok());
  }
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  FileDeviceOptions o = Options();
  o.read_only = true;
  auto dev = OpenFileDevice(path, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ((*dev)->size_bytes(), 1u << 20);
  std::memset(buf.data(), 0, 8192);
  ASSERT_TRUE((*dev)->Read(8192, buf.data(), 8192).ok());
  EXPECT_EQ(buf.data()[8191], 0x33);
  Status s = (*dev)->Write(0, buf.data(), 4096);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.ToString();
  EXPECT_NE(s.ToString().find("read-only"), std::string::npos);
}

// A file shrunk behind the device's back: reads past its end return zeros, including the
// unaligned tail block. (ext4's O_DIRECT zeroes holes past EOF itself; buffered reads leave
// the buffer alone, so the buffered run is the one that proves the device zero-fills.)
TEST_P(FileDeviceTest, ShortReadAtEndOfFileZeroFills) {
  for (bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "O_DIRECT" : "buffered");
    ShortReadAtEndOfFile(direct);
  }
}

void FileDeviceTest::ShortReadAtEndOfFile(bool direct) {
  const std::string path = dir_.File(direct ? "direct" : "buffered");
  FileDeviceOptions o = Options(64 << 10);
  o.direct = direct;
  auto dev = OpenFileDevice(path, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  AlignedBuffer buf(65536);
  std::memset(buf.data(), 0x7e, 65536);
  ASSERT_TRUE((*dev)->Write(0, buf.data(), 65536).ok());
  ASSERT_TRUE((*dev)->Flush().ok());
  ASSERT_EQ(::truncate(path.c_str(), 5000), 0);
  std::memset(buf.data(), 0x11, 65536);
  Status s = (*dev)->Read(0, buf.data(), 16384);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(buf.data()[4999], 0x7e);
  EXPECT_EQ(buf.data()[5000], 0);
  EXPECT_EQ(buf.data()[16383], 0);
  EXPECT_EQ(buf.data()[16384], 0x11);
}

TEST_P(FileDeviceTest, ODirectRefusedIsNotSupported) {
  // tmpfs accepted O_DIRECT from Linux 6.6; look for a file system that refuses it.
  const char* dir = "/dev/shm";
  std::string path = std::string(dir) + "/folio-io-odirect-" + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(path.c_str());
    GTEST_SKIP() << dir << " accepts O_DIRECT on this kernel; nothing refuses it here";
  }
  ASSERT_EQ(errno, EINVAL);
  auto dev = OpenFileDevice(path, Options(1 << 20));
  ::unlink(path.c_str());
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(dev.status().ToString().find("does not support O_DIRECT"), std::string::npos);
}

TEST_P(FileDeviceTest, NotARegularFile) {
  auto dev = OpenFileDevice(dir_.path(), Options());
  ASSERT_FALSE(dev.ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, FileDeviceTest,
                         ::testing::Values(FileEngine::kUring, FileEngine::kSync),
                         [](const auto& info) {
                           return info.param == FileEngine::kUring ? "Uring" : "Sync";
                         });

TEST(FileEngineFallback, AutoFallsBackWithOneWarningLine) {
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.create = true;
  o.size_bytes = 1 << 20;
  io_internal::SetUringProbeFailureForTest(ENOSYS);
  ::testing::internal::CaptureStderr();
  auto dev = OpenFileDevice(dir.File("f"), o);
  std::string err = ::testing::internal::GetCapturedStderr();
  o.engine = FileEngine::kUring;
  auto strict = OpenFileDevice(dir.File("f"), o);
  io_internal::SetUringProbeFailureForTest(0);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(err, "folio: warning: io_uring unavailable (Function not implemented); using "
                 "pread/pwrite\n");
  AlignedBuffer buf(4096);
  EXPECT_TRUE((*dev)->Write(0, buf.data(), 4096).ok());
  EXPECT_FALSE(strict.ok());
}

// Single-segment requests whose buffer lies in a registered arena go out as read_fixed /
// write_fixed; the registration also reaches a ring created before it.
TEST(UringFixedBuffers, RegisteredArenaBuffersUseFixedSqes) {
  ArenaOptions ao;
  ao.capacity_bytes = 8 << 20;
  ao.backing = ArenaBacking::k4k;
  auto arena = FolioArena::Create(ao);
  ASSERT_TRUE(arena.ok()) << arena.status().ToString();
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.engine = FileEngine::kUring;
  o.create = true;
  o.size_bytes = 1 << 20;
  auto dev = OpenFileDevice(dir.File("f"), o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  BlockDevice* d = dev->get();
  AlignedBuffer plain(65536);
  ASSERT_TRUE(d->Read(0, plain.data(), 4096).ok());  // the ring exists before registration
  ASSERT_TRUE(d->RegisterArena(arena->get()).ok());
  Folio* a = (*arena)->Alloc(4).value();
  Folio* b = (*arena)->Alloc(4).value();
  char* pa = (*arena)->Data(a);
  char* pb = (*arena)->Data(b);
  for (int i = 0; i < 65536; ++i) pa[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(d->Write(65536, pa, 65536).ok());
  ASSERT_TRUE(d->Read(65536, pb, 65536).ok());
  EXPECT_EQ(std::memcmp(pa, pb, 65536), 0);
  EXPECT_EQ(io_internal::FixedBufferRequestsForTest(d), 2u);
  ASSERT_TRUE(d->Read(65536, plain.data(), 65536).ok());  // outside the arena: no fixed SQE
  EXPECT_EQ(io_internal::FixedBufferRequestsForTest(d), 2u);
  EXPECT_EQ(std::memcmp(plain.data(), pb, 65536), 0);
  (*arena)->Free(a);
  (*arena)->Free(b);
}

TEST(FileEngineNames, Names) {
  EXPECT_EQ(FileEngineName(FileEngine::kAuto), "auto");
  EXPECT_EQ(FileEngineName(FileEngine::kUring), "io_uring");
  EXPECT_EQ(FileEngineName(FileEngine::kSync), "sync");
  EXPECT_EQ(IoOpName(IoOp::kTrim), "trim");
}

}  // namespace
}  // namespace folio
