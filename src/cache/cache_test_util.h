// Test helpers for the page cache: a cache over a fault device over a memory device, a device
// whose writes can be held back (GateDevice), one whose Submit of reads past an offset blocks
// (ReadGateDevice), and deterministic data patterns.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/test_seed.h"
#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "folio/page_cache.h"
#include "io/io_test_util.h"

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
class GateDevice final : public io_test::ForwardingDevice {
 public:
  explicit GateDevice(BlockDevice* inner) : ForwardingDevice(inner) {}
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

  std::string name() const override { return "gate(" + forward_to()->name() + ")"; }
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
    return forward_to()->Submit(batch);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;  // GUARDED_BY(mu_)
  int blocked_ = 0;   // GUARDED_BY(mu_)
};

// A device whose Submit of a batch with reads reaching at or past its gate (a byte offset)
// blocks until the gate moves past them, as a device that executes its requests inside Submit
// (a QueuedDevice such as Folio FS's InodeDevice, whose readahead window is a batch of store
// gets) takes the whole round trip there. Readahead in flight for as long as the test wants,
// without timing.
class ReadGateDevice final : public io_test::ForwardingDevice {
 public:
  ReadGateDevice(BlockDevice* inner, uint64_t gate)
      : ForwardingDevice(inner), gate_(gate) {}
  void MoveGate(uint64_t gate) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_ = gate;
    }
    cv_.notify_all();
  }
  // Waits until Submits hold at least `bytes` of reads; false after `timeout`.
  bool WaitForHeldBytes(uint64_t bytes, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return held_bytes_ >= bytes; });
  }
  uint64_t held_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_bytes_;
  }

  std::string name() const override { return "readgate(" + forward_to()->name() + ")"; }
  Status Submit(std::span<IoRequest* const> batch) override {
    uint64_t end = 0, bytes = 0;
    for (const IoRequest* r : batch) {
      if (r->op != IoOp::kRead) continue;
      end = std::max(end, r->offset + r->length);
      bytes += r->length;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (end > gate_) {
      held_bytes_ += bytes;
      cv_.notify_all();
      cv_.wait(lock, [&] { return end <= gate_; });
      held_bytes_ -= bytes;
    }
    lock.unlock();
    return forward_to()->Submit(batch);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t gate_;            // GUARDED_BY(mu_)
  uint64_t held_bytes_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace folio::cache_test
