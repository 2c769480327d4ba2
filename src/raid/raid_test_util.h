// Test helpers for RaidDevice tests: memory members behind fault-injecting wrappers that the
// test keeps (so an array can be stopped, crashed and assembled again over the same bytes),
// aligned buffers, and a reference model of the array's contents.
//
// Thread safety: one test thread owns a fixture.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/test_seed.h"
#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "folio/raid.h"

namespace folio::raid_test {

// Where the data area of every member starts (RaidDevice::Create's metadata before it).
inline constexpr uint64_t kDataOffset = 1 << 20;
// The members of most tests: the metadata and 512 KiB of data.
inline constexpr uint64_t kMemberBytes = kDataOffset + (512 << 10);

// Members: memory devices owned by the fixture, handed to arrays through FaultDevice wrappers
// (owned by the array); faults() reaches the wrapper of the current array.
class Members {
 public:
  Members(uint32_t count, uint64_t bytes) {
    for (uint32_t i = 0; i < count; ++i) Add(bytes);
  }
  uint32_t Add(uint64_t bytes) {
    MemDeviceOptions o;
    o.size_bytes = bytes;
    auto dev = NewMemDevice(o);
    EXPECT_TRUE(dev.ok());
    mem_.push_back(std::move(dev).value());
    faults_.push_back(nullptr);
    return static_cast<uint32_t>(mem_.size() - 1);
  }
  std::string Name(uint32_t i) const { return "m" + std::to_string(i); }
  RaidMember Wrap(uint32_t i) {
    auto f = FaultDevice::WrapUnowned(mem_[i].get());
    faults_[i] = f.get();
    return {Name(i), std::move(f)};
  }
  std::vector<RaidMember> WrapAll(const std::vector<uint32_t>& which) {
    std::vector<RaidMember> out;
    for (uint32_t i : which) out.push_back(Wrap(i));
    return out;
  }
  std::vector<RaidMember> WrapFirst(uint32_t n) {
    std::vector<uint32_t> which;
    for (uint32_t i = 0; i < n; ++i) which.push_back(i);
    return WrapAll(which);
  }
  FaultDevice* faults(uint32_t i) { return faults_[i]; }
  BlockDevice* raw(uint32_t i) { return mem_[i].get(); }

 private:
  std::vector<std::unique_ptr<BlockDevice>> mem_;
  std::vector<FaultDevice*> faults_;
};

// Synchronous aligned I/O on any device, for tests.
inline Status WriteBytes(BlockDevice* dev, uint64_t off, const char* data, uint64_t len) {
  AlignedBuffer b(len);
  std::memcpy(b.data(), data, len);
  return dev->Write(off, b.data(), len);
}

inline Status ReadBytes(BlockDevice* dev, uint64_t off, char* out, uint64_t len) {
  AlignedBuffer b(len);
  Status st = dev->Read(off, b.data(), len);
  if (st.ok()) std::memcpy(out, b.data(), len);
  return st;
}

inline void Fill(std::mt19937_64& rng, char* p, size_t len) {
  for (size_t i = 0; i < len; i += 8) {
    const uint64_t v = rng();
    std::memcpy(p + i, &v, std::min<size_t>(8, len - i));
  }
}

// Fills the whole array with seeded random bytes and flushes; returns what it wrote.
inline std::vector<char> FillArray(RaidDevice* dev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> data(dev->size_bytes());
  Fill(rng, data.data(), data.size());
  EXPECT_TRUE(WriteBytes(dev, 0, data.data(), data.size()).ok());
  EXPECT_TRUE(dev->Flush().ok());
  return data;
}

}  // namespace folio::raid_test
