#include "cache/errseq.h"

#include "base/check.h"

namespace folio::cache {
namespace {

constexpr uint64_t kSeen = 1;

}  // namespace

void ErrSeq::Record(const Status& error) {
  FOLIO_CHECK(!error.ok());
  std::lock_guard<std::mutex> lock(mu_);
  // A new event only when someone saw the previous one (or there was none): until then every
  // cursor that differs from the value will get the latest error anyway.
  if (value_ == 0 || (value_ & kSeen) != 0) value_ = ((value_ >> 1) + 1) << 1;
  latest_ = error;
  ++recorded_;
}

uint64_t ErrSeq::Sample() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (value_ & kSeen) != 0 ? value_ : 0;
}

Status ErrSeq::CheckAndAdvance(uint64_t* since) {
  std::lock_guard<std::mutex> lock(mu_);
  if (value_ == *since || value_ == 0) return Status::OK();
  value_ |= kSeen;
  *since = value_;
  return latest_;
}

Status ErrSeq::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

uint64_t ErrSeq::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_;
}

}  // namespace folio::cache
