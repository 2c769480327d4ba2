// Test helpers for the page cache: a cache over a fault device over a memory device, and
// deterministic data patterns.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "folio/block_device.h"
#include "folio/fault_device.h"
#include "folio/page_cache.h"

namespace folio::cache_test {

// FOLIO_SEED overrides a test's default seed.
inline uint64_t SeedOr(uint64_t fallback) {
  const char* s = std::getenv("FOLIO_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 0) : fallback;
}

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

}  // namespace folio::cache_test
