#include "fs/store/pack.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "base/check.h"
#include "base/clock.h"
#include "base/crc32c.h"
#include "fs/store/le.h"

namespace folio::store {

// ---- Format --------------------------------------------------------------------------------

uint32_t PackBuilder::Add(std::string_view data) {
  return AddWithCrc(data, Crc32c(data.data(), data.size()));
}

uint32_t PackBuilder::AddWithCrc(std::string_view data, uint32_t crc) {
  FOLIO_CHECK(!data.empty() && BytesWith(data.size()) <= kMaxObjectBytes);
  char header[kPackEntryHeaderBytes];
  PutLe32(header, static_cast<uint32_t>(data.size()));
  PutLe32(header + 4, crc);
  body_.append(header, sizeof(header));
  uint32_t object_off = static_cast<uint32_t>(bytes_ + kPackEntryHeaderBytes);
  body_.append(data);
  bytes_ = BytesWith(data.size());
  entries_.push_back(PackEntry{object_off, static_cast<uint32_t>(data.size()), crc});
  return object_off;
}

std::string PackBuilder::Finish(uint64_t pack_id) const {
  FOLIO_CHECK(!entries_.empty());
  std::string out(kPackHeaderBytes, '\0');
  std::memcpy(out.data(), kPackMagic, sizeof(kPackMagic));
  PutLe32(out.data() + 8, kPackVersion);
  PutLe32(out.data() + 12, static_cast<uint32_t>(entries_.size()));
  PutLe64(out.data() + 16, pack_id);
  PutLe32(out.data() + 24, static_cast<uint32_t>(bytes_));
  PutLe32(out.data() + 28, Crc32c(out.data(), 28));
  out += body_;
  return out;
}

Status WalkPack(std::string_view pack, uint64_t pack_id, std::string_view name,
                const std::function<void(const PackEntry&, std::string_view data)>& fn) {
  auto corrupt = [&](uint64_t at, std::string_view what) {
    return Status::Corruption(fmt::format("{}: {} at byte {}", name, what, at));
  };
  if (pack.size() < kPackHeaderBytes) return corrupt(0, "shorter than a pack header");
  const char* h = pack.data();
  if (std::memcmp(h, kPackMagic, sizeof(kPackMagic)) != 0) return corrupt(0, "no pack magic");
  if (GetLe32(h + 28) != Crc32c(h, 28)) return corrupt(28, "pack header checksum mismatch");
  if (GetLe32(h + 8) != kPackVersion) {
    return corrupt(8, fmt::format("pack version {} (this Folio reads {})", GetLe32(h + 8),
                                  kPackVersion));
  }
  if (GetLe64(h + 16) != pack_id) {
    return corrupt(16, fmt::format("header names pack {}", GetLe64(h + 16)));
  }
  if (GetLe32(h + 24) != pack.size()) {
    return corrupt(24, fmt::format("header says {} bytes, object has {}", GetLe32(h + 24),
                                   pack.size()));
  }
  uint32_t count = GetLe32(h + 12);
  uint64_t pos = kPackHeaderBytes;
  uint32_t seen = 0;
  while (pos < pack.size()) {
    if (pack.size() - pos < kPackEntryHeaderBytes) return corrupt(pos, "truncated entry header");
    uint32_t len = GetLe32(pack.data() + pos);
    uint32_t crc = GetLe32(pack.data() + pos + 4);
    uint64_t data_at = pos + kPackEntryHeaderBytes;
    if (len == 0 || len > pack.size() - data_at) {
      return corrupt(pos, fmt::format("entry length {} out of bounds", len));
    }
    std::string_view data = pack.substr(data_at, len);
    if (Crc32c(data.data(), data.size()) != crc) return corrupt(pos, "entry checksum mismatch");
    if (fn) fn(PackEntry{static_cast<uint32_t>(data_at), len, crc}, data);
    ++seen;
    pos = data_at + len;
  }
  if (seen != count) {
    return corrupt(12, fmt::format("header says {} entries, pack has {}", count, seen));
  }
  return Status::OK();
}

Status VerifyPackedEntry(std::string_view header_and_data, uint32_t len, uint32_t object_off,
                         std::string_view name) {
  auto corrupt = [&](std::string_view what) {
    return Status::Corruption(fmt::format("{}: entry at byte {}: {}", name, object_off, what));
  };
  if (header_and_data.size() != kPackEntryHeaderBytes + static_cast<uint64_t>(len)) {
    return corrupt("read size does not match the entry");
  }
  uint32_t stored_len = GetLe32(header_and_data.data());
  if (stored_len != len) {
    return corrupt(fmt::format("entry holds {} bytes, the file's slice says {}", stored_len, len));
  }
  std::string_view data = header_and_data.substr(kPackEntryHeaderBytes);
  if (Crc32c(data.data(), data.size()) != GetLe32(header_and_data.data() + 4)) {
    return corrupt("entry checksum mismatch");
  }
  return Status::OK();
}

Status ReadPacked(BlockStore* store, uint64_t pack_id, uint32_t pack_bytes, uint32_t object_off,
                  uint32_t len, char* out) {
  ObjectKey key = ObjectKey::Pack(pack_id, pack_bytes);
  if (object_off < kPackHeaderBytes + kPackEntryHeaderBytes || len == 0 ||
      static_cast<uint64_t>(object_off) + len > pack_bytes) {
    return Status::Corruption(fmt::format("{}: no entry of {} bytes can be at byte {}",
                                          store->ObjectPath(key), len, object_off));
  }
  std::string buf(kPackEntryHeaderBytes + static_cast<size_t>(len), '\0');
  FOLIO_RETURN_IF_ERROR(
      store->Get(key, object_off - kPackEntryHeaderBytes, buf.size(), buf.data()));
  FOLIO_RETURN_IF_ERROR(VerifyPackedEntry(buf, len, object_off, store->ObjectPath(key)));
  std::memcpy(out, buf.data() + kPackEntryHeaderBytes, len);
  return Status::OK();
}

Status CopyLiveEntries(std::string_view pack, uint64_t pack_id, std::string_view name,
                       const std::function<bool(uint32_t object_off)>& live, PackBuilder* into,
                       std::vector<std::pair<uint32_t, uint32_t>>* moved) {
  // Verify the whole pack first, so a damaged pack copies nothing.
  FOLIO_RETURN_IF_ERROR(WalkPack(pack, pack_id, name, nullptr));
  return WalkPack(pack, pack_id, name, [&](const PackEntry& e, std::string_view data) {
    if (!live(e.object_off)) return;
    uint32_t to = into->AddWithCrc(data, e.crc);
    moved->emplace_back(e.object_off, to);
  });
}

// ---- PackWriter ----------------------------------------------------------------------------


struct PackWriter::Pending {
  PackWriter* writer = nullptr;
  StoreRequest req;
  std::string bytes;
  std::vector<PackEntry> entries;
  std::vector<PackAddDone> dones;
  uint64_t pack_id = 0;
};

PackWriter::PackWriter(BlockStore* store, const PackWriterOptions& options, PackIdFn next_id)
    : store_(store), options_(options), next_id_(std::move(next_id)) {
  FOLIO_CHECK(options_.pack_bytes_max > kPackHeaderBytes + kPackEntryHeaderBytes &&
              options_.pack_bytes_max <= kMaxObjectBytes);
  timer_ = std::thread([this] { TimerLoop(); });
}

PackWriter::~PackWriter() {
  (void)Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  timer_.join();
}

void PackWriter::Add(std::string_view data, PackAddDone done) {
  FOLIO_CHECK(!data.empty() && data.size() <= MaxEntryBytes());
  std::unique_lock<std::mutex> lock(mu_);
  if (!open_.empty() && open_.BytesWith(data.size()) > options_.pack_bytes_max) {
    SealLocked(lock, Why::kFull);
  }
  if (open_.empty()) {
    open_since_ns_ = MonotonicNowNs();
    cv_.notify_all();  // the timer starts counting
  }
  open_.Add(data);
  open_done_.push_back(std::move(done));
  stats_.files++;
  stats_.file_bytes += data.size();
}

void PackWriter::SealLocked(std::unique_lock<std::mutex>& lock, Why why) {
  if (open_.empty()) return;
  auto* p = new Pending;
  p->writer = this;
  p->req.ctx = p;
  PackBuilder builder = std::move(open_);
  open_ = PackBuilder();
  p->dones = std::move(open_done_);
  open_done_.clear();
  p->entries = builder.entry_list();
  ++in_flight_;
  ++stats_.packs;
  stats_.pack_bytes += builder.bytes();
  if (why == Why::kFull) ++stats_.sealed_full;
  if (why == Why::kTimer) ++stats_.sealed_timer;
  if (why == Why::kFlush) ++stats_.sealed_flush;
  lock.unlock();
  Result<uint64_t> id = next_id_();
  if (!id.ok()) {
    p->req.status = id.status().WithContext("pack id");
    PutDone(&p->req);  // completes the entries with the error
  } else {
    p->pack_id = *id;
    p->bytes = builder.Finish(*id);
    p->req.ResetPut(ObjectKey::Pack(*id, static_cast<uint32_t>(p->bytes.size())), p->bytes.data());
    p->req.done = &PackWriter::PutDone;
    store_->Submit(&p->req);
  }
  lock.lock();
}

void PackWriter::PutDone(StoreRequest* req) {
  auto* p = static_cast<Pending*>(req->ctx);
  Status status = req->status;
  for (size_t i = 0; i < p->dones.size(); ++i) {
    PackedLocation loc{p->pack_id, static_cast<uint32_t>(p->bytes.size()),
                       p->entries[i].object_off, p->entries[i].len,
                       static_cast<uint32_t>(p->dones.size())};
    if (p->dones[i]) p->dones[i](status, loc);
  }
  PackWriter* w = p->writer;
  delete p;
  std::lock_guard<std::mutex> lock(w->mu_);
  --w->in_flight_;
  if (!status.ok()) {
    ++w->stats_.errors;
    if (w->first_error_.ok()) w->first_error_ = status;
  }
  w->cv_.notify_all();  // under the lock: Flush cannot return (and destroy us) before this
}

Status PackWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  SealLocked(lock, Why::kFlush);
  cv_.wait(lock, [&] { return in_flight_ == 0; });
  Status s = first_error_;
  first_error_ = Status::OK();
  return s;
}

PackWriterStats PackWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PackWriter::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (open_.empty()) {
      cv_.wait(lock);
      continue;
    }
    uint64_t due = open_since_ns_ + options_.flush_after_ms * 1000000ull;
    uint64_t now = MonotonicNowNs();
    if (now >= due) {
      SealLocked(lock, Why::kTimer);
      continue;
    }
    cv_.wait_for(lock, std::chrono::nanoseconds(due - now));
  }
}

}  // namespace folio::store
