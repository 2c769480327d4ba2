// A seeded fault model of RAID 5 and 6 (in the spirit of TigerBeetle's VOPR and LevelDB's fault
// injection env): random sequences of reads, writes (4 KiB .. 1 MiB, on and off stripe
// boundaries, and refused sub-block requests), flushes, batches of writes in flight, power loss
// (unflushed member writes dropped, or any subset of them kept, torn writes), member read and
// write errors (EIO and ENOSPC), a member file truncated while in use, outages that fail every
// member in turn followed by forced assembly, member fail, replace (also from inside a running
// rebuild), resync / rebuild / check / repair started, interrupted at random checkpoints (and
// by power loss) and resumed, re-assembly with members missing, reordered or stale, and the
// export's background runner (RaidDevice::PendingSync followed to the end).
//
// Reference: the logical content, per 4 KiB page a set of allowed contents. A write makes the
// page hold its data; a flush makes what a page holds durable; after a power loss a page may
// hold its last durable content or any write since, nothing else.
// Invariants:
//   1. a read returns allowed content or an error, never other bytes;
//   2. with every member present and in sync and no region waiting for a resync, `check`
//      finds no mismatch;
//   3. a slot in sync holds what the array would reconstruct for it: failing any one member
//      then reading everything returns allowed content (and no error).
// The run must also be hard: crashes, completed rebuilds, interrupted syncs and degraded reads
// must have happened (asserted non-zero at the end). Each level prints its counters and a
// fault tally (each fault kind as armed, and the injected errors the members returned).
//
// FOLIO_SEED picks the first of 5 seeds (default 0x5eed; base 0), FOLIO_MODEL_OPS the operations
// per level (split evenly over the seeds; FOLIO_MODEL_OPS_DIVISOR scales them, test_model_ops.h).
// A failure prints the seed, the level and the operation number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "base/test_model_ops.h"
#include "folio/arena.h"
#include "folio/fault_device.h"
#include "folio/raid.h"
#include "io/io_test_util.h"
#include "raid/raid_test_util.h"

namespace folio::raid_test {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kStripeCacheBytes = 4 << 20;
constexpr uint64_t kMaxIoPages = 256;  // 1 MiB, the largest request the model makes

#ifdef FOLIO_RAID_SLOW
constexpr uint64_t kDefaultOps = 1000000;
#else
constexpr uint64_t kDefaultOps = 100000;
#endif
// The fewest operations (per level, over the five default seeds) that are still hard enough:
// 10000 replace a member inside a running sync once at each level; 5000 never do at RAID 5.
constexpr uint64_t kFewestOps = 10000;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A member wrapper that counts data writes and runs an armed hook before the n-th one: a
// replace, a fail or a power loss in the middle of a running sync.
class HookMember : public io_test::ForwardingDevice {
 public:
  // *fired accumulates the injected errors the wrapper's FaultDevice returned (read / write
  // errors, ENOSPC, torn writes, a shrink seen) when the member is closed.
  HookMember(std::unique_ptr<FaultDevice> inner, uint64_t* fired)
      : ForwardingDevice(inner.get()), inner_(std::move(inner)), fired_(fired) {}
  ~HookMember() override { *fired_ += inner_->injected_errors(); }
  FaultDevice* fault() const { return inner_.get(); }
  void Arm(uint64_t after_writes, std::function<void()> fn) {
    countdown_ = after_writes;
    hook_ = std::move(fn);
  }
  void Disarm() { hook_ = nullptr; }
  bool supports_trim() const override { return false; }
  Status Submit(std::span<IoRequest* const> batch) override {
    for (IoRequest* r : batch) {
      // Data-area writes only: a metadata write runs under ArrayMeta's lock, which another
      // thread's replace would wait for (the hook runs on the sync's thread instead).
      if (hook_ && r->op == IoOp::kWrite && r->offset >= kDataOffset && countdown_-- == 0) {
        auto h = std::move(hook_);
        hook_ = nullptr;
        h();
      }
    }
    return inner_->Submit(batch);
  }

 private:
  std::unique_ptr<FaultDevice> inner_;
  uint64_t* const fired_;
  uint64_t countdown_ = 0;
  std::function<void()> hook_;
};

struct Counters {
  uint64_t writes = 0, write_errors = 0, reads = 0, read_errors = 0, flushes = 0;
  uint64_t crashes = 0, torn = 0, syncs_interrupted = 0, syncs_completed = 0;
  uint64_t rebuilds_completed = 0, replaces = 0, replaces_in_sync = 0, fails = 0;
  uint64_t degraded_reads = 0, read_errors_corrected = 0, unsynced_units = 0;
  uint64_t assemblies = 0, assembled_degraded = 0, stale_offered = 0, refused_assemblies = 0;
  uint64_t checks_clean = 0, degraded_verifies = 0, runner_rounds = 0, sub_block_refused = 0;
  uint64_t arrays_given_up = 0, enospc = 0, shrinks = 0, outages = 0, forced_assemblies = 0;
  // The fault tally: each kind as armed (a fault that needs a later request to fire may not),
  // and `fired`, the injected errors the members returned.
  uint64_t read_faults = 0, write_faults = 0, crashes_subset = 0, crashes_in_sync = 0;
  uint64_t fails_in_sync = 0, left_out = 0, fired = 0;
  std::string FaultTally() const {
    char b[768];
    std::snprintf(b, sizeof b,
                  "faults: power losses %" PRIu64 " (any subset kept %" PRIu64 ", inside a sync %"
                  PRIu64 "), torn writes %" PRIu64 ", read-error ranges %" PRIu64
                  ", write errors %" PRIu64 " (ENOSPC %" PRIu64 "), members shrunk %" PRIu64
                  ", outages %" PRIu64 ", member fails %" PRIu64 " (inside a sync %" PRIu64
                  "), replaces %" PRIu64 " (inside a sync %" PRIu64
                  "), assemblies with a member left out %" PRIu64 ", stale members offered %"
                  PRIu64 ", forced assemblies %" PRIu64 "; injected errors fired %" PRIu64,
                  crashes, crashes_subset, crashes_in_sync, torn, read_faults, write_faults,
                  enospc, shrinks, outages, fails, fails_in_sync, replaces, replaces_in_sync,
                  left_out, stale_offered, forced_assemblies, fired);
    return b;
  }
  std::string ToString() const {
    char b[1280];
    std::snprintf(b, sizeof b,
                  "writes %" PRIu64 " (errors %" PRIu64 "), reads %" PRIu64 " (errors %" PRIu64
                  "), flushes %" PRIu64 ", crashes %" PRIu64 " (torn %" PRIu64
                  "), syncs interrupted %" PRIu64 " / completed %" PRIu64
                  ", rebuilds completed %" PRIu64 ", replaces %" PRIu64 " (in a sync %" PRIu64
                  "), fails %" PRIu64 ", degraded reads %" PRIu64
                  ", read errors corrected %" PRIu64 ", unsynced units %" PRIu64
                  ", assemblies %" PRIu64 " (degraded %" PRIu64 ", stale offered %" PRIu64
                  ", refused %" PRIu64 "), clean checks %" PRIu64 ", degraded verifies %" PRIu64
                  ", runner rounds %" PRIu64 ", sub-block refused %" PRIu64
                  ", arrays given up %" PRIu64 ", ENOSPC injected %" PRIu64
                  ", members shrunk %" PRIu64 ", outages %" PRIu64
                  ", forced assemblies %" PRIu64,
                  writes, write_errors, reads, read_errors, flushes, crashes, torn,
                  syncs_interrupted, syncs_completed, rebuilds_completed, replaces,
                  replaces_in_sync, fails, degraded_reads, read_errors_corrected, unsynced_units,
                  assemblies, assembled_degraded, stale_offered, refused_assemblies, checks_clean,
                  degraded_verifies, runner_rounds, sub_block_refused, arrays_given_up,
                  enospc, shrinks, outages, forced_assemblies);
    return b;
  }
  void Add(const Counters& o) {
    uint64_t* a = &writes;
    const uint64_t* b = &o.writes;
    for (size_t i = 0; i < sizeof(Counters) / sizeof(uint64_t); ++i) a[i] += b[i];
  }
};

class FaultModel {
 public:
  FaultModel(uint64_t seed, RaidLevel level) : seed_(seed), level_(level), rng_(seed) {
    // One stripe-cache arena for every array the model assembles (as the export passes its
    // own): pre-faulting a new arena per assembly was a third of the run's time, and buffers an
    // array leaks at Stop would exhaust this one.
    ArenaOptions ao;
    ao.capacity_bytes = 2 * kStripeCacheBytes;
    auto arena = FolioArena::Create(ao);
    FOLIO_CHECK(arena.ok());
    arena_ = std::move(arena).value();
  }

  // Runs `ops` operations; returns false (after a gtest failure) on a broken invariant.
  void Run(uint64_t ops);
  const Counters& counters() const { return c_; }

 private:
  struct Disk {
    std::unique_ptr<BlockDevice> mem;
    HookMember* member = nullptr;  // the wrapper of the current array, or null
    uint64_t shrink_end = 0;       // truncated to this size while in use (0: never)
  };
  struct Page {
    std::vector<uint64_t> durable;  // may be on disk after a power loss
    std::vector<uint64_t> since;    // written since the last flush
    std::vector<uint64_t> visible;  // what a read may return now
  };

  std::string Where() const {
    return "FOLIO_SEED=" + std::to_string(seed_) + " " + std::string(RaidLevelName(level_)) +
           " op " + std::to_string(op_) + " (" + what_ + ")";
  }
  uint64_t Rand(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(uint32_t per_mille) { return Rand(1000) < per_mille; }
  uint32_t NewDisk();
  void DropDisk(uint32_t d);  // its memory device goes to spare_mems_
  RaidMember WrapDisk(uint32_t d);
  void Create();
  void Assemble(bool variations);
  void Crash();
  void StopAndAssemble();
  bool Tolerates(uint32_t more_failed) const;
  bool CanFail(uint32_t slot) const;
  bool Dead() const;
  void Converge();
  void Recreate();

  void OpWrite();
  void OpBatch();
  void OpRead(uint64_t first, uint64_t pages, bool must_succeed);
  void OpFlush();
  void OpSubBlock();
  void OpFail();
  void OpReplace();
  void OpReadFault();
  void OpWriteFault();
  void OpShrink();
  void OpOutage();
  bool Shrunk(uint32_t slot) const;
  void OpSync();
  void OpRunner();
  void OpCheckClean();
  void OpDegradedVerify();
  void RecordSync(RaidSyncAction a, const Result<RaidSyncReport>& r);
  void Fill(char* buf, uint64_t first, uint64_t pages, std::vector<uint64_t>* tags);
  void Wrote(uint64_t first, const std::vector<uint64_t>& tags, bool ok);
  bool Healthy() const;  // every slot in sync, nothing to resync
  void ClearFaults();
  void FreeUnused();

  const uint64_t seed_;
  const RaidLevel level_;
  std::mt19937_64 rng_;
  uint64_t op_ = 0;
  std::string what_;
  Counters c_;  // before the disks and the array: closing a member adds to c_.fired
  uint32_t members_ = 0;
  uint64_t chunk_ = 0;
  uint64_t member_bytes_ = 0;
  std::vector<Disk> disks_;
  // Dropped disks, reused by NewDisk; declared before dev_ so they outlive every wrapper.
  std::vector<std::unique_ptr<BlockDevice>> spare_mems_;
  const AlignedBuffer zeros_ = AlignedBuffer::Zeroed(1 << 20);
  std::vector<int> slot_disk_;  // disk in each slot, -1 when none
  std::unique_ptr<FolioArena> arena_;  // declared before dev_: outlives every array
  std::unique_ptr<RaidDevice> dev_;
  // Reused I/O buffers (a fresh 1 MiB buffer per operation was the run's top allocation).
  AlignedBuffer io_buf_{kMaxIoPages * kPage};
  std::vector<AlignedBuffer> batch_bufs_;
  std::vector<Page> pages_;
  uint64_t next_tag_ = 1;
  uint64_t degraded0_ = 0, corrected0_ = 0;
};

uint32_t FaultModel::NewDisk() {
  std::unique_ptr<BlockDevice> mem;
  if (!spare_mems_.empty() && spare_mems_.back()->size_bytes() == member_bytes_) {
    // A disk the model dropped, zeroed: what a new one reads, without a new one's 1 MiB chunk
    // allocations (an mmap each under ASan), first-touch page faults and munmaps (~4% of the
    // run's CPU).
    mem = std::move(spare_mems_.back());
    spare_mems_.pop_back();
    for (uint64_t off = 0; off < member_bytes_; off += zeros_.size()) {
      const uint64_t n = std::min<uint64_t>(zeros_.size(), member_bytes_ - off);
      FOLIO_CHECK(mem->Write(off, zeros_.data(), n).ok());
    }
  } else {
    spare_mems_.clear();  // of another size
    MemDeviceOptions o;
    o.size_bytes = member_bytes_;
    auto dev = NewMemDevice(o);
    FOLIO_CHECK(dev.ok());
    mem = std::move(dev).value();
  }
  disks_.push_back({std::move(mem), nullptr});
  return static_cast<uint32_t>(disks_.size() - 1);
}

void FaultModel::DropDisk(uint32_t d) {
  if (disks_[d].mem != nullptr) spare_mems_.push_back(std::move(disks_[d].mem));
  disks_[d].member = nullptr;
}

RaidMember FaultModel::WrapDisk(uint32_t d) {
  auto m = std::make_unique<HookMember>(FaultDevice::WrapUnowned(disks_[d].mem.get()), &c_.fired);
  disks_[d].member = m.get();
  // A truncated file stays truncated: every later open of the disk sees it.
  if (disks_[d].shrink_end != 0) m->fault()->Shrink(disks_[d].shrink_end);
  return {"d" + std::to_string(d), std::move(m)};
}

// Whether `more` members may fail: failed and rebuilding slots both count (a rebuilding slot
// cannot serve what it has not been rebuilt with).
// A shrunk member still in sync counts as lost: it fails at its next flush or read past its end.
bool FaultModel::Tolerates(uint32_t more) const {
  uint32_t lost = 0;
  for (const RaidMemberStatus& m : dev_->Describe().members) {
    lost += m.health == MemberHealth::kInSync && !Shrunk(m.slot) ? 0 : 1;
  }
  return lost + more <= RaidFailureTolerance(level_, members_);
}

// Whether slot s may be failed (a slot already not in sync costs nothing more).
// More slots out of sync than the level survives (injected write errors can do it): the
// array's data is gone, reported as DataLoss; the model starts a new array.
bool FaultModel::Dead() const {
  uint32_t lost = 0;
  for (const RaidMemberStatus& m : dev_->Describe().members) {
    lost += m.health == MemberHealth::kInSync ? 0 : 1;
  }
  return lost > RaidFailureTolerance(level_, members_);
}

bool FaultModel::CanFail(uint32_t s) const {
  const MemberHealth h = dev_->Describe().members[s].health;
  if (h == MemberHealth::kFailed || h == MemberHealth::kMissing) return false;
  return h == MemberHealth::kRebuilding || Tolerates(1);
}

bool FaultModel::Healthy() const {
  const RaidStatus st = dev_->Describe();
  if (st.resync_regions != 0) return false;
  for (const RaidMemberStatus& m : st.members) {
    if (m.health != MemberHealth::kInSync || Shrunk(m.slot)) return false;
  }
  return true;
}

bool FaultModel::Shrunk(uint32_t slot) const {
  const int d = slot < slot_disk_.size() ? slot_disk_[slot] : -1;
  return d >= 0 && disks_[d].shrink_end != 0;
}

void FaultModel::Create() {
  members_ = level_ == RaidLevel::kRaid5 ? 3 + static_cast<uint32_t>(Rand(3))
                                         : 4 + static_cast<uint32_t>(Rand(3));
  chunk_ = uint64_t{16 << 10} << Rand(3);  // 16K, 32K, 64K
  slot_disk_.clear();
  const uint64_t data = 16 * (64 << 10);   // 1 MiB per member
  member_bytes_ = kDataOffset + data;
  RaidCreateOptions co;
  co.level = level_;
  co.chunk_bytes = chunk_;
  co.unit_bytes = Chance(500) ? 0 : chunk_ >> Rand(2);
  co.assume_clean = true;  // memory members start zeroed: parity of zeros is zeros
  co.bitmap_region_bytes = chunk_ << Rand(3);
  std::vector<RaidMember> ms;
  for (uint32_t s = 0; s < members_; ++s) {
    const uint32_t d = NewDisk();
    slot_disk_.push_back(static_cast<int>(d));
    ms.push_back(WrapDisk(d));
  }
  RaidOptions o;
  o.bitmap_clear_delay_ms = Rand(2) ? 0 : 1000000;
  o.stripe_cache_bytes = kStripeCacheBytes;
  o.arena = arena_.get();
  auto dev = RaidDevice::Create(std::move(ms), co, o);
  FOLIO_CHECK_MSG(dev.ok(), "model: create failed");
  dev_ = std::move(dev).value();
  pages_.assign(dev_->size_bytes() / kPage, Page{{0}, {}, {0}});
}

void FaultModel::Fill(char* buf, uint64_t first, uint64_t pages, std::vector<uint64_t>* tags) {
  tags->clear();
  for (uint64_t i = 0; i < pages; ++i) {
    const uint64_t tag = Mix(seed_ ^ (next_tag_++ << 20) ^ (first + i));
    tags->push_back(tag);
    uint64_t* w = reinterpret_cast<uint64_t*>(buf + i * kPage);
    for (uint64_t j = 0; j < kPage / 8; ++j) w[j] = tag;
  }
}

void FaultModel::Wrote(uint64_t first, const std::vector<uint64_t>& tags, bool ok) {
  for (uint64_t i = 0; i < tags.size(); ++i) {
    Page& p = pages_[first + i];
    if (ok) p.visible.clear();
    p.visible.push_back(tags[i]);  // a failed write may or may not have landed
    p.since.push_back(tags[i]);
  }
}

void FaultModel::OpWrite() {
  const uint64_t total = pages_.size();
  const uint64_t pages =
      Chance(30) ? 1 + Rand(kMaxIoPages) : 1 + Rand(std::min<uint64_t>(16, total));
  const uint64_t n = std::min(pages, total);
  const uint64_t first = Rand(total - n + 1);
  std::vector<uint64_t> tags;
  Fill(io_buf_.data(), first, n, &tags);
  const Status st = dev_->Write(first * kPage, io_buf_.data(), n * kPage);
  ++c_.writes;
  if (!st.ok()) ++c_.write_errors;
  Wrote(first, tags, st.ok());
}

void FaultModel::OpBatch() {
  // Several writes submitted together and completed in one Poll: heads of one thread queue
  // behind each other's stripe locks.
  const uint64_t total = pages_.size();
  const uint32_t count = 2 + static_cast<uint32_t>(Rand(6));
  while (batch_bufs_.size() < count) batch_bufs_.emplace_back(8 * kPage);
  std::vector<IoRequest> reqs(count);
  std::vector<std::vector<uint64_t>> tags(count);
  std::vector<uint64_t> firsts(count);
  std::vector<IoRequest*> ptrs;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t n = 1 + Rand(8);
    firsts[i] = Rand(total - n + 1);
    Fill(batch_bufs_[i].data(), firsts[i], n, &tags[i]);
    reqs[i].Reset(IoOp::kWrite, firsts[i] * kPage, n * kPage, batch_bufs_[i].data());
    ptrs.push_back(&reqs[i]);
  }
  Status st = dev_->Submit(ptrs);
  if (st.ok()) {
    while (dev_->InFlight() > 0) {
      if (!dev_->Poll(1).ok()) break;
    }
  }
  // Overlapping writes of one batch may land in any order: each page may hold either.
  for (uint32_t i = 0; i < count; ++i) {
    ++c_.writes;
    const bool ok = st.ok() && reqs[i].status.ok();
    if (!ok) ++c_.write_errors;
    for (uint64_t j = 0; j < tags[i].size(); ++j) {
      Page& p = pages_[firsts[i] + j];
      p.since.push_back(tags[i][j]);
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    for (uint64_t j = 0; j < tags[i].size(); ++j) {
      Page& p = pages_[firsts[i] + j];
      bool overlapped = false;
      for (uint32_t o = 0; o < count; ++o) {
        if (o != i && firsts[i] + j >= firsts[o] && firsts[i] + j < firsts[o] + tags[o].size()) {
          overlapped = true;
        }
      }
      const bool ok = st.ok() && reqs[i].status.ok();
      if (ok && !overlapped) p.visible.clear();
      if (std::find(p.visible.begin(), p.visible.end(), tags[i][j]) == p.visible.end()) {
        p.visible.push_back(tags[i][j]);
      }
    }
  }
}

void FaultModel::OpRead(uint64_t first, uint64_t n, bool must_succeed) {
  FOLIO_CHECK(n <= kMaxIoPages);
  AlignedBuffer& buf = io_buf_;
  const Status st = dev_->Read(first * kPage, buf.data(), n * kPage);
  ++c_.reads;
  if (!st.ok()) {
    ++c_.read_errors;
    ASSERT_FALSE(must_succeed) << Where() << ": read of pages " << first << "+" << n
                               << " failed: " << st.ToString();
    return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t* w = reinterpret_cast<const uint64_t*>(buf.data() + i * kPage);
    const Page& p = pages_[first + i];
    bool uniform = true;
    for (uint64_t j = 1; j < kPage / 8; ++j) uniform &= w[j] == w[0];
    const bool allowed = std::find(p.visible.begin(), p.visible.end(), w[0]) != p.visible.end();
    ASSERT_TRUE(uniform && allowed) << Where() << ": page " << first + i << " returned "
                                    << (uniform ? "an old or foreign page" : "mixed bytes")
                                    << " (tag " << w[0] << ", " << p.visible.size()
                                    << " allowed)";
  }
}

void FaultModel::OpFlush() {
  ++c_.flushes;
  if (!dev_->Flush().ok()) return;  // nothing more is known durable
  for (Page& p : pages_) {
    if (p.since.empty()) continue;
    p.durable = p.visible;
    p.since.clear();
  }
}

void FaultModel::OpSubBlock() {
  // The array's block is 4 KiB: a 512-byte-aligned request is refused and changes nothing.
  AlignedBuffer buf(kPage);
  std::memset(buf.data(), 0x77, kPage);
  const uint64_t off = Rand(pages_.size() - 1) * kPage + 512 * (1 + Rand(7));
  const Status st = Chance(500) ? dev_->Write(off, buf.data(), 512 * (1 + Rand(8)))
                                : dev_->Read(off, buf.data(), 512);
  ASSERT_FALSE(st.ok()) << Where() << ": a sub-block request was accepted";
  ++c_.sub_block_refused;
}

void FaultModel::ClearFaults() {
  for (int d : slot_disk_) {
    if (d < 0 || disks_[d].member == nullptr) continue;
    FaultDevice* f = disks_[d].member->fault();
    f->ClearFailures();
    if (disks_[d].shrink_end != 0) f->Shrink(disks_[d].shrink_end);  // a truncation stays
  }
}

void FaultModel::OpFail() {
  const uint32_t s = static_cast<uint32_t>(Rand(members_));
  if (CanFail(s) && dev_->FailMember(s).ok()) ++c_.fails;
}

void FaultModel::OpReplace() {
  if (Dead()) return;
  const RaidStatus st = dev_->Describe();
  std::vector<uint32_t> failed;
  for (const RaidMemberStatus& m : st.members) {
    if (m.health == MemberHealth::kFailed || m.health == MemberHealth::kMissing) {
      failed.push_back(m.slot);
    }
  }
  if (failed.empty()) return;
  const uint32_t s = failed[Rand(failed.size())];
  const uint32_t d = NewDisk();
  if (dev_->ReplaceMember(s, WrapDisk(d)).ok()) {
    slot_disk_[s] = static_cast<int>(d);
    ++c_.replaces;
  }
}

void FaultModel::OpReadFault() {
  const int d = slot_disk_[Rand(members_)];
  if (d < 0 || disks_[d].member == nullptr) return;
  const uint64_t len = chunk_ * (1 + Rand(3));
  const uint64_t off = kDataOffset + Rand((member_bytes_ - kDataOffset) / kPage) * kPage;
  disks_[d].member->fault()->FailRange(off, len, /*reads=*/true, /*writes=*/false);
  ++c_.read_faults;
}

void FaultModel::OpWriteFault() {
  const int d = slot_disk_[Rand(members_)];
  if (d < 0 || disks_[d].member == nullptr || !Tolerates(1)) return;
  if (Chance(500)) {
    // The file system under the member is full: the write fails with ENOSPC, not EIO.
    disks_[d].member->fault()->SetInjectedErrno(ENOSPC);
    ++c_.enospc;
  }
  disks_[d].member->fault()->FailNthOf(IoOp::kWrite, 1 + Rand(8));
  ++c_.write_faults;
}

void FaultModel::OpShrink() {
  // A member file truncated while the array runs (issue 8 case 9): its next flush or a read
  // past the new end fails it, and parity serves its data; it never reads as zeros.
  const uint32_t s = static_cast<uint32_t>(Rand(members_));
  const int d = slot_disk_[s];
  if (d < 0 || disks_[d].member == nullptr || disks_[d].shrink_end != 0 || !Tolerates(1)) return;
  const uint64_t data_pages = (member_bytes_ - kDataOffset) / kPage;
  disks_[d].shrink_end = kDataOffset + Rand(data_pages) * kPage;
  disks_[d].member->fault()->Shrink(disks_[d].shrink_end);
  ++c_.shrinks;
}

void FaultModel::OpOutage() {
  // Sparse members on a file system that fills (issue 8 case 6): every member's data writes
  // fail with ENOSPC, the members fail in turn until the array stops; space is freed and the
  // operator assembles by force (Assemble falls back to it when the array cannot start).
  if (!Healthy()) return;
  for (int d : slot_disk_) {
    FaultDevice* f = disks_[d].member->fault();
    f->SetInjectedErrno(ENOSPC);
    f->FailRange(kDataOffset, member_bytes_ - kDataOffset, /*reads=*/false, /*writes=*/true);
  }
  for (int i = 0; i < 8 && !Dead(); ++i) OpWrite();
  ++c_.outages;
  ClearFaults();
  StopAndAssemble();
}

void FaultModel::RecordSync(RaidSyncAction a, const Result<RaidSyncReport>& r) {
  if (!r.ok()) return;
  c_.unsynced_units += r->unsynced;
  if (!r->completed) {
    ++c_.syncs_interrupted;
    return;
  }
  ++c_.syncs_completed;
  if (a == RaidSyncAction::kRebuild) ++c_.rebuilds_completed;
}

void FaultModel::OpSync() {
  static constexpr RaidSyncAction kActions[] = {RaidSyncAction::kResync, RaidSyncAction::kRebuild,
                                                RaidSyncAction::kCheck, RaidSyncAction::kRepair};
  std::optional<RaidSyncAction> a = dev_->PendingSync();
  if (!a.has_value() || Chance(300)) a = kActions[Rand(4)];
  RaidSyncOptions o;
  o.speed_limit_min_kib = 0;
  o.window_bytes = chunk_ * (1 + Rand(8));
  if (Chance(500)) o.max_bytes = chunk_ * (1 + Rand(24));  // stop at a checkpoint
  // Now and then something happens inside the running sync, at a member write.
  const int d = slot_disk_[Rand(members_)];
  bool crashed = false;
  if (d >= 0 && disks_[d].member != nullptr && Chance(250)) {
    const uint64_t after = Rand(16);
    const uint32_t kind = static_cast<uint32_t>(Rand(3));
    disks_[d].member->Arm(after, [this, kind, &crashed] {
      if (kind == 0) {
        // Replace while the sync runs (a rebuilding member, or another one).
        const uint32_t s = static_cast<uint32_t>(Rand(members_));
        const MemberHealth h = dev_->Describe().members[s].health;
        if (h != MemberHealth::kFailed && h != MemberHealth::kMissing) {
          if (!CanFail(s) || !dev_->FailMember(s).ok()) return;
        }
        const uint32_t fresh = NewDisk();
        if (dev_->ReplaceMember(s, WrapDisk(fresh)).ok()) {
          slot_disk_[s] = static_cast<int>(fresh);
          ++c_.replaces;
          ++c_.replaces_in_sync;
        }
      } else if (kind == 1) {
        const uint32_t s = static_cast<uint32_t>(Rand(members_));
        if (CanFail(s) && dev_->FailMember(s).ok()) {
          ++c_.fails;
          ++c_.fails_in_sync;
        }
      } else {
        // Power loss in the middle of the sync.
        for (int dd : slot_disk_) {
          if (dd >= 0 && disks_[dd].member != nullptr) {
            disks_[dd].member->fault()->Crash(CrashMode::kRandomSubset, rng_());
          }
        }
        crashed = true;
        ++c_.crashes_in_sync;
      }
    });
  }
  auto r = dev_->Sync(*a, o);
  if (d >= 0 && disks_[d].member != nullptr) disks_[d].member->Disarm();
  if (crashed) {
    ++c_.syncs_interrupted;
    Crash();  // already crashed: tear down and assemble
    return;
  }
  RecordSync(*a, r);
}

void FaultModel::OpRunner() {
  // The export's background runner: PendingSync followed until nothing is left or an action
  // makes no progress (raid_volume.cc RunPending).
  std::optional<RaidSyncAction> last;
  for (int round = 0; round < 6; ++round) {
    const std::optional<RaidSyncAction> a = dev_->PendingSync();
    if (!a.has_value() || a == last) return;
    ++c_.runner_rounds;
    RaidSyncOptions o;
    o.speed_limit_min_kib = 0;
    auto r = dev_->Sync(*a, o);
    RecordSync(*a, r);
    if (!r.ok() || !r->completed) return;
    if (r->unsynced > 0) last = a;
  }
}

// What an operator does: replace every failed member and let the runner finish. An array that
// still cannot become healthy (units left unsynced: a member missing where a crash left parity
// untrusted, reported as such) is given up and made anew, as an operator would restore it.
void FaultModel::Converge() {
  ClearFaults();
  if (Dead()) {
    Recreate();
    return;
  }
  for (uint32_t s = 0; s < members_; ++s) {
    const MemberHealth h = dev_->Describe().members[s].health;
    if (Shrunk(s) && h != MemberHealth::kFailed && h != MemberHealth::kMissing) {
      (void)dev_->FailMember(s);
    }
  }
  if (Dead()) {
    Recreate();
    return;
  }
  for (uint32_t i = 0; i < members_; ++i) OpReplace();
  OpRunner();
  if (::testing::Test::HasFatalFailure() || Healthy()) return;
  const RaidStatus st = dev_->Describe();
  bool rebuilding = false, all_in_sync = true;
  for (const RaidMemberStatus& m : st.members) {
    rebuilding |= m.health == MemberHealth::kRebuilding;
    all_in_sync &= m.health == MemberHealth::kInSync;
  }
  // With every member in sync a resync can always finish: nothing may be left.
  ASSERT_FALSE(all_in_sync && st.resync_regions > 0)
      << Where() << ": " << st.resync_regions << " regions left after a resync with every member";
  if (st.resync_regions > 0 || rebuilding) Recreate();
}

void FaultModel::Recreate() {
  ++c_.arrays_given_up;
  (void)dev_->Stop();
  dev_.reset();
  for (uint32_t d = 0; d < disks_.size(); ++d) DropDisk(d);
  slot_disk_.clear();
  Create();
}

void FaultModel::OpCheckClean() {
  Converge();
  if (::testing::Test::HasFatalFailure() || !Healthy()) return;
  RaidSyncOptions o;
  o.speed_limit_min_kib = 0;
  auto r = dev_->Sync(RaidSyncAction::kCheck, o);
  if (!r.ok()) return;  // a member error during the check
  if (!r->completed) return;
  ASSERT_EQ(r->mismatches, 0u) << Where() << ": check after a complete resync found "
                               << r->mismatches << " mismatches (first stripe "
                               << (r->mismatched_stripes.empty() ? 0 : r->mismatched_stripes[0])
                               << ")";
  ++c_.checks_clean;
}

void FaultModel::OpDegradedVerify() {
  Converge();
  if (::testing::Test::HasFatalFailure() || !Healthy()) return;
  const uint32_t s = static_cast<uint32_t>(Rand(members_));
  ASSERT_TRUE(dev_->FailMember(s).ok()) << Where();
  ++c_.fails;
  ++c_.degraded_verifies;
  // Everything is readable from the others, and right.
  const uint64_t step = 64;
  for (uint64_t p = 0; p < pages_.size(); p += step) {
    OpRead(p, std::min<uint64_t>(step, pages_.size() - p), /*must_succeed=*/true);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void FaultModel::Crash() {
  const CrashMode mode = Chance(500) ? CrashMode::kRandomSubset : CrashMode::kDropUnflushed;
  for (int d : slot_disk_) {
    if (d >= 0 && disks_[d].member != nullptr) disks_[d].member->fault()->Crash(mode, rng_());
  }
  ++c_.crashes;
  if (mode == CrashMode::kRandomSubset) ++c_.crashes_subset;
  (void)dev_->Stop();
  dev_.reset();
  for (Page& p : pages_) {
    for (uint64_t t : p.since) {
      if (std::find(p.durable.begin(), p.durable.end(), t) == p.durable.end()) {
        p.durable.push_back(t);
      }
    }
    p.since.clear();
    p.visible = p.durable;
  }
  for (Disk& d : disks_) d.member = nullptr;
  Assemble(/*variations=*/true);
}

void FaultModel::StopAndAssemble() {
  // A stop only makes durable what a flush would: the model treats it as one.
  const bool ok = dev_->Stop().ok();
  dev_.reset();
  if (ok) {
    for (Page& p : pages_) {
      p.durable = p.visible;
      p.since.clear();
    }
  }
  for (Disk& d : disks_) d.member = nullptr;
  Assemble(/*variations=*/true);
}

void FaultModel::Assemble(bool variations) {
  // Members in any order; sometimes one left out (it comes back at a later assembly, stale if
  // the array changed without it), sometimes a disk that left the array offered as well.
  std::vector<uint32_t> offer;
  for (int d : slot_disk_) {
    if (d >= 0) offer.push_back(static_cast<uint32_t>(d));
  }
  bool left_out = false;
  if (variations && offer.size() > 1 && Chance(60)) {
    offer.erase(offer.begin() + static_cast<long>(Rand(offer.size())));
    left_out = true;
    ++c_.left_out;
  }
  if (variations && Chance(200)) {
    std::vector<uint32_t> others;
    for (uint32_t d = 0; d < disks_.size(); ++d) {
      if (disks_[d].mem != nullptr &&
          std::find(slot_disk_.begin(), slot_disk_.end(), static_cast<int>(d)) ==
              slot_disk_.end()) {
        others.push_back(d);
      }
    }
    if (!others.empty()) {
      offer.push_back(others[Rand(others.size())]);
      ++c_.stale_offered;
    }
  }
  std::shuffle(offer.begin(), offer.end(), rng_);
  std::vector<RaidMember> ms;
  for (uint32_t d : offer) ms.push_back(WrapDisk(d));
  RaidOptions o;
  o.bitmap_clear_delay_ms = Rand(2) ? 0 : 1000000;
  o.stripe_cache_bytes = kStripeCacheBytes;
  o.arena = arena_.get();
  auto dev = RaidDevice::Assemble(std::move(ms), o);
  ++c_.assemblies;
  if (!dev.ok() && !left_out) {
    // Too few members in sync (members failed in turn by transient errors): as an operator,
    // assemble by force; it must start when every member is offered.
    std::vector<RaidMember> again;
    for (uint32_t d : offer) again.push_back(WrapDisk(d));
    RaidAssembleOptions force;
    force.force = true;
    dev = RaidDevice::Assemble(std::move(again), o, force);
    if (dev.ok() && !(*dev)->Describe().forced.empty()) ++c_.forced_assemblies;
  }
  if (!dev.ok()) {
    ++c_.refused_assemblies;
    for (Disk& d : disks_) d.member = nullptr;
    ASSERT_TRUE(left_out) << Where() << ": assembly of every member refused: "
                          << dev.status().ToString();
    Assemble(/*variations=*/false);
    return;
  }
  dev_ = std::move(dev).value();
  // Slots as the array decided: a disk offered but stale holds no slot (its wrapper is gone).
  const RaidStatus st = dev_->Describe();
  for (uint32_t s = 0; s < members_; ++s) {
    slot_disk_[s] = -1;
    const RaidMemberStatus& m = st.members[s];
    if (m.health == MemberHealth::kInSync || m.health == MemberHealth::kRebuilding) {
      slot_disk_[s] = std::stoi(m.name.substr(1));
    }
  }
  for (uint32_t d = 0; d < disks_.size(); ++d) {
    if (std::find(slot_disk_.begin(), slot_disk_.end(), static_cast<int>(d)) ==
        slot_disk_.end()) {
      disks_[d].member = nullptr;
    }
  }
  if (dev_->Describe().failed > 0) ++c_.assembled_degraded;
  const RaidStats rs = dev_->raid_stats();
  degraded0_ = rs.degraded_reads;
  corrected0_ = rs.read_errors_corrected;
  FreeUnused();
}

void FaultModel::FreeUnused() {
  // Disks in no slot are kept a while as stale candidates; the oldest go.
  uint32_t kept = 0;
  for (uint32_t d = static_cast<uint32_t>(disks_.size()); d-- > 0;) {
    if (disks_[d].mem == nullptr) continue;
    if (std::find(slot_disk_.begin(), slot_disk_.end(), static_cast<int>(d)) !=
        slot_disk_.end()) {
      continue;
    }
    if (++kept > 3 && disks_[d].member == nullptr) DropDisk(d);
  }
}

void FaultModel::Run(uint64_t ops) {
  what_ = "create";
  Create();
  for (op_ = 1; op_ <= ops; ++op_) {
    if (Dead()) Recreate();
    const uint32_t r = static_cast<uint32_t>(Rand(1000));
    if (r < 330) {
      what_ = "write";
      OpWrite();
    } else if (r < 640) {
      what_ = "read";
      const uint64_t n = 1 + Rand(Chance(100) ? 256 : 16);
      const uint64_t m = std::min<uint64_t>(n, pages_.size());
      OpRead(Rand(pages_.size() - m + 1), m, false);
    } else if (r < 740) {
      what_ = "flush";
      OpFlush();
    } else if (r < 770) {
      what_ = "batch";
      OpBatch();
    } else if (r < 780) {
      what_ = "sub-block";
      OpSubBlock();
    } else if (r < 800) {
      what_ = "crash";
      if (Chance(300)) {
        // A torn member write just before the power loss.
        const int d = slot_disk_[Rand(members_)];
        if (d >= 0 && disks_[d].member != nullptr) {
          disks_[d].member->fault()->TearNextWrite(kPage * Rand(chunk_ / kPage), false);
          ++c_.torn;
          OpWrite();
        }
      }
      Crash();
    } else if (r < 808) {
      what_ = "fail";
      OpFail();
    } else if (r < 830) {
      what_ = "replace";
      OpReplace();
    } else if (r < 845) {
      what_ = "read fault";
      OpReadFault();
    } else if (r < 850) {
      what_ = "write fault";
      OpWriteFault();
    } else if (r < 870) {
      what_ = "clear faults";
      ClearFaults();
    } else if (r < 930) {
      what_ = "sync";
      OpSync();
    } else if (r < 945) {
      what_ = "runner";
      OpRunner();
    } else if (r < 952) {
      what_ = "stop and assemble";
      StopAndAssemble();
    } else if (r < 955) {
      what_ = "check";
      OpCheckClean();
    } else if (r < 958) {
      what_ = "degraded verify";
      OpDegradedVerify();
    } else if (r < 962) {
      what_ = "shrink";
      OpShrink();
    } else if (r < 965) {
      what_ = "outage";
      OpOutage();
    } else {
      what_ = "read";
      OpRead(Rand(pages_.size() - 1), 1, false);
    }
    if (::testing::Test::HasFatalFailure()) return;
    if (dev_ != nullptr && op_ % 64 == 0) {
      const RaidStats rs = dev_->raid_stats();
      c_.degraded_reads += rs.degraded_reads - degraded0_;
      c_.read_errors_corrected += rs.read_errors_corrected - corrected0_;
      degraded0_ = rs.degraded_reads;
      corrected0_ = rs.read_errors_corrected;
    }
  }
  (void)dev_->Stop();
  dev_.reset();  // closes the members: their fired faults are counted
}

void RunModel(RaidLevel level) {
  // A fixed default seed: the run must also be hard enough (the counts asserted below), and a
  // random seed can miss a rare event (FOLIO_SEED=152284949 had no replace inside a sync).
  // FOLIO_SEED explores other seeds.
  const uint64_t base = TestSeedOr(0x5eed);
  const uint64_t ops = ModelOps(kDefaultOps, kFewestOps);
  const uint32_t seeds = 5;
  Counters all;
  const uint64_t t0_ns = MonotonicNowNs();
  for (uint32_t i = 0; i < seeds; ++i) {
    const uint64_t seed = base + i;
    SCOPED_TRACE("FOLIO_SEED=" + std::to_string(seed));
    FaultModel m(seed, level);
    m.Run(ops / seeds);
    all.Add(m.counters());
    if (::testing::Test::HasFatalFailure()) return;
  }
  const double s = SecondsSince(t0_ns);
  std::printf("%s fault model: seeds %" PRIu64 "..%" PRIu64 ", %" PRIu64
              " ops in %.1fs\n  %s\n  %s\n",
              std::string(RaidLevelName(level)).c_str(), base, base + seeds - 1, ops, s,
              all.ToString().c_str(), all.FaultTally().c_str());
  // The run was hard enough to mean something.
  EXPECT_GT(all.crashes, 0u);
  EXPECT_GT(all.torn, 0u);
  EXPECT_GT(all.rebuilds_completed, 0u);
  EXPECT_GT(all.syncs_interrupted, 0u);
  EXPECT_GT(all.degraded_reads, 0u);
  EXPECT_GT(all.read_errors_corrected, 0u);
  EXPECT_GT(all.replaces_in_sync, 0u);
  EXPECT_GT(all.assembled_degraded, 0u);
  EXPECT_GT(all.checks_clean, 0u);
  EXPECT_GT(all.degraded_verifies, 0u);
  EXPECT_GT(all.enospc, 0u);
  EXPECT_GT(all.shrinks, 0u);
  EXPECT_GT(all.forced_assemblies, 0u);
}

TEST(RaidFaultModel, Raid5) { RunModel(RaidLevel::kRaid5); }
TEST(RaidFaultModel, Raid6) { RunModel(RaidLevel::kRaid6); }

}  // namespace
}  // namespace folio::raid_test
