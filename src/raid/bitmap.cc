#include "raid/bitmap.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace folio::raid {

WriteIntentBitmap::WriteIntentBitmap(uint64_t regions, uint64_t region_bytes,
                                     uint64_t image_bytes)
    : regions_(regions),
      region_bytes_(region_bytes),
      image_bytes_(image_bytes),
      image_(image_bytes, 0),
      state_(regions) {
  FOLIO_CHECK(region_bytes > 0 && (regions + 7) / 8 <= image_bytes);
}

void WriteIntentBitmap::SetLocked(uint64_t r) {
  if (TestLocked(r)) return;
  image_[r / 8] |= static_cast<uint8_t>(1u << (r % 8));
  ++version_;
  ++dirty_;
  state_[r].set_version = version_;
}

void WriteIntentBitmap::ClearLocked(uint64_t r) {
  if (!TestLocked(r)) return;
  image_[r / 8] &= static_cast<uint8_t>(~(1u << (r % 8)));
  ++version_;
  --dirty_;
}

void WriteIntentBitmap::LoadImage(std::span<const char> image) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t r = 0; r < regions_ && r / 8 < image.size(); ++r) {
    if ((static_cast<uint8_t>(image[r / 8]) >> (r % 8)) & 1) {
      if (!TestLocked(r)) {
        image_[r / 8] |= static_cast<uint8_t>(1u << (r % 8));
        ++dirty_;
      }
      if (!state_[r].resync) {
        state_[r].resync = true;
        ++resync_;
      }
    }
  }
}

void WriteIntentBitmap::MarkAllForResync() {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t r = 0; r < regions_; ++r) {
    SetLocked(r);
    if (!state_[r].resync) {
      state_[r].resync = true;
      ++resync_;
    }
  }
}

uint64_t WriteIntentBitmap::StartWrite(uint64_t first, uint64_t last) {
  FOLIO_CHECK(first <= last && last < regions_);
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t need = 0;
  for (uint64_t r = first; r <= last; ++r) {
    SetLocked(r);
    ++state_[r].in_flight;
    need = std::max(need, state_[r].set_version);
  }
  return need > durable_version_ ? need : 0;
}

void WriteIntentBitmap::EndWrite(uint64_t first, uint64_t last, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ++write_seq_;
  for (uint64_t r = first; r <= last; ++r) {
    FOLIO_CHECK(state_[r].in_flight > 0);
    --state_[r].in_flight;
    state_[r].last_write_seq = write_seq_;
    state_[r].last_write_ms = now_ms;
  }
}

uint64_t WriteIntentBitmap::FlushBegin() {
  std::lock_guard<std::mutex> lock(mu_);
  return write_seq_;
}

uint64_t WriteIntentBitmap::FlushDone(uint64_t token, uint64_t now_ms, uint64_t delay_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dirty_ == 0) return 0;
  uint64_t cleared = 0;
  for (uint64_t r = 0; r < regions_; ++r) {
    const Region& s = state_[r];
    if (!TestLocked(r) || s.in_flight > 0 || s.resync) continue;
    if (s.last_write_seq > token || now_ms < s.last_write_ms + delay_ms) continue;
    ClearLocked(r);
    ++cleared;
  }
  return cleared;
}

void WriteIntentBitmap::ClearIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t r = 0; r < regions_; ++r) {
    if (state_[r].in_flight == 0 && !state_[r].resync) ClearLocked(r);
  }
}

bool WriteIntentBitmap::NeedsResync(uint64_t region) const {
  std::lock_guard<std::mutex> lock(mu_);
  return region < regions_ && state_[region].resync;
}

void WriteIntentBitmap::MarkResynced(uint64_t region, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (region >= regions_ || !state_[region].resync) return;
  state_[region].resync = false;
  --resync_;
  if (state_[region].in_flight == 0 && state_[region].last_write_seq <= token) {
    ClearLocked(region);
  }
}

uint64_t WriteIntentBitmap::NextResync(uint64_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t r = from; r < regions_; ++r) {
    if (state_[r].resync) return r;
  }
  return regions_;
}

uint64_t WriteIntentBitmap::Snapshot(char* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::memcpy(out, image_.data(), image_bytes_);
  return version_;
}

void WriteIntentBitmap::MarkDurable(uint64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  durable_version_ = std::max(durable_version_, version);
}

bool WriteIntentBitmap::IsDurable(uint64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_version_ >= version;
}

bool WriteIntentBitmap::ImageChanged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_ > durable_version_;
}

uint64_t WriteIntentBitmap::dirty_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_;
}

uint64_t WriteIntentBitmap::resync_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resync_;
}

}  // namespace folio::raid
