// WriteIntentBitmap: which regions of the members may hold writes whose parity (or mirror
// copies) is not known to be consistent, and which regions still wait for a resync.
//
// A region's bit is set, and the bitmap made durable on every member, before the first write
// into the region is issued. A set bit is cleared at a flush when the region has had no write
// in flight and none completed since the flush began, and its last write is older than the
// clear delay (md clears after a few idle seconds, so a busy region does not pay a bitmap write
// per flush). Cleared bits reach the disk with the next bitmap write.
//
// Regions found set at assembly (an unclean stop) or all regions after a create without
// --assume-clean need a resync: their bits stay set, and writes into them use
// reconstruct-write, until the resync of the region completes.
//
// The on-disk image is docs/format/raid.md's: bit i is byte i / 8, bit i % 8.
//
// Durability protocol: StartWrite returns the image version that must be durable before the
// write may be issued (0 when it already is); the caller writes the image (Snapshot) to the
// members with a flush and calls MarkDurable(version).
//
// Thread safety: all methods are thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

namespace folio::raid {

class WriteIntentBitmap {
 public:
  // regions = ceil(member_data_bytes / region_bytes); image_bytes >= ceil(regions / 8).
  WriteIntentBitmap(uint64_t regions, uint64_t region_bytes, uint64_t image_bytes);

  uint64_t regions() const { return regions_; }
  uint64_t region_bytes() const { return region_bytes_; }
  uint64_t image_bytes() const { return image_bytes_; }
  uint64_t RegionOf(uint64_t member_pos) const { return member_pos / region_bytes_; }

  // ORs an on-disk image into the bits; every set bit also needs a resync. Bits past
  // regions() are ignored.
  void LoadImage(std::span<const char> image);
  // Marks every region dirty and in need of resync (create without --assume-clean).
  void MarkAllForResync();

  // A write into regions [first, last] begins. Returns the version that must be durable
  // first, or 0.
  uint64_t StartWrite(uint64_t first, uint64_t last);
  // The write into regions [first, last] completed (successfully or not).
  void EndWrite(uint64_t first, uint64_t last, uint64_t now_ms);

  // A flush begins: returns a token for FlushDone.
  uint64_t FlushBegin();
  // The flush that began with `token` completed: clears the bits it allows. Returns how many.
  uint64_t FlushDone(uint64_t token, uint64_t now_ms, uint64_t delay_ms);
  // Clears every bit that has no write in flight and no pending resync (clean stop).
  // REQUIRES: every write was flushed.
  void ClearIdle();

  bool NeedsResync(uint64_t region) const;
  // The resync of a region finished and a flush that began with `token` (FlushBegin) made
  // it durable: clears its need, and its bit when no write is in flight or completed since.
  void MarkResynced(uint64_t region, uint64_t token);
  // The first region >= from that needs a resync, or regions().
  uint64_t NextResync(uint64_t from) const;

  // Copies the current image into out (image_bytes) and returns its version.
  uint64_t Snapshot(char* out) const;
  void MarkDurable(uint64_t version);
  bool IsDurable(uint64_t version) const;
  // True when the image changed since it was last made durable (e.g. bits cleared).
  bool ImageChanged() const;

  uint64_t dirty_count() const;
  uint64_t resync_count() const;

 private:
  struct Region {
    uint32_t in_flight = 0;
    bool resync = false;
    uint64_t set_version = 0;     // image version that set the bit
    uint64_t last_write_seq = 0;  // completion sequence of its last write
    uint64_t last_write_ms = 0;
  };
  bool TestLocked(uint64_t r) const { return (image_[r / 8] >> (r % 8)) & 1; }
  void SetLocked(uint64_t r);
  void ClearLocked(uint64_t r);

  const uint64_t regions_;
  const uint64_t region_bytes_;
  const uint64_t image_bytes_;
  mutable std::mutex mu_;
  std::vector<uint8_t> image_;    // GUARDED_BY(mu_)
  std::vector<Region> state_;     // GUARDED_BY(mu_)
  uint64_t version_ = 1;          // GUARDED_BY(mu_): bumped by every image change
  uint64_t durable_version_ = 1;  // GUARDED_BY(mu_)
  uint64_t write_seq_ = 0;        // GUARDED_BY(mu_)
  uint64_t dirty_ = 0;            // GUARDED_BY(mu_)
  uint64_t resync_ = 0;           // GUARDED_BY(mu_)
};

}  // namespace folio::raid
