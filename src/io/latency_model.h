// LatencyClock: the service-time accounting of FaultDevice's latency models.
//
//   none      every request finishes at once
//   fixed:US  every request finishes US microseconds after its submission
//   hdd       one head: a request starts when the previous one finished (or at submission),
//             pays seek_us unless it starts where the previous read / write ended (a short
//             forward gap costs the time the gap takes to pass under the head instead, when
//             that is less than a seek), then bytes / bandwidth; flush and trim take no head
//             time but queue behind it
//
//        submit        start = max(submit, busy_until)          finish = start + cost
//   ------|---------------|=====seek=====|====transfer====|-------> time
//
// Thread safety: none (FaultDevice calls it under its mutex).
#pragma once

#include <cstdint>

#include "folio/fault_device.h"

namespace folio::io_internal {

class LatencyClock {
 public:
  // Installs a model and resets the head, the clock and the stats.
  void Set(const LatencyModel& model);
  const LatencyModel& model() const { return model_; }

  // Charges one device request submitted at now_ns; returns the time its completion may be
  // delivered (0 with no model).
  uint64_t Charge(IoOp op, uint64_t offset, uint64_t length, uint64_t now_ns);

  LatencyModelStats stats() const { return stats_; }

 private:
  uint64_t TransferNs(uint64_t bytes) const;

  LatencyModel model_;
  LatencyModelStats stats_;
  uint64_t head_pos_ = 0;
  bool head_known_ = false;
  uint64_t busy_until_ns_ = 0;
};

}  // namespace folio::io_internal
