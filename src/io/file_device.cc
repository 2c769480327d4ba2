// OpenFileDevice: opens and probes a file or block device and picks the I/O engine.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/units.h"
#include "io/file_device_impl.h"

namespace folio {
namespace io_internal {

OpenedFile::OpenedFile(OpenedFile&& o) noexcept { *this = std::move(o); }

OpenedFile& OpenedFile::operator=(OpenedFile&& o) noexcept {
  if (this != &o) {
    if (fd >= 0) ::close(fd);
    fd = std::exchange(o.fd, -1);
    path = std::move(o.path);
    name = std::move(o.name);
    block_device = o.block_device;
    direct = o.direct;
    read_only = o.read_only;
    logical_block_bytes = o.logical_block_bytes;
    mem_align_bytes = o.mem_align_bytes;
    size_bytes = o.size_bytes;
  }
  return *this;
}

OpenedFile::~OpenedFile() {
  if (fd >= 0) ::close(fd);
}

namespace {

// Direct I/O offset alignment of an open regular file from statx(STATX_DIOALIGN) (Linux 6.1+),
// or 0 when the kernel or file system does not report it. (glibc takes struct statx from
// <linux/stat.h>, which has the fields since Linux 6.1 headers.)
uint32_t DioOffsetAlign(int fd) {
#ifdef STATX_DIOALIGN
  struct statx stx;
  std::memset(&stx, 0, sizeof(stx));
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return 0;
  if ((stx.stx_mask & STATX_DIOALIGN) == 0) return 0;
  return stx.stx_dio_offset_align;
#else
  (void)fd;
  return 0;
#endif
}

Status ProbeGeometry(const FileDeviceOptions& options, OpenedFile* f) {
  struct stat st;
  if (::fstat(f->fd, &st) != 0) return Status::FromErrno(errno, f->path + ": fstat");
  if (S_ISBLK(st.st_mode)) {
    f->block_device = true;
    uint64_t bytes = 0;
    int sector = 0;
    if (::ioctl(f->fd, BLKGETSIZE64, &bytes) != 0) {
      return Status::FromErrno(errno, f->path + ": ioctl BLKGETSIZE64");
    }
    if (::ioctl(f->fd, BLKSSZGET, &sector) != 0) {
      return Status::FromErrno(errno, f->path + ": ioctl BLKSSZGET");
    }
    if (options.size_bytes > bytes) {
      return Status::InvalidArgument(f->path + ": size " + FormatSize(options.size_bytes) +
                                     " is larger than the block device (" + FormatSize(bytes) +
                                     "); omit the size or use a smaller one");
    }
    f->logical_block_bytes = static_cast<uint32_t>(std::max(sector, 512));
    f->size_bytes = bytes;
  } else if (S_ISREG(st.st_mode)) {
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    if (options.size_bytes > bytes) {
      if (options.read_only) {
        return Status::InvalidArgument(f->path + ": file is " + FormatSize(bytes) +
                                       ", smaller than the size " +
                                       FormatSize(options.size_bytes) + " of a read-only device");
      }
      if (::ftruncate(f->fd, static_cast<off_t>(options.size_bytes)) != 0) {
        return Status::FromErrno(errno, f->path + ": extending to " +
                                            FormatSize(options.size_bytes));
      }
      bytes = options.size_bytes;
    }
    uint32_t lbs = 512;
    if (f->direct) {
      // Use what the file system reports; 4 KiB is safe everywhere when it reports nothing.
      uint32_t dio = DioOffsetAlign(f->fd);
      lbs = dio != 0 ? std::max<uint32_t>(dio, 512) : 4096;
    }
    f->logical_block_bytes = lbs;
    f->size_bytes = bytes - bytes % lbs;
  } else {
    return Status::InvalidArgument(f->path + ": not a regular file or block device");
  }
  f->mem_align_bytes = f->direct ? f->logical_block_bytes : 0;
  return Status::OK();
}

}  // namespace

Status ShrinkWatch::Check(const OpenedFile& f) const {
  const uint64_t end = end_bytes_.load(std::memory_order_acquire);
  if (end == kNotShrunk) return Status::OK();
  return Status::IOError(f.name + ": the file shrank to " + std::to_string(end) +
                         " bytes while in use (the device is " + FormatSize(f.size_bytes) +
                         "): data past its end is gone; open it again to use it");
}

Status ShrinkWatch::Shrunk(const OpenedFile& f, uint64_t end_bytes) {
  uint64_t expected = kNotShrunk;
  end_bytes_.compare_exchange_strong(expected, end_bytes, std::memory_order_acq_rel);
  return Check(f);
}

Status ShrinkWatch::ReadHitEnd(const OpenedFile& f, const std::string& what, uint64_t end_bytes) {
  (void)Shrunk(f, end_bytes);
  return Status::IOError(f.name + ": " + what + ": the file ends at byte " +
                         std::to_string(end_bytes) + ", inside the device (" +
                         FormatSize(f.size_bytes) + "): it shrank while in use");
}

Status ShrinkWatch::AfterFlush(const OpenedFile& f) {
  if (f.block_device) return Check(f);
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return Status::FromErrno(errno, f.name + ": fstat after fsync");
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  return bytes < f.size_bytes ? Shrunk(f, bytes) : Check(f);
}

Result<OpenedFile> OpenBackingFile(const std::string& path, const FileDeviceOptions& options) {
  if (options.size_bytes % 4096 != 0) {
    return Status::InvalidArgument(path + ": size " + std::to_string(options.size_bytes) +
                                   " is not a multiple of 4096 (e.g. 1G)");
  }
  if (options.queue_depth == 0 || options.queue_depth > 4096) {
    return Status::InvalidArgument(path + ": queue depth " +
                                   std::to_string(options.queue_depth) +
                                   " must be between 1 and 4096");
  }
  if (options.max_request_bytes < 4096) {
    return Status::InvalidArgument(path + ": max request bytes " +
                                   std::to_string(options.max_request_bytes) +
                                   " must be at least 4096");
  }
  int flags = O_CLOEXEC | (options.read_only ? O_RDONLY : O_RDWR);
  if (options.create && !options.read_only) flags |= O_CREAT;
  int fd = ::open(path.c_str(), flags | (options.direct ? O_DIRECT : 0), 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return Status::NotFound(path + ": no such file or directory (create it, or open with "
                                     "create and a size)");
    }
    struct stat st;
    if (err == EISDIR || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      // (A read-only O_DIRECT open of a directory fails with EINVAL, not EISDIR.)
      return Status::InvalidArgument(path + ": is a directory; give a regular file or a block "
                                            "device");
    }
    if (err == EINVAL && options.direct) {
      int probe = ::open(path.c_str(), flags, 0644);
      if (probe >= 0) {
        ::close(probe);
        return Status::NotSupported(path + ": file system does not support O_DIRECT; use a file "
                                           "on another file system or direct=0");
      }
    }
    return Status::FromErrno(err, path + ": open");
  }
  OpenedFile f;
  f.fd = fd;
  f.path = path;
  f.name = "file:" + path;
  f.direct = options.direct;
  f.read_only = options.read_only;
  FOLIO_RETURN_IF_ERROR(ProbeGeometry(options, &f));
  return f;
}

}  // namespace io_internal

Result<std::unique_ptr<BlockDevice>> OpenFileDevice(const std::string& path,
                                                    const FileDeviceOptions& options) {
  using namespace io_internal;
  FOLIO_ASSIGN_OR_RETURN(OpenedFile file, OpenBackingFile(path, options));
  switch (options.engine) {
    case FileEngine::kSync: return NewSyncFileDevice(std::move(file), options);
    case FileEngine::kUring: {
      int err = ProbeUring(options.queue_depth);
      if (err < 0) return Status::FromErrno(-err, path + ": io_uring_queue_init");
      return NewUringFileDevice(std::move(file), options);
    }
    case FileEngine::kAuto: {
      int err = ProbeUring(options.queue_depth);
      if (err == -ENOSYS || err == -EPERM) {
        if (FirstUringFallback()) {
          std::fprintf(stderr, "folio: warning: io_uring unavailable (%s); using pread/pwrite\n",
                       std::strerror(-err));
        }
        return NewSyncFileDevice(std::move(file), options);
      }
      if (err < 0) return Status::FromErrno(-err, path + ": io_uring_queue_init");
      return NewUringFileDevice(std::move(file), options);
    }
  }
  return Status::InvalidArgument(path + ": unknown file engine");
}

}  // namespace folio
