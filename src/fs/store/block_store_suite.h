// The BlockStore conformance suite's fixture, parameterized by store: every store runs the same
// TEST_Ps (block_store_suite_test.cc: puts, ranged gets, deletes, lists, checksums on every
// read, many requests in flight with chained callbacks, Close, two volumes side by side) by
// instantiating BlockStoreTest with its factory:
//   dir_store_test.cc:   INSTANTIATE_TEST_SUITE_P(Dir, BlockStoreTest, ...DirFactory()...)
//   rados_store_test.cc: INSTANTIATE_TEST_SUITE_P(Rados, BlockStoreTest, ...RadosFactory()...)
//
// Thread safety: a fixture is used by its test's threads as each test says.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fs/store/block_store.h"
#include "fs/store/store_test_util.h"

namespace folio::store {

struct BlockStoreFactory {
  std::string name;  // gtest parameter name
  // Non-empty: skip (the store's server is not available and servers are optional).
  std::function<std::string()> skip;
  // A formatted, empty store for volume `prefix`; `dir` is the test's temp directory.
  std::function<Result<std::unique_ptr<BlockStore>>(const std::string& dir,
                                                    const std::string& prefix,
                                                    const StoreOptions& options)>
      make;
  // Flips one bit of the stored encoding of `key` at encoded_offset (damage, behind the
  // store's back).
  std::function<Status(BlockStore& store, const ObjectKey& key, uint64_t encoded_offset)> flip;
};

inline void PrintTo(const BlockStoreFactory& f, std::ostream* os) { *os << f.name; }
inline std::string StoreFactoryName(const testing::TestParamInfo<BlockStoreFactory>& info) {
  return info.param.name;
}

class BlockStoreTest : public testing::TestWithParam<BlockStoreFactory> {
 protected:
  void SetUp() override {
    if (GetParam().skip) {
      const std::string why = GetParam().skip();
      if (!why.empty()) GTEST_SKIP() << why;
    }
    ASSERT_FALSE(dir_.path().empty());
    prefix_ = "v" + std::to_string(::getpid()) + "-" +
              testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : prefix_) {
      if (c == '/') c = '-';
    }
    auto store = Make(prefix_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  Result<std::unique_ptr<BlockStore>> Make(const std::string& prefix) {
    StoreOptions options;
    options.prefix = prefix;
    options.workers = 4;
    options.queue_depth_max = 16;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    return GetParam().make(dir_.path(), prefix, options);
  }

  test::TempDir dir_;
  std::string prefix_;
  std::unique_ptr<BlockStore> store_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

}  // namespace folio::store
