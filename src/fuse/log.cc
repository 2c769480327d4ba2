#define FUSE_USE_VERSION 312
#include "fuse/log.h"

#include <fuse3/fuse_log.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace folio::fuse {

namespace {

struct LogState {
  std::mutex mu;
  std::string prefix = "folio";
  bool capturing = false;
  std::string captured;
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: used by detached threads
  return *state;
}

void LibfuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  if (level > FUSE_LOG_NOTICE) return;
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  std::string line = buf;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (line.empty()) return;
  LogState& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.capturing) {
      if (!s.captured.empty()) s.captured += "; ";
      s.captured += line;
      return;
    }
  }
  Log("libfuse: " + line);
}

}  // namespace

void SetLogPrefix(std::string_view prefix) {
  LogState& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.prefix = std::string(prefix);
  }
  fuse_set_log_func(&LibfuseLog);
}

void Log(std::string_view message) {
  std::string line;
  {
    LogState& s = State();
    std::lock_guard<std::mutex> lock(s.mu);
    line = s.prefix;
  }
  line += ": ";
  line += message;
  line += '\n';
  ssize_t n = write(STDERR_FILENO, line.data(), line.size());
  (void)n;
}

void BeginLibfuseCapture() {
  LogState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.capturing = true;
  s.captured.clear();
}

std::string EndLibfuseCapture() {
  LogState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.capturing = false;
  return std::move(s.captured);
}

}  // namespace folio::fuse
