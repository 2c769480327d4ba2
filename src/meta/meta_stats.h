// OpStatsTable: the per-operation statistics behind MetaEngine::Stats(), engine-neutral (every
// engine records the same counters): calls, errors, conflict retries and a latency histogram
// per `op` name given to Transact.
//
// Thread safety: every method may run concurrently from any thread. An Op, once created, lives
// as long as the table (entries are never removed), so callers may keep the reference.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "folio/histogram.h"
#include "meta/meta_engine.h"

namespace folio::meta {

class OpStatsTable {
 public:
  struct Op {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> retries{0};
    Histogram latency_ns;
  };

  // The entry of `op`, created on first use.
  Op& Get(std::string_view op);
  // Every op's counters, sorted by name.
  std::vector<MetaOpStats> Snapshot() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<Op>, std::less<>> ops_;  // GUARDED_BY(mu_)
};

// Records one Transact call into `op` when it goes out of scope: count, latency from
// construction, and an error when the Status passed to Finish is not OK.
class OpTimer {
 public:
  explicit OpTimer(OpStatsTable::Op& op);
  ~OpTimer();
  void Retry() { op_.retries.fetch_add(1, std::memory_order_relaxed); }
  // Returns s, noting whether it is an error.
  Status Finish(Status s);

 private:
  OpStatsTable::Op& op_;
  uint64_t start_ns_;
  bool error_ = false;
};

}  // namespace folio::meta
