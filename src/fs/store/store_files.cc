#include "fs/store/store_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/check.h"

namespace folio::store {
namespace {

std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status FsyncPath(const std::string& path, PathKind kind, StoreStats* stats) {
  const int flags = O_RDONLY | O_CLOEXEC | (kind == PathKind::kDirectory ? O_DIRECTORY : 0);
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (stats != nullptr) stats->RecordFsync();
  if (rc != 0) return Status::FromErrno(err, "fsync " + path);
  return Status::OK();
}

Status MakeDirs(const std::string& top, const std::string& dir, StoreStats* stats) {
  // Collect the missing directories from dir upwards, stopping at top (or at one that exists).
  std::vector<std::string> missing;
  std::string cur = dir;
  while (true) {
    struct stat st;
    if (::stat(cur.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(cur + ": not a directory");
      break;
    }
    if (errno != ENOENT) return Status::FromErrno(errno, "stat " + cur);
    if (!top.empty() && cur == top) return Status::NotFound(top + ": no such directory");
    missing.push_back(cur);
    std::string up = Parent(cur);
    if (up == cur) break;
    cur = up;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + *it);
    }
    FOLIO_RETURN_IF_ERROR(FsyncPath(Parent(*it), PathKind::kDirectory, stats));
  }
  return Status::OK();
}

namespace {

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + path);
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace

namespace {

// The whole blocks of data with O_DIRECT, then (the flag cleared) the short rest through the
// page cache. Nothing written (false) when the file system refuses O_DIRECT.
Result<bool> WriteDirect(int fd, std::string_view data, const std::string& path,
                         StoreStats* stats) {
  const size_t whole = data.size() & ~(kDirectAlignBytes - 1);
  if (whole == 0) return false;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return Status::FromErrno(errno, "fcntl " + path);
  if (::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) {
    if (errno == EINVAL) return false;
    return Status::FromErrno(errno, "fcntl O_DIRECT " + path);
  }
  size_t done = 0;
  while (done < whole) {
    ssize_t n = ::write(fd, data.data() + done, whole - done);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EINVAL && done == 0) {
        // Some file systems take the flag and refuse the write instead.
        (void)::fcntl(fd, F_SETFL, flags);
        return false;
      }
      return Status::FromErrno(err, "write " + path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fcntl(fd, F_SETFL, flags) != 0) return Status::FromErrno(errno, "fcntl " + path);
  FOLIO_RETURN_IF_ERROR(WriteAll(fd, data.substr(whole), path));
  if (stats != nullptr) stats->RecordDirectWrite(whole);
  return true;
}

}  // namespace

Status WriteFileAtomically(const std::string& top, const std::string& dir,
                           const std::string& temp, const std::string& final_path,
                           std::string_view data, PutSync sync, StoreStats* stats,
                           WriteMode mode, std::atomic<bool>* direct_refused) {
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    FOLIO_RETURN_IF_ERROR(MakeDirs(top, dir, stats));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) return Status::FromErrno(errno, "create " + temp);
  // Written directly (true), failed, or left to the page cache (false).
  Result<bool> direct = false;
  if (mode == WriteMode::kDirect &&
      (direct_refused == nullptr || !direct_refused->load(std::memory_order_relaxed))) {
    FOLIO_DCHECK(reinterpret_cast<uintptr_t>(data.data()) % kDirectAlignBytes == 0);
    direct = WriteDirect(fd, data, temp, stats);
    if (direct.ok() && !*direct && data.size() >= kDirectAlignBytes && direct_refused != nullptr) {
      direct_refused->store(true, std::memory_order_relaxed);
    }
  }
  Status s = !direct.ok() ? direct.status() : *direct ? Status::OK() : WriteAll(fd, data, temp);
  if (s.ok() && sync == PutSync::kNow) {
    if (::fsync(fd) != 0) s = Status::FromErrno(errno, "fsync " + temp);
    if (stats != nullptr) stats->RecordFsync();
  }
  if (::close(fd) != 0 && s.ok()) s = Status::FromErrno(errno, "close " + temp);
  if (s.ok() && ::rename(temp.c_str(), final_path.c_str()) != 0) {
    s = Status::FromErrno(errno, "rename " + temp);
  }
  if (!s.ok()) {
    ::unlink(temp.c_str());
    return s;
  }
  if (sync == PutSync::kDeferred) return Status::OK();
  return FsyncPath(dir, PathKind::kDirectory, stats);
}

Result<uint64_t> PreadFull(int fd, char* buf, uint64_t length, uint64_t offset,
                           std::string_view path) {
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, buf + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, fmt::format("read {}", path));
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  return done;
}

Status WalkObjectTree(const std::string& base, const std::string& top,
                      const std::function<void(std::string_view, uint64_t)>& fn) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root = fs::path(base) / top;
  if (!fs::exists(root, ec)) return Status::OK();
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) return Status::IOError(fmt::format("list {}: {}", root.string(), ec.message()));
  const size_t base_len = base.size() + 1;
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::IOError(fmt::format("list {}: {}", root.string(), ec.message()));
    if (!it->is_regular_file(ec)) continue;
    uint64_t size = it->file_size(ec);
    if (ec) continue;  // removed while listing
    std::string path = it->path().string();
    fn(std::string_view(path).substr(base_len), size);
  }
  return Status::OK();
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::IOError(fmt::format("remove {}: {}", path, ec.message()));
  return Status::OK();
}

Status WriteDirDescriptor(const std::string& base, std::string_view prefix) {
  nlohmann::json j = {{"format", kDirStoreFormat},
                      {"version", kDirStoreVersion},
                      {"prefix", std::string(prefix)}};
  std::string text = j.dump(2) + "\n";
  std::string final_path = base + "/" + kDirStoreDescriptor;
  return WriteFileDurably(base, base, final_path + ".tmp", final_path, text);
}

Status CheckDirDescriptor(const std::string& root, std::string_view prefix) {
  std::string path = root + "/" + std::string(prefix) + "/" + kDirStoreDescriptor;
  std::ifstream in(path);
  if (!in) {
    return Status::NotFound(fmt::format(
        "dir:{}: no Folio store of volume '{}' here ({} is missing); format the volume first",
        root, prefix, path));
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kDirStoreFormat ||
      !j.contains("version") || !j["version"].is_number_integer()) {
    return Status::Corruption(fmt::format("{}: not a Folio dir store descriptor", path));
  }
  int version = j["version"].get<int>();
  if (version > kDirStoreVersion) {
    return Status::NotSupported(fmt::format(
        "{}: store format version {} is newer than this Folio's {}; use a newer folio", path,
        version, kDirStoreVersion));
  }
  if (j.value("prefix", "") != prefix) {
    return Status::Corruption(fmt::format("{}: belongs to volume '{}', not '{}'", path,
                                          j.value("prefix", ""), prefix));
  }
  return Status::OK();
}

}  // namespace folio::store
