#include "bench/datafile.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/aligned_buffer.h"
#include "base/check.h"
#include "bench/workload.h"

namespace folio::bench {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_installed{false};
struct sigaction g_old_int;
struct sigaction g_old_term;
struct sigaction g_old_pipe;

void OnStopSignal(int) { g_stop.store(true); }

constexpr uint64_t kChunkBytes = 1 << 20;


}  // namespace

StopSignal::StopSignal() {
  FOLIO_CHECK_MSG(!g_installed.exchange(true), "only one StopSignal at a time");
  static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
  g_stop.store(false);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = &OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second signal terminates as usual
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  // A closed stdout (| head) must fail a write, not kill the process before clean-up.
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &g_old_pipe);
}

StopSignal::~StopSignal() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGPIPE, &g_old_pipe, nullptr);
  g_installed.store(false);
}

const std::atomic<bool>* StopSignal::flag() const { return &g_stop; }

std::string DataFileName(std::string_view job_name) {
  std::string out;
  for (char c : job_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out = "job" + out;
  return out;
}

namespace {

// A 1 MiB, 4 KiB-aligned buffer of pseudo-random data, stamped per 4 KiB block with the
// position it is written to so no two blocks are alike.
class FillChunk {
 public:
  FillChunk() : buf_(kChunkBytes) {
    uint64_t state = 0x5eed;
    for (uint64_t i = 0; i < kChunkBytes; i += 8) {
      uint64_t v = SplitMix64(&state);
      std::memcpy(buf_.data() + i, &v, 8);
    }
  }
  char* For(uint64_t pos) {
    for (uint64_t b = 0; b < kChunkBytes; b += 4096) {
      const uint64_t stamp = pos + b;
      std::memcpy(buf_.data() + b, &stamp, sizeof(stamp));
    }
    return buf_.data();
  }

 private:
  AlignedBuffer buf_;
};

}  // namespace

Status FillDevice(BlockDevice* device, uint64_t from, uint64_t to,
                  const std::atomic<bool>* stop, ProgressMode progress) {
  FillChunk chunk;
  ProgressOptions po;
  po.mode = progress;
  po.unit = ProgressUnit::kBytes;
  ProgressReporter reporter("fill " + device->name(), to - from, po);
  Status status;
  for (uint64_t pos = from; pos < to; pos += kChunkBytes) {
    if (stop->load()) {
      status = Status::Again("interrupted");
      break;
    }
    const uint64_t len = std::min(kChunkBytes, to - pos);
    status = device->Write(pos, chunk.For(pos), len);
    if (!status.ok()) break;
    reporter.Update(pos + len - from);
  }
  reporter.Finish();
  if (status.ok()) status = device->Flush();
  return status.WithContext(device->name() + ": filling the device with data for the jobs");
}

Status FillFile(const std::string& path, uint64_t from, uint64_t to,
                const std::atomic<bool>* stop, ProgressMode progress) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, path);
  FillChunk chunk;
  ProgressOptions po;
  po.mode = progress;
  po.unit = ProgressUnit::kBytes;
  ProgressReporter reporter("create " + path, to - from, po);
  Status status;
  for (uint64_t pos = from; pos < to && status.ok(); pos += kChunkBytes) {
    if (stop->load()) {
      status = Status::Again("interrupted");
      break;
    }
    char* buf = chunk.For(pos);
    const uint64_t len = std::min(kChunkBytes, to - pos);
    uint64_t done = 0;
    while (done < len) {
      ssize_t n = pwrite(fd, buf + done, len - done, static_cast<off_t>(pos + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status = n < 0 ? Status::FromErrno(errno, path + ": write")
                       : Status::IOError(path + ": write wrote nothing");
        break;
      }
      done += static_cast<uint64_t>(n);
    }
    reporter.Update(pos + len - from);
  }
  reporter.Finish();
  if (status.ok() && fdatasync(fd) != 0) status = Status::FromErrno(errno, path + ": fdatasync");
  if (status.ok()) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return status;
}

Result<std::unique_ptr<BenchDir>> BenchDir::Create(const std::string& parent) {
  std::string tmpl = parent + "/folio-bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno(errno, parent + ": mkdtemp");
  return std::unique_ptr<BenchDir>(new BenchDir(tmpl));
}

BenchDir::~BenchDir() {
  for (const std::string& f : files_) unlink(f.c_str());
  rmdir(path_.c_str());
}

Result<std::string> BenchDir::CreateDataFile(std::string_view job_name, uint64_t bytes,
                                             const std::atomic<bool>* stop,
                                             ProgressMode progress) {
  std::string file = path_ + "/" + DataFileName(job_name);
  for (int i = 2; access(file.c_str(), F_OK) == 0; ++i) {
    file = path_ + "/" + DataFileName(job_name) + "." + std::to_string(i);
  }
  files_.push_back(file);
  FOLIO_RETURN_IF_ERROR(FillFile(file, 0, bytes, stop, progress));
  return file;
}

void BenchDir::Remove(const std::string& file) {
  auto it = std::find(files_.begin(), files_.end(), file);
  if (it == files_.end()) return;
  unlink(file.c_str());
  files_.erase(it);
}

}  // namespace folio::bench
