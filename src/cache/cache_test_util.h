// Test helpers for the page cache: a cache over a fault device over a memory device, a device
// whose writes can be held back (GateDevice), one whose reads past an offset can be held back
// (ReadGateDevice), and deterministic data patterns.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/test_seed.h"
#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "folio/page_cache.h"

namespace folio::cache_test {

struct CacheEnv {
  std::unique_ptr<FaultDevice> device;
  std::unique_ptr<PageCache> cache;
  std::unique_ptr<AddressSpace> as;

  ~CacheEnv() {
    as.reset();
    cache.reset();
    device.reset();
  }
};

inline PageCacheOptions SmallCacheOptions(uint64_t memory_bytes, const char* policy) {
  PageCacheOptions o;
  o.memory_bytes = memory_bytes;
  o.backing = ArenaBacking::k4k;
  o.policy = *FolioPolicy::Parse(policy);
  o.writeback_threads = 0;
  o.collapse_scanner = false;
  o.compaction_background = false;
  return o;
}

inline std::unique_ptr<FaultDevice> NewFaultMem(uint64_t device_bytes) {
  MemDeviceOptions mo;
  mo.size_bytes = device_bytes;
  auto mem = NewMemDevice(mo);
  EXPECT_TRUE(mem.ok()) << mem.status().ToString();
  return FaultDevice::Wrap(std::move(mem).value());
}

inline void MakeEnv(CacheEnv* env, uint64_t device_bytes, const PageCacheOptions& o) {
  env->device = NewFaultMem(device_bytes);
  auto cache = PageCache::Create(o);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  env->cache = std::move(cache).value();
  AddressSpaceOptions ao;
  ao.name = "test";
  auto as = env->cache->Open(env->device.get(), ao);
  ASSERT_TRUE(as.ok()) << as.status().ToString();
  env->as = std::move(as).value();
}

inline constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

// A write that must succeed whole (a gtest failure otherwise).
inline void WriteOk(AddressSpace* as, uint64_t pos, const std::vector<char>& data) {
  Result<size_t> n = as->Write(pos, data);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, data.size());
}

// A read that must succeed; returns what it read (shorter at the end of the file).
inline std::vector<char> ReadOk(AddressSpace* as, uint64_t pos, size_t len) {
  std::vector<char> out(len);
  Result<size_t> n = as->Read(pos, out);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  if (n.ok()) out.resize(*n);
  return out;
}

// Byte i of the pattern with a seed: cheap, position dependent, seed dependent.
inline char PatternByte(uint64_t seed, uint64_t pos) {
  uint64_t x = (pos + 1) * 0x9e3779b97f4a7c15ull ^ seed;
  x ^= x >> 29;
  return static_cast<char>(x * 0xbf58476d1ce4e5b9ull >> 56);
}

inline std::vector<char> Pattern(uint64_t seed, uint64_t pos, size_t len) {
  std::vector<char> v(len);
  for (size_t i = 0; i < len; ++i) v[i] = PatternByte(seed, pos + i);
  return v;
}

// A device whose writes block in Submit while its gate is closed: a writeback stays in flight
// for as long as the test wants, without any timing.
class GateDevice final : public BlockDevice {
 public:
  explicit GateDevice(BlockDevice* inner) : inner_(inner) {}
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void WaitForBlockedWrite() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return blocked_ > 0; });
  }

  std::string name() const override { return "gate(" + inner_->name() + ")"; }
  uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t max_request_bytes() const override { return inner_->max_request_bytes(); }
  bool supports_trim() const override { return inner_->supports_trim(); }
  Status Submit(std::span<IoRequest* const> batch) override {
    bool writes = false;
    for (const IoRequest* r : batch) writes = writes || r->op == IoOp::kWrite;
    if (writes) {
      std::unique_lock<std::mutex> lock(mu_);
      ++blocked_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
      --blocked_;
    }
    return inner_->Submit(batch);
  }
  Result<size_t> Poll(size_t min_complete) override { return inner_->Poll(min_complete); }
  size_t InFlight() const override { return inner_->InFlight(); }
  DeviceStatsSnapshot stats() const override { return inner_->stats(); }
  void ResetStats() override { inner_->ResetStats(); }

 private:
  BlockDevice* const inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;  // GUARDED_BY(mu_)
  int blocked_ = 0;   // GUARDED_BY(mu_)
};

// A device that holds every read reaching at or past its gate (a byte offset) until the gate
// moves past it: the read is taken, counted as held, and sent to the inner device only then, by
// the submitting thread's Poll (completions stay on the thread that submitted, as the
// BlockDevice contract wants). Readahead in flight for as long as the test wants, without
// timing.
class ReadGateDevice final : public BlockDevice {
 public:
  ReadGateDevice(BlockDevice* inner, uint64_t gate) : inner_(inner), gate_(gate) {}
  void MoveGate(uint64_t gate) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_ = gate;
    }
    cv_.notify_all();
  }
  // Waits until at least `bytes` of reads are held; false after `timeout`.
  bool WaitForHeldBytes(uint64_t bytes, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return held_bytes_ >= bytes; });
  }
  uint64_t held_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_bytes_;
  }

  std::string name() const override { return "readgate(" + inner_->name() + ")"; }
  uint32_t logical_block_bytes() const override { return inner_->logical_block_bytes(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint32_t queue_depth() const override { return inner_->queue_depth(); }
  uint64_t max_request_bytes() const override { return inner_->max_request_bytes(); }
  bool supports_trim() const override { return inner_->supports_trim(); }
  Status Submit(std::span<IoRequest* const> batch) override {
    std::vector<IoRequest*> pass;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (IoRequest* r : batch) {
        if (r->op == IoOp::kRead && r->offset + r->length > gate_) {
          held_.push_back({r, std::this_thread::get_id()});
          held_bytes_ += r->length;
        } else {
          pass.push_back(r);
        }
      }
    }
    cv_.notify_all();
    return pass.empty() ? Status::OK() : inner_->Submit(pass);
  }
  Result<size_t> Poll(size_t min_complete) override {
    size_t done = 0;
    for (;;) {
      std::vector<IoRequest*> release;
      bool mine_held = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < held_.size();) {
          if (held_[i].thread != std::this_thread::get_id()) {
            ++i;
          } else if (held_[i].req->offset + held_[i].req->length <= gate_) {
            held_bytes_ -= held_[i].req->length;
            release.push_back(held_[i].req);
            held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
          } else {
            mine_held = true;
            ++i;
          }
        }
      }
      if (!release.empty()) FOLIO_RETURN_IF_ERROR(inner_->Submit(release));
      const bool inner_busy = inner_->InFlight() > 0;
      Result<size_t> n = inner_->Poll(done >= min_complete || !inner_busy ? 0 : 1);
      if (!n.ok()) return n.status();
      done += *n;
      if (done >= min_complete || (!mine_held && inner_->InFlight() == 0)) return done;
      if (mine_held && inner_->InFlight() == 0) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(20));
      }
    }
  }
  size_t InFlight() const override {
    size_t n = inner_->InFlight();
    std::lock_guard<std::mutex> lock(mu_);
    for (const Held& h : held_) n += h.thread == std::this_thread::get_id();
    return n;
  }
  DeviceStatsSnapshot stats() const override { return inner_->stats(); }
  void ResetStats() override { inner_->ResetStats(); }

 private:
  struct Held {
    IoRequest* req;
    std::thread::id thread;
  };
  BlockDevice* const inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t gate_;                // GUARDED_BY(mu_)
  std::vector<Held> held_;       // GUARDED_BY(mu_)
  uint64_t held_bytes_ = 0;      // GUARDED_BY(mu_)
};

}  // namespace folio::cache_test
