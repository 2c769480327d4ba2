// ErrSeq: the writeback error record of one address space, with Linux's errseq_t rules
// (lib/errseq.c): one value that any number of handles sample and later compare against.
//
//   value = (errors << 1) | seen      errors: how many distinct error events were recorded
//
//   Record      a new error bumps the count only if the previous one was seen (errors nobody
//               saw yet collapse into one event; the latest status is the one reported)
//   Sample      a new handle's cursor: the value if it was seen, else 0, so a handle opened
//               after an error nobody has seen still gets it
//   CheckAndAdvance
//               the value differs from the cursor: return the latest error, mark it seen,
//               move the cursor to it; so each handle gets each event once
//
// Unlike the kernel's 32-bit word the latest error is kept as a Status (code, errno and
// message), so an ENOSPC reaches every handle as NoSpace with the position that failed.
//
// Thread safety: every method is thread-safe (one leaf mutex; errors are rare and cursors are
// checked once per fsync).
#pragma once

#include <cstdint>
#include <mutex>

#include "folio/status.h"

namespace folio::cache {

class ErrSeq {
 public:
  // REQUIRES: !error.ok().
  void Record(const Status& error);
  uint64_t Sample() const;
  // Returns the latest error if the record moved since *since (and advances *since), else OK.
  Status CheckAndAdvance(uint64_t* since);
  Status latest() const;
  uint64_t errors() const;  // error events recorded (requests that failed, one each)

 private:
  mutable std::mutex mu_;
  uint64_t value_ = 0;     // GUARDED_BY(mu_)
  uint64_t recorded_ = 0;  // GUARDED_BY(mu_): every Record, collapsed or not
  Status latest_;          // GUARDED_BY(mu_)
};

}  // namespace folio::cache
