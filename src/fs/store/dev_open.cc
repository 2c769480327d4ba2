// dev: store: format, open, the recovery scan and RAID healing (see dev_store_impl.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <random>

#include "fs/store/dev_store_impl.h"
#include "fs/store/sector_codec.h"

namespace folio::store {

using dev::kUnitBytes;
using dev::RecordType;
using dev::SegmentState;

namespace {

bool AllZero(const char* p, uint64_t len) {
  for (uint64_t i = 0; i < len; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

uint64_t DefaultSegmentBytes(uint64_t device_bytes) {
  uint64_t seg = 64ull << 20;
  while (seg > dev::kMinSegmentBytes && device_bytes / seg < 16) seg /= 2;
  return seg;
}

// Reads the superblock: copy A, else copy B.
Result<dev::Superblock> ReadSuperblock(BlockDevice* device) {
  AlignedBuffer buf = AllocUnits(2 * kUnitBytes);
  FOLIO_RETURN_IF_ERROR(device->Read(0, buf.data(), 2 * kUnitBytes));
  Result<dev::Superblock> a = dev::DecodeSuperblock(buf.data());
  if (a.ok()) return a;
  Result<dev::Superblock> b = dev::DecodeSuperblock(buf.data() + kUnitBytes);
  if (b.ok()) return b;
  if (a.status().IsNotFound() && b.status().IsNotFound()) {
    return AllZero(buf.data(), 2 * kUnitBytes)
               ? Status::NotFound("no Folio dev store on this device (it is blank)")
               : Status::NotFound("no Folio dev store on this device (it holds something else)");
  }
  return a.status().IsNotFound() ? b.status() : a.status();
}

}  // namespace

Status FormatDevStore(BlockDevice* device, std::string_view prefix,
                      const DevFormatOptions& format) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(prefix));
  if (!format.force) {
    Result<dev::Superblock> old = ReadSuperblock(device);
    if (old.ok()) {
      return Status::Exists(fmt::format(
          "{} already holds the Folio dev store of volume '{}'; formatting again (forced) "
          "discards it",
          device->name(), old->prefix));
    }
    if (old.status().message().find("blank") == std::string_view::npos) {
      return Status::InvalidArgument(fmt::format(
          "{} holds data that is not a Folio dev store ({}); formatting (forced) overwrites it",
          device->name(), old.status().message()));
    }
  }
  uint64_t segment_bytes = format.segment_bytes != 0 ? format.segment_bytes
                                                     : DefaultSegmentBytes(device->size_bytes());
  FOLIO_ASSIGN_OR_RETURN(dev::Superblock sb, dev::PlanLayout(device->size_bytes(), segment_bytes));
  std::random_device rd;
  sb.uuid.resize(16);
  for (char& c : sb.uuid) c = static_cast<char>(rd());
  sb.prefix = std::string(prefix);
  sb.create_unix_s = static_cast<uint64_t>(std::time(nullptr));
  // Both table slots (so no slot of an earlier store survives), then the superblocks.
  dev::SegmentTable table;
  table.entries.resize(sb.segment_count);
  AlignedBuffer buf = AllocUnits(sb.table_bytes);
  for (uint32_t slot = 0; slot < 2; ++slot) {
    table.sequence = slot + 1;
    dev::EncodeTable(table, buf.data(), sb.table_bytes);
    FOLIO_RETURN_IF_ERROR(
        device->Write(dev::kTableOffset + slot * sb.table_bytes, buf.data(), sb.table_bytes));
  }
  FOLIO_RETURN_IF_ERROR(device->Flush());
  AlignedBuffer super = AllocUnits(2 * kUnitBytes);
  dev::EncodeSuperblock(sb, super.data());
  std::memcpy(super.data() + kUnitBytes, super.data(), kUnitBytes);
  FOLIO_RETURN_IF_ERROR(device->Write(0, super.data(), 2 * kUnitBytes));
  return device->Flush();
}

Result<std::unique_ptr<DevStore>> OpenDevStore(std::unique_ptr<BlockDevice> device,
                                               std::string url, const StoreOptions& options) {
  FOLIO_RETURN_IF_ERROR(ValidatePrefix(options.prefix));
  Result<dev::Superblock> sb = ReadSuperblock(device.get());
  if (!sb.ok()) return sb.status().WithContext(url);
  if (sb->prefix != options.prefix) {
    return Status::InvalidArgument(fmt::format("{}: holds the store of volume '{}', not '{}'",
                                               url, sb->prefix, options.prefix));
  }
  if (device->size_bytes() < sb->data_offset + uint64_t{sb->segment_count} * sb->segment_bytes) {
    return Status::Corruption(fmt::format(
        "{}: device is {} bytes, smaller than the {} bytes the store was formatted on", url,
        device->size_bytes(), sb->device_bytes));
  }
  AlignedBuffer buf = AllocUnits(2 * sb->table_bytes);
  FOLIO_RETURN_IF_ERROR(device->Read(dev::kTableOffset, buf.data(), 2 * sb->table_bytes));
  Result<dev::SegmentTable> best = Status::Corruption("no valid segment table slot");
  uint32_t best_slot = 0;
  for (uint32_t slot = 0; slot < 2; ++slot) {
    Result<dev::SegmentTable> t = dev::DecodeTable(buf.data() + slot * sb->table_bytes,
                                                   sb->table_bytes, sb->segment_count,
                                                   sb->segment_bytes);
    if (t.ok() && (!best.ok() || t->sequence > best->sequence)) {
      best = std::move(t);
      best_slot = slot;
    }
  }
  if (!best.ok()) return best.status().WithContext(url);
  auto store = std::make_unique<DevStoreImpl>(std::move(device), std::move(url), options,
                                              std::move(*sb), std::move(*best), best_slot ^ 1);
  FOLIO_RETURN_IF_ERROR(store->Recover());
  store->Start();
  return std::unique_ptr<DevStore>(std::move(store));
}

// ---- Recovery ------------------------------------------------------------------------------

Status DevStoreImpl::Recover() {
  store_seed_ = dev::StoreSeed(sb_.uuid);
  bool table_changed = false;
  for (uint32_t s = 0; s < sb_.segment_count; ++s) {
    dev::SegmentEntry& e = table_.entries[s];
    if (e.state == SegmentState::kFree) continue;
    uint32_t valid_end = kUnitBytes;
    FOLIO_RETURN_IF_ERROR(ScanSegment(s, e.state == SegmentState::kOpen, &valid_end));
    if (e.state == SegmentState::kOpen) {  // the crash's segment: seal it at what verified
      e = valid_end > kUnitBytes
              ? dev::SegmentEntry{SegmentState::kSealed, e.generation, valid_end - kUnitBytes}
              : dev::SegmentEntry{};
      table_changed = true;
    }
  }
  auto older = [](const Rec& a, const Rec& b) {
    return a.generation != b.generation ? a.generation < b.generation : a.position < b.position;
  };
  for (auto it = index_.begin(); it != index_.end();) {
    std::sort(it->second.begin(), it->second.end(), older);
    bool any_put = false;
    for (const Rec& r : it->second) any_put |= r.type == RecordType::kPut;
    if (!any_put) {
      it = index_.erase(it);
      continue;
    }
    Account(it->first, it->second, +1);
    ++it;
  }
  free_segments_.store(FreeSegments());
  if (table_changed) FOLIO_RETURN_IF_ERROR(WriteTable());
  return Status::OK();
}

Status DevStoreImpl::ScanSegment(uint32_t s, bool verify_data, uint32_t* valid_end) {
  const dev::SegmentEntry entry = table_.entries[s];
  const uint64_t base = SegmentOffset(s);
  AlignedBuffer block = AllocUnits(kUnitBytes);
  FOLIO_RETURN_IF_ERROR(device_->Read(base, block.data(), kUnitBytes));
  Result<dev::SegmentHeader> header = dev::DecodeSegmentHeader(block.data(), store_seed_);
  if (!header.ok() || header->generation != entry.generation || header->index != s) {
    if (entry.state == SegmentState::kSealed) {
      StoreLog(options_.log, fmt::format("{}: segment {} header is damaged; its {} bytes of "
                                         "records are skipped",
                                         url_, s, entry.used_bytes));
    }
    *valid_end = kUnitBytes;
    return Status::OK();
  }
  const uint64_t limit = entry.state == SegmentState::kSealed
                             ? uint64_t{kUnitBytes} + entry.used_bytes
                             : SegmentCapacity();
  uint64_t pos = kUnitBytes;
  while (pos + kUnitBytes <= limit) {
    FOLIO_RETURN_IF_ERROR(device_->Read(base + pos, block.data(), kUnitBytes));
    Result<dev::RecordHeader> h = dev::DecodeRecordHeader(block.data(), store_seed_);
    bool ok = h.ok() && h->generation == entry.generation && h->position == pos;
    uint64_t record_bytes = ok ? dev::RecordBytes(h->type, h->key.bytes) : 0;
    ok = ok && pos + record_bytes <= limit;
    if (ok && verify_data && h->type == RecordType::kPut) {
      uint64_t length = record_bytes - kUnitBytes;
      AlignedBuffer data = AllocUnits(length);
      FOLIO_RETURN_IF_ERROR(device_->Read(base + pos + kUnitBytes, data.data(), length));
      SectorMismatch mismatch;
      ok = VerifyObject(ObjectSeed(h->key, dev::RecordSalt(entry.generation,
                                                           static_cast<uint32_t>(pos))),
                        h->key.bytes, data.data(), &mismatch);
      if (!ok) ++dropped_records_;
    }
    if (!ok) {
      if (entry.state == SegmentState::kSealed) {
        StoreLog(options_.log, fmt::format("{}: segment {} record at {} is damaged; the rest "
                                           "of the segment ({} bytes) is skipped",
                                           url_, s, pos, limit - pos));
      }
      break;
    }
    index_[h->key].push_back(Rec{s, static_cast<uint32_t>(pos), entry.generation, h->type});
    ++recovered_records_;
    pos += record_bytes;
  }
  *valid_end = static_cast<uint32_t>(pos);
  return Status::OK();
}

// ---- Healing -------------------------------------------------------------------------------

bool DevStoreImpl::TryHeal(uint64_t off, uint64_t len, char* buf,
                           const std::function<bool()>& verify, const std::string& what) {
  if (raid_ == nullptr) return false;
  RaidStatus status = raid_->Describe();
  if (status.level == RaidLevel::kRaid0) return false;
  ++heal_attempts_;
  for (uint32_t slot = 0; slot < status.member_count; ++slot) {
    if (!raid_->ReadAsIfMissing(slot, off, len, buf).ok()) continue;
    stats_.RecordStoredRead(len);
    if (!verify()) continue;
    Status repaired = raid_->RepairMember(slot, off, len, buf);
    stats_.RecordStoredWrite(len);
    StoreLog(options_.log,
             fmt::format("{}: healed: member {} ({}) returned wrong bytes; rebuilt from the "
                         "others and {}",
                         what, slot, slot < status.members.size() ? status.members[slot].name : "",
                         repaired.ok() ? "rewritten in place"
                                       : "could not be rewritten: " + repaired.ToString()));
    return true;
  }
  StoreLog(options_.log, fmt::format("{}: no member of {} gives a copy that verifies", what,
                                     raid_->name()));
  return false;
}

}  // namespace folio::store
