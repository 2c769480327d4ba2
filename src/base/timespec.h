// Conversions between struct timespec and nanoseconds since the epoch, the unit of file times
// in Folio's records (meta::Inode *_ns) and of the FUSE adapters' attributes.
//
// Thread safety: pure functions.
#pragma once

#include <time.h>

#include <cstdint>

namespace folio {

inline int64_t TimespecToNs(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + static_cast<int64_t>(ts.tv_nsec);
}

// tv_nsec in [0, 1e9), also for times before the epoch (ns < 0).
inline timespec NsToTimespec(int64_t ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  if (ts.tv_nsec < 0) {
    ts.tv_sec -= 1;
    ts.tv_nsec += 1000000000;
  }
  return ts;
}

}  // namespace folio
