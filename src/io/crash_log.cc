#include "io/crash_log.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "base/check.h"

namespace folio::io_internal {

namespace {
constexpr size_t kSpareBlocks = 1024;  // 4 MiB of 4 KiB blocks
constexpr size_t kSpareWrites = 32;
}  // namespace

void CrashLog::MissingRuns(uint64_t offset, uint64_t length, std::vector<Run>* out) const {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0);
  const uint64_t first = offset / block_bytes_;
  const uint64_t end = first + length / block_bytes_;
  uint64_t b = first;
  auto it = blocks_.lower_bound(first);
  while (b < end) {
    if (it != blocks_.end() && it->first == b) {
      ++b;
      ++it;
      continue;
    }
    const uint64_t run_end = std::min(end, it == blocks_.end() ? end : it->first);
    out->push_back(Run{b * block_bytes_, (run_end - b) * block_bytes_});
    b = run_end;
  }
}

void CrashLog::Capture(uint64_t offset, const char* data, uint64_t length) {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0);
  for (uint64_t done = 0; done < length; done += block_bytes_) {
    auto [it, inserted] = blocks_.try_emplace((offset + done) / block_bytes_);
    FOLIO_CHECK_MSG(inserted, "CrashLog::Capture of a block already captured");
    it->second.data = TakeSpare(&spare_blocks_);
    it->second.data.assign(data + done, block_bytes_);
  }
}

uint64_t CrashLog::AddWrite(uint64_t offset, const char* data, uint64_t length) {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0 && length > 0);
  const uint64_t first = offset / block_bytes_;
  for (uint64_t b = first; b < first + length / block_bytes_; ++b) {
    auto it = blocks_.find(b);
    FOLIO_CHECK_MSG(it != blocks_.end(), "CrashLog::AddWrite of a block never captured");
    ++it->second.writers;
  }
  Write w;
  w.id = next_id_++;
  w.offset = offset;
  w.length = length;
  if (data != nullptr) {
    w.data = TakeSpare(&spare_writes_);
    w.data.assign(data, length);
  }
  writes_.push_back(std::move(w));
  return writes_.back().id;
}

void CrashLog::CompleteWrite(uint64_t id) {
  for (Write& w : writes_) {
    if (w.id == id) {
      w.completion_seq = ++completion_seq_;
      return;
    }
  }
}

void CrashLog::DropWrite(uint64_t id) {
  auto it = std::find_if(writes_.begin(), writes_.end(), [&](const Write& w) { return w.id == id; });
  if (it == writes_.end()) return;
  Release(*it);
  writes_.erase(it);
}

std::string CrashLog::TakeSpare(std::vector<std::string>* spares) {
  if (spares->empty()) return {};
  std::string s = std::move(spares->back());
  spares->pop_back();
  return s;
}

void CrashLog::GiveSpare(std::string s, std::vector<std::string>* spares, size_t limit) {
  if (s.capacity() != 0 && spares->size() < limit) spares->push_back(std::move(s));
}

// Drops the write's hold on its blocks, forgetting blocks no unflushed write touches; the
// write's data buffer goes back to the spares (the caller drops the write).
void CrashLog::Release(Write& w) {
  const uint64_t first = w.offset / block_bytes_;
  for (uint64_t b = first; b < first + w.length / block_bytes_; ++b) {
    auto it = blocks_.find(b);
    FOLIO_CHECK(it != blocks_.end() && it->second.writers > 0);
    if (--it->second.writers == 0) {
      GiveSpare(std::move(it->second.data), &spare_blocks_, kSpareBlocks);
      blocks_.erase(it);
    }
  }
  GiveSpare(std::move(w.data), &spare_writes_, kSpareWrites);
}

void CrashLog::FlushCompleted(uint64_t watermark) {
  // Fold covered writes into the flushed image in submission order, then release them.
  std::vector<Write> kept;
  kept.reserve(writes_.size());
  for (Write& w : writes_) {
    if (w.completion_seq == 0 || w.completion_seq > watermark) {
      kept.push_back(std::move(w));
      continue;
    }
    const uint64_t first = w.offset / block_bytes_;
    for (uint64_t i = 0; i < w.length / block_bytes_; ++i) {
      std::string& img = blocks_.at(first + i).data;
      if (w.data.empty()) {
        std::fill(img.begin(), img.end(), '\0');
      } else {
        img.assign(w.data, i * block_bytes_, block_bytes_);
      }
    }
    Release(w);
  }
  writes_ = std::move(kept);
}

void CrashLog::ApplyTo(const Write& w, std::map<uint64_t, std::string>* image) const {
  const uint64_t first = w.offset / block_bytes_;
  for (uint64_t i = 0; i < w.length / block_bytes_; ++i) {
    std::string& img = image->at(first + i);
    if (w.data.empty()) {
      std::fill(img.begin(), img.end(), '\0');
    } else {
      img.assign(w.data, i * block_bytes_, block_bytes_);
    }
  }
}

std::vector<CrashLog::ImageRun> CrashLog::CrashImage(CrashMode mode, uint64_t seed) const {
  std::map<uint64_t, std::string> image;
  for (const auto& [b, block] : blocks_) image.emplace(b, block.data);
  if (mode == CrashMode::kRandomSubset) {
    std::mt19937_64 rng(seed);
    for (const Write& w : writes_) {
      if ((rng() & 1) != 0) ApplyTo(w, &image);
    }
  }
  std::vector<ImageRun> runs;
  uint64_t prev = 0;
  for (auto& [b, data] : image) {
    if (runs.empty() || b != prev + 1) {
      runs.push_back(ImageRun{b * block_bytes_, std::move(data)});
    } else {
      runs.back().data += data;
    }
    prev = b;
  }
  return runs;
}

void CrashLog::Clear() {
  blocks_.clear();
  writes_.clear();
}

}  // namespace folio::io_internal
