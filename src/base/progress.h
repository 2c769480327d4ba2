// ProgressReporter: a live, single-line progress display for long operations (file creation,
// benchmark runs, resync). On a terminal it redraws one line on stderr with '\r' at most every
// min_interval_ms (default 200 ms, ~5 per second):
//
//   create 4k-randread  3.2s  1.50G/2G  470M/s  ETA 1s
//
// and clears the line at Finish() (or destruction). It is silent when the stream is not a TTY
// or when the caller turned it off (e.g. --json output), so logs and pipes stay clean.
//
// Time is MonotonicNowNs() (base/clock.h): tests replace it with a ManualClock.
//
// Thread safety: Update / SetDetail / Finish may be called from any thread; an internal mutex
// serialises them. The pure formatting helpers are thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace folio {

enum class ProgressMode {
  kAuto,    // draw when isatty(fd)
  kOff,     // never draw (--json, quiet)
  kAlways,  // draw even when not a TTY (tests)
};

enum class ProgressUnit {
  kItems,    // done/total are counts; rate is items/s
  kBytes,    // done/total are bytes; shown as sizes; rate is bytes/s
  kSeconds,  // done/total are milliseconds of a timed run (shown instead of the elapsed
             // time); no rate (the detail carries one)
};

struct ProgressOptions {
  ProgressMode mode = ProgressMode::kAuto;
  int fd = 2;
  uint64_t min_interval_ms = 200;
  ProgressUnit unit = ProgressUnit::kItems;
};

// One rendered line (without '\r' or escape codes). total 0 = unknown (no ETA).
std::string FormatProgressLine(std::string_view operation, uint64_t elapsed_ms, uint64_t done,
                               uint64_t total, ProgressUnit unit, std::string_view detail);
// "850ms", "3.2s", "1m05s", "1h02m".
std::string FormatElapsed(uint64_t ms);

class ProgressReporter {
 public:
  ProgressReporter(std::string operation, uint64_t total, const ProgressOptions& options);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Records progress; redraws if drawing is on and min_interval_ms passed since the last draw.
  void Update(uint64_t done);
  // Extra text at the end of the line (e.g. "IOPS 251k"); shown on the next redraw.
  void SetDetail(std::string detail);
  // Clears the line (if anything was drawn). Further calls do nothing.
  void Finish();

  bool enabled() const { return enabled_; }
  // Lines drawn so far (for tests).
  uint64_t draws() const;

 private:
  uint64_t Now() const;
  void DrawLocked(uint64_t now) /* REQUIRES: mu_ held */;

  const std::string operation_;
  const uint64_t total_;
  const ProgressOptions options_;
  const bool enabled_;
  const uint64_t start_ns_;
  mutable std::mutex mu_;
  uint64_t done_ = 0;           // GUARDED_BY(mu_)
  std::string detail_;          // GUARDED_BY(mu_)
  uint64_t last_draw_ns_ = 0;   // GUARDED_BY(mu_)
  bool drawn_ = false;          // GUARDED_BY(mu_)
  bool finished_ = false;       // GUARDED_BY(mu_)
  uint64_t draws_ = 0;          // GUARDED_BY(mu_)
};

}  // namespace folio
