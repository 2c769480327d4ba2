#include "raid/stripe_lock.h"

#include "base/check.h"

namespace folio::raid {

bool StripeLockTable::TryLock(uint64_t stripe, uint32_t col_begin, uint32_t col_end) {
  FOLIO_CHECK(col_begin < col_end);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Range>& ranges = held_[stripe];
  for (const Range& r : ranges) {
    if (r.begin < col_end && col_begin < r.end) return false;
  }
  ranges.push_back({col_begin, col_end});
  ++count_;
  return true;
}

void StripeLockTable::Unlock(uint64_t stripe, uint32_t col_begin, uint32_t col_end,
                             bool notify) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(stripe);
    FOLIO_CHECK_MSG(it != held_.end(), "unlock of a stripe that is not locked");
    std::vector<Range>& ranges = it->second;
    bool found = false;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].begin == col_begin && ranges[i].end == col_end) {
        ranges[i] = ranges.back();
        ranges.pop_back();
        found = true;
        break;
      }
    }
    FOLIO_CHECK_MSG(found, "unlock of a stripe range that is not locked");
    if (ranges.empty()) held_.erase(it);
    --count_;
    if (!notify) return;
    ++generation_;
  }
  cv_.notify_all();
}

void StripeLockTable::WaitForUnlock(uint64_t generation, std::chrono::microseconds max) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, max, [&] { return generation_ != generation; });
}

uint64_t StripeLockTable::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

size_t StripeLockTable::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

}  // namespace folio::raid
