// Test helpers of the store layer: seeds, deterministic object contents, temp directories.
//
// Thread safety: independent values; a TempDir belongs to one test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "base/test_seed.h"
#include "fs/store/object_key.h"

namespace folio::store::test {

// Deterministic content of an object: a function of (key, generation) only.
inline std::string ObjectBytes(const ObjectKey& key, uint64_t generation = 0) {
  std::string out(key.bytes, '\0');
  std::mt19937_64 rng(key.id * 1000003 + key.index * 7919 + generation * 31 +
                      static_cast<uint64_t>(key.kind));
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&out[i], &v, 8);
  }
  for (; i < out.size(); ++i) out[i] = static_cast<char>(rng());
  return out;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/folio-store-test-XXXXXX";
    char* p = ::mkdtemp(tmpl);
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace folio::store::test
