#include "cli/cli_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace folio::cli {

std::string OneLine(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\n') {
      // Collapse a run of newlines and the indentation after them.
      while (i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == ' ')) ++i;
      if (i + 1 < s.size() && !out.empty()) out += "; ";
    } else if (c == '\t' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

void PrintError(std::string_view prefix, std::string_view message) {
  std::string line = std::string(prefix) + ": " + OneLine(message) + "\n";
  ssize_t n = write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

int UsageError(std::string_view prefix, std::string_view message) {
  PrintError(prefix, message);
  return kExitUsage;
}

int RuntimeError(std::string_view prefix, std::string_view message) {
  PrintError(prefix, message);
  return kExitRuntime;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kNotSupported:
      return kExitUsage;
    default:
      return kExitRuntime;
  }
}

std::string StatusLine(const Status& status) {
  return status.message().empty() ? status.ToString() : std::string(status.message());
}

int ExitWithStatus(std::string_view prefix, const Status& status) {
  PrintError(prefix, StatusLine(status));
  return ExitCodeFor(status);
}

Status CheckDirectoryFlag(std::string_view flag, const std::string& dir,
                          std::string_view default_hint) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    std::string what = err == ENOENT ? "no such directory" : std::strerror(err);
    return Status::InvalidArgument(std::string(flag) + " " + dir + ": " + what +
                                   "; give an existing directory (default " +
                                   std::string(default_hint) + ")");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(std::string(flag) + " " + dir +
                                   ": not a directory; give an existing directory (default " +
                                   std::string(default_hint) + ")");
  }
  return Status::OK();
}

Status FullIo(int fd, bool write, char* buf, uint64_t len, uint64_t pos, const std::string& path) {
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = write ? pwrite(fd, buf + done, len - done, static_cast<off_t>(pos + done))
                      : pread(fd, buf + done, len - done, static_cast<off_t>(pos + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::FromErrno(errno, path + ": " + (write ? "pwrite" : "pread") + " at " +
                                          std::to_string(pos + done));
    }
    if (n == 0) {
      return Status::IOError(path + ": unexpected end of file at " + std::to_string(pos + done));
    }
    done += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

}  // namespace folio::cli
