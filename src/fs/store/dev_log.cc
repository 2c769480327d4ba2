// dev: store, the log: segment switching, the segment table, accounting, cleaning (see
// dev_store_impl.h). Everything here runs on the I/O thread (or before it starts) with no
// write batch in flight.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "fs/store/dev_store_impl.h"
#include "fs/store/sector_codec.h"

namespace folio::store {

using dev::kUnitBytes;
using dev::RecordType;
using dev::RoundUp;
using dev::SegmentState;

namespace {
constexpr uint32_t kReserveSegments = 1;  // kept free for the cleaner's copies
}

uint64_t DevStoreImpl::SegmentOffset(uint32_t segment) const {
  return sb_.data_offset + uint64_t{segment} * sb_.segment_bytes;
}

uint64_t DevStoreImpl::RecBytes(const ObjectKey& key, const Rec& rec) {
  return dev::RecordBytes(rec.type, key.bytes);
}

uint32_t DevStoreImpl::FreeSegments() const {
  uint32_t n = 0;
  for (const auto& e : table_.entries) n += e.state == SegmentState::kFree;
  return n;
}

Status DevStoreImpl::WriteTable() {
  ++table_.sequence;
  AlignedBuffer buf = AllocUnits(sb_.table_bytes);
  dev::EncodeTable(table_, buf.data(), sb_.table_bytes);
  uint64_t offset = dev::kTableOffset + table_slot_ * sb_.table_bytes;
  FOLIO_RETURN_IF_ERROR(device_->Write(offset, buf.data(), sb_.table_bytes));
  FOLIO_RETURN_IF_ERROR(device_->Flush());
  stats_.RecordStoredWrite(sb_.table_bytes);
  table_slot_ ^= 1;
  free_segments_.store(FreeSegments());
  return Status::OK();
}

// ---- Accounting (invariant 2) ------------------------------------------------------------

void DevStoreImpl::Account(const ObjectKey& key, const std::vector<Rec>& recs, int sign) {
  if (recs.empty()) return;
  const Rec& newest = recs.back();
  bool keep = newest.type == RecordType::kPut;
  if (!keep) {
    for (size_t i = 0; i + 1 < recs.size(); ++i) {
      keep |= recs[i].type == RecordType::kPut && recs[i].segment != newest.segment;
    }
  }
  if (!keep) return;
  uint64_t bytes = RecBytes(key, newest);
  if (sign > 0) {
    seg_live_[newest.segment] += bytes;
    live_bytes_.fetch_add(bytes);
  } else {
    seg_live_[newest.segment] -= bytes;
    live_bytes_.fetch_sub(bytes);
  }
  if (newest.type == RecordType::kPut) {
    if (sign > 0) objects_.fetch_add(1);
    else objects_.fetch_sub(1);
  }
}

void DevStoreImpl::AddRecord(const ObjectKey& key, const Rec& rec) {
  std::vector<Rec>& recs = index_[key];
  Account(key, recs, -1);
  auto newer = [](const Rec& a, const Rec& b) {
    return a.generation != b.generation ? a.generation < b.generation : a.position < b.position;
  };
  recs.insert(std::upper_bound(recs.begin(), recs.end(), rec, newer), rec);
  bool any_put = false;
  for (const Rec& r : recs) any_put |= r.type == RecordType::kPut;
  if (!any_put) {  // a delete shadowing nothing (invariant 1)
    index_.erase(key);
    return;
  }
  Account(key, recs, +1);
}

void DevStoreImpl::ReleaseSegment(uint32_t s) {
  for (auto it = index_.begin(); it != index_.end();) {
    std::vector<Rec>& recs = it->second;
    bool touches = false;
    for (const Rec& r : recs) touches |= r.segment == s;
    if (!touches) {
      ++it;
      continue;
    }
    Account(it->first, recs, -1);
    recs.erase(std::remove_if(recs.begin(), recs.end(), [&](const Rec& r) { return r.segment == s; }),
               recs.end());
    bool any_put = false;
    for (const Rec& r : recs) any_put |= r.type == RecordType::kPut;
    if (!any_put) {
      it = index_.erase(it);
      continue;
    }
    Account(it->first, recs, +1);
    ++it;
  }
  FOLIO_CHECK(seg_live_[s] == 0);
  table_.entries[s] = dev::SegmentEntry{};
}

// ---- Segment switching -------------------------------------------------------------------

Status DevStoreImpl::EnsureRoom(uint64_t record_bytes, bool for_cleaning) {
  for (uint32_t round = 0; round <= sb_.segment_count; ++round) {
    if (open_seg_ >= 0 && !seal_open_ && open_pos_ + record_bytes <= SegmentCapacity()) {
      return Status::OK();
    }
    if (open_seg_ >= 0) {  // seal it (written with the next table)
      dev::SegmentEntry& e = table_.entries[open_seg_];
      uint64_t used = open_pos_ - kUnitBytes;
      e = used == 0 ? dev::SegmentEntry{}
                    : dev::SegmentEntry{SegmentState::kSealed, e.generation,
                                        static_cast<uint32_t>(used)};
      open_seg_ = -1;
      seal_open_ = false;
    }
    int64_t pick = -1;
    for (uint32_t s = 0; s < sb_.segment_count && pick < 0; ++s) {
      if (table_.entries[s].state == SegmentState::kFree && seg_reads_[s] == 0) pick = s;
    }
    if (pick >= 0 && (for_cleaning || FreeSegments() > kReserveSegments)) {
      uint64_t generation = table_.next_generation++;
      AlignedBuffer header = AllocUnits(kUnitBytes);
      dev::EncodeSegmentHeader(dev::SegmentHeader{generation, static_cast<uint32_t>(pick)},
                               store_seed_, header.data());
      FOLIO_RETURN_IF_ERROR(device_->Write(SegmentOffset(static_cast<uint32_t>(pick)),
                                           header.data(), kUnitBytes));
      table_.entries[pick] = dev::SegmentEntry{SegmentState::kOpen, generation, 0};
      FOLIO_RETURN_IF_ERROR(WriteTable());
      open_seg_ = pick;
      open_pos_ = kUnitBytes;
      return Status::OK();
    }
    if (for_cleaning) break;
    FOLIO_ASSIGN_OR_RETURN(bool freed, CleanOne(1.0, /*need_bytes=*/record_bytes));
    if (!freed) break;
  }
  return Status::NoSpace(fmt::format(
      "{}: store is full ({} segments of {} bytes, {} bytes live); delete data or use a larger "
      "device",
      url_, sb_.segment_count, sb_.segment_bytes, live_bytes_.load()));
}

// ---- Cleaning ----------------------------------------------------------------------------

Result<bool> DevStoreImpl::CleanOne(double live_fraction_max, uint64_t need_bytes) {
  int64_t victim = -1;
  for (uint32_t s = 0; s < sb_.segment_count; ++s) {
    if (table_.entries[s].state != SegmentState::kSealed) continue;
    if (victim < 0 || seg_live_[s] < seg_live_[victim]) victim = s;
  }
  if (victim < 0) return false;
  uint32_t v = static_cast<uint32_t>(victim);
  double fraction = static_cast<double>(seg_live_[v]) / static_cast<double>(SegmentCapacity());
  if (need_bytes != 0) {
    // The copies go to a fresh segment: what is left of it must hold the record waiting.
    if (SegmentCapacity() - kUnitBytes - std::min(seg_live_[v], SegmentCapacity()) < need_bytes) {
      return false;
    }
  } else if (seg_live_[v] != 0 && fraction >= live_fraction_max) {
    return false;
  }
  if (seg_live_[v] != 0) FOLIO_RETURN_IF_ERROR(CopyForward(v));
  ReleaseSegment(v);
  FOLIO_RETURN_IF_ERROR(WriteTable());
  ++segments_cleaned_;
  if (device_->supports_trim()) {
    (void)device_->Trim(SegmentOffset(v), sb_.segment_bytes);  // the segment is free on disk
  }
  return true;
}

Status DevStoreImpl::CopyForward(uint32_t victim) {
  struct Copy {
    ObjectKey key;
    Rec rec;
  };
  std::vector<Copy> copies;
  for (const auto& [key, recs] : index_) {
    const Rec& newest = recs.back();
    if (newest.segment != victim) continue;
    bool needed = newest.type == RecordType::kPut;
    for (size_t i = 0; !needed && i + 1 < recs.size(); ++i) {
      needed = recs[i].type == RecordType::kPut && recs[i].segment != victim;
    }
    if (needed) copies.push_back(Copy{key, newest});
  }
  std::vector<Copy> placed;
  for (const Copy& c : copies) {
    std::string data;
    if (c.rec.type == RecordType::kPut) FOLIO_RETURN_IF_ERROR(ReadRecord(c.key, c.rec, &data));
    FOLIO_ASSIGN_OR_RETURN(Rec rec, AppendSync(c.key, c.rec.type, data));
    placed.push_back(Copy{c.key, rec});
  }
  FOLIO_RETURN_IF_ERROR(device_->Flush());
  for (const Copy& c : placed) AddRecord(c.key, c.rec);
  records_copied_ += placed.size();
  return Status::OK();
}

Status DevStoreImpl::ReadRecord(const ObjectKey& key, const Rec& rec, std::string* out) {
  uint64_t length = RoundUp(EncodedBytes(key.bytes), kUnitBytes);
  uint64_t offset = SegmentOffset(rec.segment) + rec.position + kUnitBytes;
  AlignedBuffer buf = AllocUnits(length);
  FOLIO_RETURN_IF_ERROR(device_->Read(offset, buf.data(), length));
  stats_.RecordStoredRead(length);
  out->assign(key.bytes, '\0');
  uint32_t seed = ObjectSeed(key, dev::RecordSalt(rec.generation, rec.position));
  SectorMismatch mismatch;
  auto decode = [&] {
    return DecodeRange(seed, key.bytes, buf.data(), 0, key.bytes, out->data(), &mismatch);
  };
  if (decode()) return Status::OK();
  stats_.RecordChecksumFailure();
  Status corruption = SectorCorruption(ObjectPath(key), mismatch);
  StoreLog(options_.log, corruption.message());
  if (TryHeal(offset, length, buf.data(), decode, ObjectPath(key))) {
    stats_.RecordHealed();
    return Status::OK();
  }
  return corruption;
}

Result<DevStoreImpl::Rec> DevStoreImpl::AppendSync(const ObjectKey& key, RecordType type,
                                                   const std::string& data) {
  uint64_t record_bytes = dev::RecordBytes(type, key.bytes);
  FOLIO_RETURN_IF_ERROR(EnsureRoom(record_bytes, /*for_cleaning=*/true));
  Rec rec{static_cast<uint32_t>(open_seg_), static_cast<uint32_t>(open_pos_),
          table_.entries[open_seg_].generation, type};
  AlignedBuffer buf = AllocUnits(record_bytes);
  dev::EncodeRecordHeader(dev::RecordHeader{type, key, rec.generation, rec.position},
                          store_seed_, buf.data());
  if (type == RecordType::kPut) {
    EncodeObject(ObjectSeed(key, dev::RecordSalt(rec.generation, rec.position)), data.data(),
                 key.bytes, buf.data() + kUnitBytes);
  }
  Status s = device_->Write(SegmentOffset(rec.segment) + rec.position, buf.data(), record_bytes);
  if (!s.ok()) {
    seal_open_ = true;  // sealed before the failed record
    return s;
  }
  open_pos_ += record_bytes;
  stats_.RecordStoredWrite(record_bytes);
  return rec;
}

}  // namespace folio::store
