#include "doctor_probe.h"

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

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

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

Status ProbeODirect(const std::string& dir) {
  constexpr size_t kBytes = 4096;
  std::mt19937_64 rng(std::random_device{}());
  std::string path;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    path = dir + "/.folio-doctor-" + std::to_string(rng() % 1000000000);
    fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    const int err = errno;
    if (err == EINVAL) {
      return Status::NotSupported(dir + ": file system does not support O_DIRECT");
    }
    return Status::FromErrno(err, path);
  }
  std::unique_ptr<char, FreeDeleter> out(static_cast<char*>(std::aligned_alloc(kBytes, kBytes)));
  std::unique_ptr<char, FreeDeleter> in(static_cast<char*>(std::aligned_alloc(kBytes, kBytes)));
  for (size_t i = 0; i < kBytes; ++i) out.get()[i] = static_cast<char>(rng());
  Status status;
  ssize_t n = pwrite(fd, out.get(), kBytes, 0);
  if (n != static_cast<ssize_t>(kBytes)) {
    status = n < 0 ? Status::FromErrno(errno, path + ": O_DIRECT write")
                   : Status::IOError(path + ": O_DIRECT write was short");
  } else {
    n = pread(fd, in.get(), kBytes, 0);
    if (n != static_cast<ssize_t>(kBytes)) {
      status = n < 0 ? Status::FromErrno(errno, path + ": O_DIRECT read")
                     : Status::IOError(path + ": O_DIRECT read was short");
    } else if (std::memcmp(in.get(), out.get(), kBytes) != 0) {
      status = Status::Corruption(path + ": O_DIRECT read returned other bytes than written");
    }
  }
  close(fd);
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
