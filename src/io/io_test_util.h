// Test helpers of the io layer: seeds, aligned buffers, temporary directories, the skip of
// io_uring tests where there is no io_uring, and ForwardingDevice, the base of test wrappers
// that change one call of a device.
//
// Thread safety: the helpers are independent values; TempDir is owned by one test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>

#include "base/aligned_buffer.h"
#include "base/test_seed.h"
#include "folio/block_device.h"
#include "io/file_device_impl.h"
#include "io/forwarding_device.h"

namespace folio::io_test {

// A mkdtemp directory under /tmp, removed with its contents.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/folio-io-test-XXXXXX";
    char* p = ::mkdtemp(tmpl);
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Polls until nothing of this thread is in flight; fails (instead of spinning forever) when
// the device reports requests in flight but completes none of them.
inline ::testing::AssertionResult Drain(BlockDevice* dev) {
  int idle = 0;
  while (dev->InFlight() > 0) {
    Result<size_t> n = dev->Poll(1);
    if (!n.ok()) return ::testing::AssertionFailure() << n.status().ToString();
    if (*n == 0 && ++idle > 100) {
      return ::testing::AssertionFailure()
             << dev->name() << ": " << dev->InFlight() << " requests in flight never complete";
    }
  }
  return ::testing::AssertionSuccess();
}

// Skips the calling test (use it in the test body or SetUp) when this system has no io_uring:
// qemu-user implements none of its system calls (ENOSYS; `make test-arm64` runs under it), and a
// kernel can refuse them (EPERM, kernel.io_uring_disabled). Any other probe result runs the
// test, so an io_uring that exists but fails still fails the test. ctest lists the skips.
#define FOLIO_SKIP_WITHOUT_IO_URING()                                                      \
  do {                                                                                     \
    if (const int folio_err = ::folio::io_internal::ProbeUring(8);                         \
        folio_err == -ENOSYS || folio_err == -EPERM) {                                     \
      GTEST_SKIP() << "io_uring is unavailable here (" << std::strerror(-folio_err)        \
                   << "): the io_uring engine is not tested";                              \
    }                                                                                      \
  } while (0)

// The base of test wrappers that change one call of a device (io/forwarding_device.h).
using ForwardingDevice = ::folio::ForwardingDevice;

}  // namespace folio::io_test
