#include "doctor_probe.h"

#include "base/aligned_buffer.h"
#include "folio/block_device.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace folio::cli {

namespace {

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string BracketedChoice(std::string_view content) {
  size_t open = content.find('[');
  size_t close = content.find(']', open == std::string_view::npos ? 0 : open);
  if (open != std::string_view::npos && close != std::string_view::npos) {
    return std::string(content.substr(open + 1, close - open - 1));
  }
  return std::string(TrimView(content));
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<std::string> ReadSysfsChoice(const std::string& path) {
  std::optional<std::string> content = ReadSmallFile(path);
  if (!content) return std::nullopt;
  return BracketedChoice(*content);
}

std::vector<std::string> ListNumberedEntries(const std::string& dir, std::string_view prefix,
                                             std::string_view suffix) {
  std::vector<std::pair<uint64_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {};
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix)) {
      continue;
    }
    std::string_view digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    found.emplace_back(std::strtoull(std::string(digits).c_str(), nullptr, 10), std::string(name));
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [n, name] : found) names.push_back(std::move(name));
  return names;
}

std::map<std::string, uint64_t> ParseMeminfo(std::string_view content) {
  std::map<std::string, uint64_t> fields;
  std::istringstream in{std::string(content)};
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const char* p = line.c_str() + colon + 1;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(p, &end, 10);
    if (end == p || errno != 0) continue;
    fields[line.substr(0, colon)] = v;
  }
  return fields;
}

std::map<std::string, uint64_t> ReadMeminfo() {
  std::optional<std::string> content = ReadSmallFile("/proc/meminfo");
  return content ? ParseMeminfo(*content) : std::map<std::string, uint64_t>{};
}

namespace {

// Creates a new empty file dir/.folio-doctor-<random> with extra open flags; returns its fd
// and path, or the error (EINVAL with O_DIRECT means the file system refuses O_DIRECT).
Result<int> CreateProbeFile(const std::string& dir, int extra_flags, std::string* path) {
  std::mt19937_64 rng(std::random_device{}());
  for (int attempt = 0; attempt < 16; ++attempt) {
    *path = dir + "/.folio-doctor-" + std::to_string(rng() % 1000000000);
    int fd = open(path->c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | extra_flags, 0600);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  if (err == EINVAL && (extra_flags & O_DIRECT) != 0) {
    return Status::NotSupported(dir + ": file system does not support O_DIRECT");
  }
  return Status::FromErrno(err, *path);
}

// Two 4 KiB-aligned buffers, the first filled with random bytes.
std::pair<AlignedBuffer, AlignedBuffer> ProbeBuffers() {
  AlignedBuffer out(4096);
  AlignedBuffer in(4096);
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; i < 4096; ++i) out.data()[i] = static_cast<char>(rng());
  std::memset(in.data(), 0, 4096);
  return {std::move(out), std::move(in)};
}

}  // namespace

Status ProbeODirect(const std::string& dir) {
  constexpr size_t kBytes = 4096;
  std::string path;
  FOLIO_ASSIGN_OR_RETURN(int fd, CreateProbeFile(dir, O_DIRECT, &path));
  auto [out, in] = ProbeBuffers();
  Status status;
  ssize_t n = pwrite(fd, out.data(), kBytes, 0);
  if (n != static_cast<ssize_t>(kBytes)) {
    status = n < 0 ? Status::FromErrno(errno, path + ": O_DIRECT write")
                   : Status::IOError(path + ": O_DIRECT write was short");
  } else {
    n = pread(fd, in.data(), kBytes, 0);
    if (n != static_cast<ssize_t>(kBytes)) {
      status = n < 0 ? Status::FromErrno(errno, path + ": O_DIRECT read")
                     : Status::IOError(path + ": O_DIRECT read was short");
    } else if (std::memcmp(in.data(), out.data(), kBytes) != 0) {
      status = Status::Corruption(path + ": O_DIRECT read returned other bytes than written");
    }
  }
  close(fd);
  unlink(path.c_str());
  return status;
}

Status ProbeIoUring(const std::string& dir) {
  std::string path;
  FOLIO_ASSIGN_OR_RETURN(int fd, CreateProbeFile(dir, 0, &path));
  const bool sized = ftruncate(fd, 4096) == 0;
  const int err = errno;
  close(fd);
  Status status;
  if (!sized) {
    status = Status::FromErrno(err, path + ": ftruncate");
  } else {
    FileDeviceOptions options;
    options.engine = FileEngine::kUring;
    options.direct = false;
    options.queue_depth = 4;
    Result<std::unique_ptr<BlockDevice>> dev = OpenFileDevice(path, options);
    if (!dev.ok()) {
      status = dev.status();
    } else {
      auto [out, in] = ProbeBuffers();
      status = (*dev)->Write(0, out.data(), 4096);
      if (status.ok()) status = (*dev)->Read(0, in.data(), 4096);
      if (status.ok() && std::memcmp(in.data(), out.data(), 4096) != 0) {
        status = Status::Corruption(path + ": io_uring read returned other bytes than written");
      }
    }
  }
  unlink(path.c_str());
  return status;
}

Status ProbeDevFuse() {
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "/dev/fuse");
  close(fd);
  return Status::OK();
}

}  // namespace folio::cli
