// Internals of the file devices: the opened, probed file shared by the io_uring and the
// pread / pwrite engines, and the engine constructors OpenFileDevice chooses between.
//
// Thread safety: OpenedFile is a value owned by one device; the functions are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "folio/block_device.h"

namespace folio::io_internal {

// An open file descriptor with its probed geometry. Move-only; closes the fd.
struct OpenedFile {
  int fd = -1;
  std::string path;
  std::string name;                  // "file:<path>"
  bool block_device = false;
  bool direct = false;               // opened with O_DIRECT
  bool read_only = false;
  uint32_t logical_block_bytes = 512;
  uint32_t mem_align_bytes = 0;      // O_DIRECT buffer alignment, 0 without O_DIRECT
  uint64_t size_bytes = 0;

  OpenedFile() = default;
  OpenedFile(OpenedFile&& o) noexcept;
  OpenedFile& operator=(OpenedFile&& o) noexcept;
  OpenedFile(const OpenedFile&) = delete;
  OpenedFile& operator=(const OpenedFile&) = delete;
  ~OpenedFile();
};

// A regular file that shrank below the device's size while in use has lost the data past its
// new end. The device's size is fixed at open (and rounded down to whole blocks), so a read
// that meets end of file inside it, or a flush after which the file is smaller than the
// device, can only mean that: the request fails (IOError naming the file, where it ends and
// the device's size), and so does every request after it, until the file is opened again.
// A shrunk member must not read as zeros, nor be "repaired" by writes that grow the file back
// around holes: RAID fails it and serves its data from parity.
//
// Not seen: a write past the new end before the next read that meets the end or the next
// flush extends the file again (leaving a hole that reads as zeros); the next flush still
// fails if the file is smaller than the device.
//
// Thread safety: all methods are thread-safe.
class ShrinkWatch {
 public:
  // The error of a request made after the shrink was seen, else OK.
  Status Check(const OpenedFile& f) const;
  // A read met end of file at end_bytes (inside the device): records it; returns the error
  // of the request `what` ("read of 4096 bytes at offset N").
  Status ReadHitEnd(const OpenedFile& f, const std::string& what, uint64_t end_bytes);
  // After a successful flush: the error if the file is now smaller than the device, else OK.
  Status AfterFlush(const OpenedFile& f);

 private:
  Status Shrunk(const OpenedFile& f, uint64_t end_bytes);
  static constexpr uint64_t kNotShrunk = UINT64_MAX;
  std::atomic<uint64_t> end_bytes_{kNotShrunk};
};

// Opens and probes path per options (flags, size extension, block size). Errors: NotFound,
// NotSupported (O_DIRECT refused), InvalidArgument (size), IOError from the system.
Result<OpenedFile> OpenBackingFile(const std::string& path, const FileDeviceOptions& options);

std::unique_ptr<BlockDevice> NewSyncFileDevice(OpenedFile file, const FileDeviceOptions& options);
std::unique_ptr<BlockDevice> NewUringFileDevice(OpenedFile file, const FileDeviceOptions& options);

// Creates and destroys an io_uring of `entries` entries. Returns 0 or -errno.
int ProbeUring(uint32_t entries);
// Whether the caller is the first in this process to fall back from io_uring to pread/pwrite:
// it prints the one warning line, every later fallback is silent.
bool FirstUringFallback();
// Test hook: a nonzero err makes ProbeUring return -err without trying (0 restores); either
// rearms FirstUringFallback.
void SetUringProbeFailureForTest(int err);
// Test hook: read / write SQEs that used registered (fixed) buffers on the calling thread's
// ring of dev, or 0 when dev is not an io_uring file device or the thread has no ring.
uint64_t FixedBufferRequestsForTest(BlockDevice* dev);

}  // namespace folio::io_internal
