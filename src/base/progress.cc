#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

#include <utility>

#include "base/clock.h"

namespace folio {

namespace {

bool DecideEnabled(const ProgressOptions& o) {
  switch (o.mode) {
    case ProgressMode::kOff: return false;
    case ProgressMode::kAlways: return true;
    case ProgressMode::kAuto: return isatty(o.fd) == 1;
  }
  return false;
}

// Short human size for rates and amounts: "512", "1.50K", "470M".
std::string ShortSize(double bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || bytes >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f%s", bytes, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f%s", bytes, kUnits[u]);
  }
  return buf;
}

std::string ShortCount(double n) {
  char buf[32];
  if (n >= 10e6) std::snprintf(buf, sizeof(buf), "%.0fM", n / 1e6);
  else if (n >= 1e6) std::snprintf(buf, sizeof(buf), "%.1fM", n / 1e6);
  else if (n >= 10e3) std::snprintf(buf, sizeof(buf), "%.0fk", n / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", n);
  return buf;
}

}  // namespace

std::string FormatElapsed(uint64_t ms) {
  char buf[32];
  if (ms < 1000) {
    std::snprintf(buf, sizeof(buf), "%llums", static_cast<unsigned long long>(ms));
  } else if (ms < 60000) {
    std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3600000) {
    std::snprintf(buf, sizeof(buf), "%llum%02llus", static_cast<unsigned long long>(ms / 60000),
                  static_cast<unsigned long long>(ms / 1000 % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lluh%02llum",
                  static_cast<unsigned long long>(ms / 3600000),
                  static_cast<unsigned long long>(ms / 60000 % 60));
  }
  return buf;
}

std::string FormatProgressLine(std::string_view operation, uint64_t elapsed_ms, uint64_t done,
                               uint64_t total, ProgressUnit unit, std::string_view detail) {
  std::string line(operation);
  // A timed run's done/total already is its elapsed time.
  if (unit != ProgressUnit::kSeconds) line += "  " + FormatElapsed(elapsed_ms);
  const double secs = static_cast<double>(elapsed_ms) / 1000.0;
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  switch (unit) {
    case ProgressUnit::kItems:
      line += "  " + ShortCount(static_cast<double>(done));
      if (total != 0) line += "/" + ShortCount(static_cast<double>(total));
      if (secs > 0) line += "  " + ShortCount(rate) + "/s";
      break;
    case ProgressUnit::kBytes:
      line += "  " + ShortSize(static_cast<double>(done));
      if (total != 0) line += "/" + ShortSize(static_cast<double>(total));
      if (secs > 0) line += "  " + ShortSize(rate) + "/s";
      break;
    case ProgressUnit::kSeconds:
      line += "  " + FormatElapsed(done);
      if (total != 0) line += "/" + FormatElapsed(total);
      break;
  }
  if (total != 0 && done < total) {
    if (unit == ProgressUnit::kSeconds) {
      line += "  ETA " + FormatElapsed(total - done);
    } else if (rate > 0) {
      const double eta_s = static_cast<double>(total - done) / rate;
      line += "  ETA " + FormatElapsed(static_cast<uint64_t>(eta_s * 1000.0));
    }
  }
  if (!detail.empty()) {
    line += "  ";
    line += detail;
  }
  return line;
}

ProgressReporter::ProgressReporter(std::string operation, uint64_t total,
                                   const ProgressOptions& options)
    : operation_(std::move(operation)),
      total_(total),
      options_(options),
      enabled_(DecideEnabled(options)),
      start_ns_(Now()) {}

ProgressReporter::~ProgressReporter() { Finish(); }

uint64_t ProgressReporter::Now() const {
  return MonotonicNowNs();
}

void ProgressReporter::Update(uint64_t done) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = done;
  if (finished_) return;
  const uint64_t now = Now();
  if (drawn_ && now - last_draw_ns_ < options_.min_interval_ms * 1000000ull) return;
  DrawLocked(now);
}

void ProgressReporter::SetDetail(std::string detail) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  detail_ = std::move(detail);
}

void ProgressReporter::DrawLocked(uint64_t now) {
  const uint64_t elapsed_ms = (now - start_ns_) / 1000000ull;
  std::string line = "\r" +
                     FormatProgressLine(operation_, elapsed_ms, done_, total_, options_.unit,
                                        detail_) +
                     "\033[K";
  // Best effort: a progress line that cannot be written is not an error of the operation.
  ssize_t n = write(options_.fd, line.data(), line.size());
  (void)n;
  last_draw_ns_ = now;
  drawn_ = true;
  ++draws_;
}

void ProgressReporter::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (enabled_ && drawn_) {
    static constexpr char kClear[] = "\r\033[K";
    ssize_t n = write(options_.fd, kClear, sizeof(kClear) - 1);
    (void)n;
  }
}

uint64_t ProgressReporter::draws() const {
  std::lock_guard<std::mutex> lock(mu_);
  return draws_;
}

}  // namespace folio
