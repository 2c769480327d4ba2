#include "fs/store/dir_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "fs/store/sector_codec.h"
#include "fs/store/store_test_util.h"
#include "fs/store/store_url.h"

namespace folio::store {
namespace {

class DirStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    root_ = dir_.path() + "/store";
    ASSERT_TRUE(FormatDirStore(root_, "vol", FormatOptions{}).ok());
    StoreOptions options;
    options.prefix = "vol";
    options.workers = 4;
    options.queue_depth_max = 16;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    Result<std::unique_ptr<BlockStore>> store = OpenDirStore(root_, options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void FlipByte(const ObjectKey& key, uint64_t encoded_offset) {
    int fd = ::open(store_->ObjectPath(key).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, encoded_offset), 1);
    c ^= 0x20;
    ASSERT_EQ(::pwrite(fd, &c, 1, encoded_offset), 1);
    ::close(fd);
  }

  test::TempDir dir_;
  std::string root_;
  std::unique_ptr<BlockStore> store_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(DirStoreTest, PutGetRangesDeleteAndList) {
  ObjectKey k = ObjectKey::Block(1234, 2, 100000);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  EXPECT_TRUE(std::filesystem::exists(root_ + "/vol/chunks/0/1/1234_2_100000"));
  EXPECT_EQ(std::filesystem::file_size(store_->ObjectPath(k)), EncodedBytes(k.bytes));
  for (auto [off, len] : {std::pair<uint64_t, uint64_t>{0, 100000}, {0, 1}, {4091, 2},
                          {99999, 1}, {8192, 4096}, {50000, 30000}}) {
    std::string out(len, '\0');
    ASSERT_TRUE(store_->Get(k, off, len, out.data()).ok());
    EXPECT_EQ(out, data.substr(off, len)) << off << "+" << len;
  }
  ObjectKey p = ObjectKey::Pack(9, 5000);
  std::string pdata = test::ObjectBytes(p);
  ASSERT_TRUE(store_->Put(p, pdata.data()).ok());

  Result<std::vector<ObjectInfo>> blocks = store_->List(ObjectKind::kBlock);
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].key, k);
  EXPECT_EQ((*blocks)[0].stored_bytes, EncodedBytes(k.bytes));
  Result<std::vector<ObjectInfo>> packs = store_->List(ObjectKind::kPack);
  ASSERT_TRUE(packs.ok());
  ASSERT_EQ(packs->size(), 1u);
  EXPECT_EQ((*packs)[0].key, p);

  ASSERT_TRUE(store_->Delete(k).ok());
  EXPECT_EQ(store_->Delete(k).code(), StatusCode::kNotFound);
  std::string out(10, '\0');
  Status s = store_->Get(k, 0, 10, out.data());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("1234_2_100000"), std::string_view::npos) << s.ToString();
  StoreStatsSnapshot st = store_->stats();
  EXPECT_EQ(st.put.requests, 2u);
  EXPECT_EQ(st.put.bytes, 105000u);
  EXPECT_EQ(st.get.requests, 7u);
  EXPECT_EQ(st.get.errors, 1u);
  EXPECT_EQ(st.del.requests, 2u);
  EXPECT_EQ(st.checksum_failures, 0u);
}

TEST_F(DirStoreTest, InvalidRequestsCompleteWithInvalidArgument) {
  std::string out(10, '\0');
  EXPECT_EQ(store_->Get(ObjectKey::Block(1, 0, 100), 95, 10, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get(ObjectKey::Block(0, 0, 100), 0, 10, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Put(ObjectKey::Block(1, 0, 100), nullptr).code(), StatusCode::kInvalidArgument);
}

// A byte flipped in the file: the ranged get covering it fails with Corruption naming the
// file, is counted and logged; ranges elsewhere still read.
TEST_F(DirStoreTest, FlippedByteIsCorruptionOnlyForRangesCoveringIt) {
  ObjectKey k = ObjectKey::Block(77, 0, 65536);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  FlipByte(k, 3 * kSectorBytes + 100);  // sector 3 = logical [12276, 16368)
  std::string out(4096, '\0');
  ASSERT_TRUE(store_->Get(k, 0, 4096, out.data()).ok());
  EXPECT_EQ(out, data.substr(0, 4096));
  Status s = store_->Get(k, 12276 + 50, 100, out.data());
  ASSERT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find(store_->ObjectPath(k)), std::string_view::npos) << s.ToString();
  EXPECT_NE(s.message().find("sector 3"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(s.ToErrno(), EIO);
  EXPECT_EQ(store_->stats().checksum_failures, 1u);
  std::lock_guard<std::mutex> lock(log_mu_);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("77_0_65536"), std::string::npos);
}

TEST_F(DirStoreTest, TruncatedOrRenamedObjectsDoNotVerify) {
  ObjectKey k = ObjectKey::Block(5, 0, 20000);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  std::string out(20000, '\0');
  // Another object's file under this name: same size, other seed.
  ObjectKey other = ObjectKey::Block(5, 1, 20000);
  ASSERT_TRUE(store_->Put(other, data.data()).ok());
  std::filesystem::copy_file(store_->ObjectPath(other), store_->ObjectPath(k),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(store_->Get(k, 0, 20000, out.data()).code(), StatusCode::kCorruption);
  std::filesystem::resize_file(store_->ObjectPath(other), 10000);
  EXPECT_EQ(store_->Get(other, 0, 20000, out.data()).code(), StatusCode::kCorruption);
  EXPECT_TRUE(store_->Get(other, 0, 4000, out.data()).ok());
  EXPECT_EQ(store_->stats().checksum_failures, 2u);
}

// Many requests in flight from several threads with callbacks; callbacks chain a get after
// each put (Submit from inside done), and everything reads back.
TEST_F(DirStoreTest, ManyAsyncRequestsWithChainedCallbacks) {
  constexpr int kObjects = 200;
  struct Op {
    StoreRequest put, get;
    std::string data, out;
    BlockStore* store;
    std::atomic<int>* remaining;
  };
  std::vector<Op> ops(kObjects);
  std::atomic<int> remaining{kObjects};
  for (int i = 0; i < kObjects; ++i) {
    Op& op = ops[i];
    ObjectKey k = ObjectKey::Block(1000 + i, i % 3, 1 + (i * 7919) % 70000);
    op.data = test::ObjectBytes(k);
    op.out.assign(k.bytes, '\0');
    op.store = store_.get();
    op.remaining = &remaining;
    op.put.ResetPut(k, op.data.data());
    op.put.ctx = &op;
    op.put.done = [](StoreRequest* r) {
      Op* o = static_cast<Op*>(r->ctx);
      if (!r->status.ok()) {
        ADD_FAILURE() << r->status.ToString();
        o->remaining->fetch_sub(1);
        return;
      }
      o->get.ResetGet(r->key, 0, r->key.bytes, o->out.data());
      o->get.ctx = o;
      o->get.done = [](StoreRequest* g) {
        Op* og = static_cast<Op*>(g->ctx);
        EXPECT_TRUE(g->status.ok()) << g->status.ToString();
        og->remaining->fetch_sub(1);
      };
      o->store->Submit(&o->get);
    };
  }
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = t; i < kObjects; i += 4) store_->Submit(&ops[i].put);
    });
  }
  for (auto& t : submitters) t.join();
  while (remaining.load() > 0) std::this_thread::yield();
  for (const Op& op : ops) EXPECT_EQ(op.out, op.data);
  StoreStatsSnapshot st = store_->stats();
  EXPECT_EQ(st.put.requests, static_cast<uint64_t>(kObjects));
  EXPECT_EQ(st.get.requests, static_cast<uint64_t>(kObjects));
  EXPECT_GT(st.in_flight_max, 1u);
  EXPECT_EQ(st.in_flight, 0u);
  EXPECT_GT(st.put.latency_ns.count, 0u);
}

// A put replaces atomically: the temp file of a crashed put is never listed nor read.
TEST_F(DirStoreTest, TempFilesAreNeverObjects) {
  ObjectKey k = ObjectKey::Block(3, 0, 100);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  std::ofstream(root_ + "/vol/chunks/0/0/.tmp.4_0_100.1.1") << "partial";
  std::ofstream(root_ + "/vol/chunks/0/0/stray") << "x";
  Result<std::vector<ObjectInfo>> blocks = store_->List(ObjectKind::kBlock);
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->size(), 1u);
  EXPECT_EQ((*blocks)[0].key, k);
}

TEST_F(DirStoreTest, CloseCompletesQueuedRequestsThenRefusesNewOnes) {
  std::vector<StoreRequest> reqs(50);
  std::vector<std::string> datas(50);
  for (int i = 0; i < 50; ++i) {
    ObjectKey k = ObjectKey::Block(500 + i, 0, 4096);
    datas[i] = test::ObjectBytes(k);
    reqs[i].ResetPut(k, datas[i].data());
    store_->Submit(&reqs[i]);
  }
  store_->Close();
  for (auto& r : reqs) {
    EXPECT_TRUE(r.completed.load());
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  }
  std::string out(10, '\0');
  EXPECT_EQ(store_->Get(ObjectKey::Block(500, 0, 4096), 0, 10, out.data()).code(),
            StatusCode::kIOError);
}

TEST(DirStoreFormatTest, FormatOpenAndErrors) {
  test::TempDir dir;
  std::string root = dir.path() + "/a/b";
  StoreOptions options;
  options.prefix = "v1";
  Result<std::unique_ptr<BlockStore>> none = OpenDirStore(root, options);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(FormatDirStore(root, "v1", FormatOptions{}).ok());
  Status again = FormatDirStore(root, "v1", FormatOptions{});
  EXPECT_EQ(again.code(), StatusCode::kExists);
  // A second volume in the same directory.
  ASSERT_TRUE(FormatDirStore(root, "v2", FormatOptions{}).ok());
  Result<std::unique_ptr<BlockStore>> s1 = OpenDirStore(root, options);
  ASSERT_TRUE(s1.ok()) << s1.status().ToString();
  ObjectKey k = ObjectKey::Block(1, 0, 10);
  ASSERT_TRUE((*s1)->Put(k, "0123456789").ok());
  options.prefix = "v2";
  Result<std::unique_ptr<BlockStore>> s2 = OpenDirStore(root, options);
  ASSERT_TRUE(s2.ok());
  char out[10];
  EXPECT_EQ((*s2)->Get(k, 0, 10, out).code(), StatusCode::kNotFound);
  (*s1)->Close();
  // Forced format drops the old objects.
  ASSERT_TRUE(FormatDirStore(root, "v1", FormatOptions{.force = true}).ok());
  options.prefix = "v1";
  s1 = OpenDirStore(root, options);
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ((*s1)->Get(k, 0, 10, out).code(), StatusCode::kNotFound);
  // A newer or foreign descriptor.
  std::ofstream(root + "/v2/store.json") << R"({"format":"folio-dir-store","version":9,"prefix":"v2"})";
  options.prefix = "v2";
  EXPECT_EQ(OpenDirStore(root, options).status().code(), StatusCode::kNotSupported);
  std::ofstream(root + "/v2/store.json") << "garbage";
  EXPECT_EQ(OpenDirStore(root, options).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(OpenDirStore(dir.path() + "/a/b/v1/store.json", options).status().code(),
            StatusCode::kInvalidArgument);
  options.prefix = "bad/prefix";
  EXPECT_EQ(OpenDirStore(root, options).status().code(), StatusCode::kInvalidArgument);
}

TEST(StoreUrlTest, ParsesDirUrlsAndRejectsOthers) {
  Result<StoreUrl> u = ParseStoreUrl("dir:/data/x/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->target, "/data/x");
  for (const char* bad : {"dir:", "/data/x", "s3://b", "dirx:/a"}) {
    Result<StoreUrl> b = ParseStoreUrl(bad);
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  test::TempDir dir;
  std::string url = "dir:" + dir.path();
  ASSERT_TRUE(FormatBlockStore(url, "v", FormatOptions{}, nullptr).ok());
  StoreOptions options;
  options.prefix = "v";
  Result<std::unique_ptr<BlockStore>> s = OpenBlockStore(url, options, nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->url(), url);
}

}  // namespace
}  // namespace folio::store
