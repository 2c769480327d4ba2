#include "io/crash_log.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "base/check.h"

namespace folio::io_internal {

namespace {
constexpr uint64_t kLeafMask = (uint64_t{1} << 10) - 1;
}  // namespace

uint32_t CrashLog::FindEntry(uint64_t block) const {
  const uint64_t leaf = block >> kLeafShift;
  if (leaf >= table_.size() || table_[leaf] == nullptr) return kNone;
  return table_[leaf][block & kLeafMask];
}

uint32_t& CrashLog::TableSlot(uint64_t block) {
  static_assert(kLeafMask + 1 == uint64_t{1} << kLeafShift);
  const uint64_t leaf = block >> kLeafShift;
  if (leaf >= table_.size()) table_.resize(leaf + 1);
  if (table_[leaf] == nullptr) {
    table_[leaf].reset(new uint32_t[kLeafMask + 1]);
    std::fill_n(table_[leaf].get(), kLeafMask + 1, kNone);
  }
  return table_[leaf][block & kLeafMask];
}

uint32_t CrashLog::NewPage() {
  if (!free_pages_.empty()) {
    const uint32_t p = free_pages_.back();
    free_pages_.pop_back();
    return p;
  }
  FOLIO_CHECK_MSG(page_count_ < kNone, "CrashLog: too many pages");
  if (page_count_ % pages_per_slab_ == 0) {
    // Not value-initialised: every page is written before it is read.
    slabs_.emplace_back(new char[uint64_t{pages_per_slab_} * block_bytes_]);
  }
  return page_count_++;
}

uint32_t CrashLog::NewEntry(uint64_t block) {
  uint32_t e;
  if (!free_entries_.empty()) {
    e = free_entries_.back();
    free_entries_.pop_back();
  } else {
    FOLIO_CHECK_MSG(entries_.size() < kNone, "CrashLog: too many tracked blocks");
    e = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  entries_[e] = Entry{block, NewPage(), 0, 0, true};
  TableSlot(block) = e;
  ++tracked_;
  return e;
}

void CrashLog::FreeEntry(uint32_t e) {
  Entry& entry = entries_[e];
  TableSlot(entry.block) = kNone;
  FreePage(entry.page);
  entry.page = kNone;
  entry.live = false;
  free_entries_.push_back(e);
  --tracked_;
}

void CrashLog::MissingRuns(uint64_t offset, uint64_t length, std::vector<Run>* out) const {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0);
  const uint64_t first = offset / block_bytes_;
  const uint64_t end = first + length / block_bytes_;
  uint64_t b = first;
  while (b < end) {
    if (FindEntry(b) != kNone) {
      ++b;
      continue;
    }
    uint64_t run_end = b + 1;
    while (run_end < end && FindEntry(run_end) == kNone) ++run_end;
    out->push_back(Run{b * block_bytes_, (run_end - b) * block_bytes_});
    b = run_end;
  }
}

void CrashLog::Capture(uint64_t offset, const char* data, uint64_t length) {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0);
  for (uint64_t done = 0; done < length; done += block_bytes_) {
    const uint64_t b = (offset + done) / block_bytes_;
    FOLIO_CHECK_MSG(FindEntry(b) == kNone, "CrashLog::Capture of a block already captured");
    std::memcpy(Page(entries_[NewEntry(b)].page), data + done, block_bytes_);
  }
}

uint64_t CrashLog::AddWrite(uint64_t offset, const char* data, uint64_t length) {
  FOLIO_CHECK(offset % block_bytes_ == 0 && length % block_bytes_ == 0 && length > 0);
  const uint64_t first = offset / block_bytes_;
  const uint64_t blocks = length / block_bytes_;
  for (uint64_t b = first; b < first + blocks; ++b) {
    const uint32_t e = FindEntry(b);
    FOLIO_CHECK_MSG(e != kNone, "CrashLog::AddWrite of a block never captured");
    ++entries_[e].writers;
  }
  Write w;
  w.id = next_id_++;
  w.offset = offset;
  w.length = length;
  w.trim = data == nullptr;
  w.pages_pos = write_pages_.size();
  if (!w.trim) {
    write_pages_.resize(w.pages_pos + blocks);
    uint32_t* pages = write_pages_.data() + w.pages_pos;
    for (uint64_t i = 0; i < blocks; ++i) {
      pages[i] = NewPage();
      std::memcpy(Page(pages[i]), data + i * block_bytes_, block_bytes_);
    }
  }
  writes_.push_back(w);
  return w.id;
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
  writes_.erase(it);  // its write_pages_ range stays a hole until the next flush compacts
  if (writes_.empty()) write_pages_.clear();
}

void CrashLog::CopyBlockOf(const Write& w, uint64_t i, char* dst) const {
  if (w.trim) {
    std::memset(dst, 0, block_bytes_);
  } else {
    std::memcpy(dst, Page(write_pages_[w.pages_pos + i]), block_bytes_);
  }
}

void CrashLog::Release(const Write& w) {
  const uint64_t first = w.offset / block_bytes_;
  const uint64_t blocks = w.length / block_bytes_;
  for (uint64_t b = first; b < first + blocks; ++b) {
    const uint32_t e = FindEntry(b);
    FOLIO_CHECK(e != kNone && entries_[e].writers > 0);
    if (--entries_[e].writers == 0) FreeEntry(e);
  }
  if (!w.trim) {
    for (uint64_t i = 0; i < blocks; ++i) FreePage(write_pages_[w.pages_pos + i]);
  }
}

void CrashLog::FlushCompleted(uint64_t watermark) {
  auto covered = [watermark](const Write& w) {
    return w.completion_seq != 0 && w.completion_seq <= watermark;
  };
  // 1. Covered writes drop their hold on their blocks.
  bool any = false;
  for (const Write& w : writes_) {
    if (!covered(w)) continue;
    any = true;
    const uint64_t first = w.offset / block_bytes_;
    for (uint64_t b = first; b < first + w.length / block_bytes_; ++b) {
      Entry& entry = entries_[FindEntry(b)];
      FOLIO_CHECK(entry.writers > 0);
      --entry.writers;
    }
  }
  if (!any) return;
  if (++flush_epoch_ == 0) {  // wrapped: no entry may look folded by this flush already
    for (Entry& entry : entries_) entry.folded = 0;
    flush_epoch_ = 1;
  }
  // 2. A block an unflushed write still holds takes the newest covered write's data as its
  // image (folding in submission order leaves exactly that): the write's page is swapped in,
  // the old image goes out with the write's pages.
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it) {
    if (!covered(*it)) continue;
    const uint64_t first = it->offset / block_bytes_;
    for (uint64_t i = 0; i < it->length / block_bytes_; ++i) {
      Entry& entry = entries_[FindEntry(first + i)];
      if (entry.writers == 0 || entry.folded == flush_epoch_) continue;
      if (it->trim) {
        std::memset(Page(entry.page), 0, block_bytes_);
      } else {
        std::swap(entry.page, write_pages_[it->pages_pos + i]);
      }
      entry.folded = flush_epoch_;
    }
  }
  // 3. Blocks nobody holds are forgotten, the covered writes' pages freed; the kept writes'
  // page lists move down (in submission order, each to a lower position than any later one's).
  size_t out = 0;
  uint64_t pos = 0;
  for (size_t i = 0; i < writes_.size(); ++i) {
    Write& w = writes_[i];
    const uint64_t blocks = w.length / block_bytes_;
    if (covered(w)) {
      const uint64_t first = w.offset / block_bytes_;
      for (uint64_t b = first; b < first + blocks; ++b) {
        const uint32_t e = FindEntry(b);
        if (e != kNone && entries_[e].writers == 0) FreeEntry(e);
      }
      if (!w.trim) {
        for (uint64_t j = 0; j < blocks; ++j) FreePage(write_pages_[w.pages_pos + j]);
      }
      continue;
    }
    if (!w.trim) {
      for (uint64_t j = 0; j < blocks; ++j) write_pages_[pos + j] = write_pages_[w.pages_pos + j];
      w.pages_pos = pos;
      pos += blocks;
    }
    writes_[out++] = w;
  }
  writes_.resize(out);
  write_pages_.resize(pos);
}

std::vector<CrashLog::ImageRun> CrashLog::CrashImage(CrashMode mode, uint64_t seed) const {
  std::vector<std::pair<uint64_t, uint32_t>> live;  // (block, page)
  live.reserve(tracked_);
  for (const Entry& entry : entries_) {
    if (entry.live) live.emplace_back(entry.block, entry.page);
  }
  std::sort(live.begin(), live.end());
  std::vector<ImageRun> runs;
  for (size_t i = 0; i < live.size(); ++i) {
    if (i == 0 || live[i].first != live[i - 1].first + 1) {
      runs.push_back(ImageRun{live[i].first * block_bytes_, {}});
    }
    runs.back().data.append(Page(live[i].second), block_bytes_);
  }
  if (mode == CrashMode::kRandomSubset) {
    std::mt19937_64 rng(seed);
    for (const Write& w : writes_) {
      if ((rng() & 1) == 0) continue;
      // Every block of an unflushed write is tracked, so the write lies inside one run.
      auto run = std::upper_bound(runs.begin(), runs.end(), w.offset,
                                  [](uint64_t off, const ImageRun& r) { return off < r.offset; });
      FOLIO_CHECK(run != runs.begin());
      --run;
      FOLIO_CHECK(w.offset + w.length <= run->offset + run->data.size());
      for (uint64_t i = 0; i < w.length / block_bytes_; ++i) {
        CopyBlockOf(w, i, run->data.data() + (w.offset - run->offset) + i * block_bytes_);
      }
    }
  }
  return runs;
}

void CrashLog::Clear() {
  free_entries_.clear();
  for (uint32_t e = static_cast<uint32_t>(entries_.size()); e-- > 0;) {
    Entry& entry = entries_[e];
    if (entry.live) {
      TableSlot(entry.block) = kNone;
      entry.live = false;
      entry.page = kNone;
    }
    free_entries_.push_back(e);
  }
  tracked_ = 0;
  free_pages_.clear();
  for (uint32_t p = page_count_; p-- > 0;) free_pages_.push_back(p);
  writes_.clear();
  write_pages_.clear();
}

}  // namespace folio::io_internal
