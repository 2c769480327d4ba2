// File-device specifics: opening errors, engine fallback, read-only, a file that shrinks.
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
  void SetUp() override {
    if (GetParam() == FileEngine::kUring) FOLIO_SKIP_WITHOUT_IO_URING();
  }
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
  // Read-only, O_DIRECT: open(2) says EINVAL, not EISDIR (it was "does not support O_DIRECT").
  for (bool read_only : {false, true}) {
    FileDeviceOptions o = Options();
    o.read_only = read_only;
    auto dev = OpenFileDevice(dir_.path(), o);
    ASSERT_FALSE(dev.ok());
    EXPECT_TRUE(dev.status().IsInvalidArgument()) << dev.status().ToString();
    EXPECT_NE(dev.status().ToString().find("is a directory"), std::string::npos)
        << dev.status().ToString();
  }
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

// A file shrunk behind the device's back (the device's size is fixed at open): a read that
// meets the new end fails, naming the file and where it ends, and every request after it fails
// too, also inside what is left: the device never reads past-the-end bytes as zeros. Buffered
// (512-byte blocks, the unaligned tail) and O_DIRECT.
TEST_P(FileDeviceTest, ReadPastTheEndOfAShrunkFileIsAnErrorAndSticks) {
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
  Status s = (*dev)->Read(0, buf.data(), 16384);
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
  EXPECT_NE(s.ToString().find("file:" + path + ": read of 16384 bytes at offset 0: the file "
                              "ends at byte 5000, inside the device (64K): it shrank while in "
                              "use"),
            std::string::npos)
      << s.ToString();
  for (IoOp op : {IoOp::kRead, IoOp::kWrite, IoOp::kFlush}) {
    s = op == IoOp::kRead ? (*dev)->Read(0, buf.data(), 4096)
        : op == IoOp::kWrite ? (*dev)->Write(0, buf.data(), 4096)
                             : (*dev)->Flush();
    EXPECT_EQ(s.code(), StatusCode::kIOError) << IoOpName(op);
    EXPECT_NE(s.ToString().find("the file shrank to 5000 bytes while in use (the device is 64K)"),
              std::string::npos)
        << s.ToString();
  }
  // Opened again, the file is what is left of it.
  dev->reset();
  o.size_bytes = 0;
  o.create = false;
  auto again = OpenFileDevice(path, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->size_bytes(), 5000 - 5000 % (*again)->logical_block_bytes());
  EXPECT_TRUE((*again)->Read(0, buf.data(), 4096).ok());
  EXPECT_EQ(buf.data()[4095], 0x7e);
}

// Writes do not meet end of file (they grow it back, around a hole), so a shrink that no read
// met is found by the next flush: it fails, and so does everything after it.
TEST_P(FileDeviceTest, FlushFindsAShrinkNoReadMet) {
  const std::string path = dir_.File("f");
  auto dev = OpenFileDevice(path, Options(64 << 10));
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  AlignedBuffer buf = AlignedBuffer::Zeroed(8192);
  ASSERT_TRUE((*dev)->Write(0, buf.data(), 8192).ok());
  ASSERT_TRUE((*dev)->Flush().ok());
  ASSERT_EQ(::truncate(path.c_str(), 8192), 0);
  ASSERT_TRUE((*dev)->Write(0, buf.data(), 4096).ok());  // inside what is left
  Status s = (*dev)->Flush();
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_NE(s.ToString().find("the file shrank to 8192 bytes while in use (the device is 64K)"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ((*dev)->Read(0, buf.data(), 4096).code(), StatusCode::kIOError);
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

// One warning line per process, however many devices it opens (a RAID of three file members
// printed it three times, so every one-line error of `folio raid` came with three lines).
TEST(FileEngineFallback, AutoFallsBackWithOneWarningLine) {
  io_test::TempDir dir;
  FileDeviceOptions o;
  o.create = true;
  o.size_bytes = 1 << 20;
  io_internal::SetUringProbeFailureForTest(ENOSYS);
  ::testing::internal::CaptureStderr();
  auto dev = OpenFileDevice(dir.File("f"), o);
  auto second = OpenFileDevice(dir.File("g"), o);
  std::string err = ::testing::internal::GetCapturedStderr();
  o.engine = FileEngine::kUring;
  auto strict = OpenFileDevice(dir.File("f"), o);
  io_internal::SetUringProbeFailureForTest(0);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(err, "folio: warning: io_uring unavailable (Function not implemented); using "
                 "pread/pwrite\n");
  AlignedBuffer buf(4096);
  EXPECT_TRUE((*dev)->Write(0, buf.data(), 4096).ok());
  EXPECT_FALSE(strict.ok());
}

// Single-segment requests whose buffer lies in a registered arena go out as read_fixed /
// write_fixed; the registration also reaches a ring created before it.
TEST(UringFixedBuffers, RegisteredArenaBuffersUseFixedSqes) {
  FOLIO_SKIP_WITHOUT_IO_URING();
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
