#include "meta/meta_stats.h"

#include <mutex>

#include "base/clock.h"

namespace folio::meta {

OpStatsTable::Op& OpStatsTable::Get(std::string_view op) {
  {
    std::shared_lock lock(mu_);
    auto it = ops_.find(op);
    if (it != ops_.end()) return *it->second;
  }
  std::unique_lock lock(mu_);
  auto [it, inserted] = ops_.try_emplace(std::string(op), nullptr);
  if (inserted) it->second = std::make_unique<Op>();
  return *it->second;
}

std::vector<MetaOpStats> OpStatsTable::Snapshot() const {
  std::shared_lock lock(mu_);
  std::vector<MetaOpStats> out;
  out.reserve(ops_.size());
  for (const auto& [name, op] : ops_) {
    MetaOpStats s;
    s.op = name;
    s.count = op->count.load(std::memory_order_relaxed);
    s.errors = op->errors.load(std::memory_order_relaxed);
    s.retries = op->retries.load(std::memory_order_relaxed);
    s.latency_ns = op->latency_ns.Snapshot();
    out.push_back(std::move(s));
  }
  return out;
}

OpTimer::OpTimer(OpStatsTable::Op& op) : op_(op), start_ns_(MonotonicNowNs()) {}

OpTimer::~OpTimer() {
  op_.count.fetch_add(1, std::memory_order_relaxed);
  if (error_) op_.errors.fetch_add(1, std::memory_order_relaxed);
  op_.latency_ns.Record(MonotonicNowNs() - start_ns_);
}

Status OpTimer::Finish(Status s) {
  error_ = !s.ok();
  return s;
}

}  // namespace folio::meta
