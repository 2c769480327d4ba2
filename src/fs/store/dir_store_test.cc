#include "fs/store/dir_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "fs/store/block_store_suite.h"
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

  test::TempDir dir_;
  std::string root_;
  std::unique_ptr<BlockStore> store_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(DirStoreTest, ObjectsAreFilesNamedByKeyHoldingTheirEncoding) {
  ObjectKey k = ObjectKey::Block(1234, 2, 100000);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  EXPECT_TRUE(std::filesystem::exists(root_ + "/vol/chunks/0/1/1234_2_100000"));
  EXPECT_EQ(std::filesystem::file_size(store_->ObjectPath(k)), EncodedBytes(k.bytes));
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

// A put replaces atomically: the temp file of a crashed put is never listed nor read.
// A put is durable at once (an fsync of its file and of its directory) or, deferred, only
// renamed into place: a kSync then fsyncs each object's file and each directory once.
TEST_F(DirStoreTest, DeferredPutsAreReadableAndASyncFsyncsEachFileAndDirectoryOnce) {
  ASSERT_TRUE(store_->DefersSync());
  const ObjectKey first = ObjectKey::Block(7000, 0, 5000);
  const std::string first_data = test::ObjectBytes(first);
  ASSERT_TRUE(store_->Put(first, first_data.data()).ok());  // makes chunks/0/7 (fsynced)
  uint64_t fsyncs = store_->stats().fsyncs;
  const ObjectKey durable = ObjectKey::Block(7001, 0, 5000);
  const std::string durable_data = test::ObjectBytes(durable);
  ASSERT_TRUE(store_->Put(durable, durable_data.data()).ok());
  EXPECT_EQ(store_->stats().fsyncs - fsyncs, 2u);  // its file and its directory
  fsyncs = store_->stats().fsyncs;
  std::vector<ObjectKey> keys;
  std::vector<std::string> datas;
  for (uint32_t b = 0; b < 3; ++b) {
    keys.push_back(ObjectKey::Block(7002, b, 3 * 65536));
    datas.push_back(test::ObjectBytes(keys.back()));
  }
  for (uint32_t b = 0; b < 3; ++b) {
    StoreRequest req;
    req.ResetPut(keys[b], datas[b].data());
    req.put_sync = PutSync::kDeferred;
    ASSERT_TRUE(store_->SubmitAndWait(&req).ok());
  }
  EXPECT_EQ(store_->stats().fsyncs - fsyncs, 0u);
  for (uint32_t b = 0; b < 3; ++b) {
    std::string got(keys[b].bytes, '\0');
    ASSERT_TRUE(store_->Get(keys[b], 0, keys[b].bytes, got.data()).ok());
    EXPECT_EQ(got, datas[b]);
  }
  ASSERT_TRUE(store_->Sync(keys).ok());
  EXPECT_EQ(store_->stats().fsyncs - fsyncs, 4u);  // three files, one directory
  EXPECT_EQ(store_->stats().sync.requests, 1u);
  const ObjectKey missing = ObjectKey::Block(7003, 0, 100);
  EXPECT_TRUE(store_->Sync(std::span<const ObjectKey>(&missing, 1)).IsNotFound());
}

// A put writes the whole 4 KiB blocks of its encoding with O_DIRECT and the short rest through
// the page cache (where the file system takes O_DIRECT, as ext4 and tmpfs do): every size
// around the block and sector boundaries reads back whole, ranged and after a sync, and the
// file holds exactly the encoding.
TEST_F(DirStoreTest, PutsWriteWholeBlocksDirectAndTheRestBuffered) {
  const uint64_t sizes[] = {1,     4091,  4092,          4093,           8184,     8185,
                            12276, 65536, 4092 * 16 + 7, (1 << 20) + 3, 4 << 20};
  uint64_t expect_direct = 0;
  uint32_t index = 0;
  for (uint64_t bytes : sizes) {
    SCOPED_TRACE(bytes);
    const ObjectKey k = ObjectKey::Block(8000, index++, bytes);
    const std::string data = test::ObjectBytes(k);
    StoreRequest req;
    req.ResetPut(k, data.data());
    req.put_sync = PutSync::kDeferred;
    ASSERT_TRUE(store_->SubmitAndWait(&req).ok());
    expect_direct += EncodedBytes(bytes) / 4096 * 4096;
    EXPECT_EQ(std::filesystem::file_size(store_->ObjectPath(k)), EncodedBytes(bytes));
    std::string got(bytes, '\0');
    ASSERT_TRUE(store_->Get(k, 0, bytes, got.data()).ok());
    EXPECT_EQ(got, data);
    const uint64_t off = bytes / 3, len = std::min<uint64_t>(bytes - off, 5000);
    std::string part(len, '\0');
    ASSERT_TRUE(store_->Get(k, off, len, part.data()).ok());
    EXPECT_EQ(part, data.substr(off, len));
    ASSERT_TRUE(store_->Sync(std::span<const ObjectKey>(&k, 1)).ok());
    ASSERT_TRUE(store_->Get(k, 0, bytes, got.data()).ok());
    EXPECT_EQ(got, data);
  }
  EXPECT_EQ(store_->stats().direct_bytes_written, expect_direct);
  EXPECT_GT(expect_direct, 5u << 20);
  EXPECT_EQ(store_->stats().checksum_failures, 0u);
}

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

BlockStoreFactory DirFactory() {
  BlockStoreFactory f;
  f.name = "Dir";
  f.make = [](const std::string& dir, const std::string& prefix,
              const StoreOptions& options) -> Result<std::unique_ptr<BlockStore>> {
    FOLIO_RETURN_IF_ERROR(FormatDirStore(dir + "/store", prefix, FormatOptions{}));
    return OpenDirStore(dir + "/store", options);
  };
  f.flip = [](BlockStore& store, const ObjectKey& key, uint64_t offset) -> Status {
    int fd = ::open(store.ObjectPath(key).c_str(), O_RDWR);
    if (fd < 0) return Status::FromErrno(errno, store.ObjectPath(key));
    char c = 0;
    Status s = ::pread(fd, &c, 1, offset) == 1 ? Status::OK() : Status::IOError("pread");
    c ^= 0x20;
    if (s.ok() && ::pwrite(fd, &c, 1, offset) != 1) s = Status::IOError("pwrite");
    ::close(fd);
    return s;
  };
  return f;
}

INSTANTIATE_TEST_SUITE_P(Dir, BlockStoreTest, testing::Values(DirFactory()), StoreFactoryName);

TEST(StoreUrlTest, ParsesDirUrlsAndRejectsOthers) {
  Result<StoreUrl> u = ParseStoreUrl("dir:/data/x/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->target, "/data/x");
  for (const char* bad : {"dir:", "/data/x", "s3://b", "dirx:/a", "rados:", "rados:p?x=1",
                          "rados:p?timeout=0", "rados:p?conf="}) {
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
