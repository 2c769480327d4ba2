#include "fs/store/dev_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "folio/fault_device.h"
#include "fs/store/dev_format.h"
#include "fs/store/sector_codec.h"
#include "fs/store/store_test_util.h"
#include "fs/store/store_url.h"

namespace folio::store {
namespace {

std::unique_ptr<BlockDevice> NewMem(uint64_t bytes) {
  MemDeviceOptions o;
  o.size_bytes = bytes;
  o.logical_block_bytes = 4096;
  auto d = NewMemDevice(o);
  EXPECT_TRUE(d.ok());
  return std::move(d).value();
}

// A non-owning view of a device for a store (the test keeps the device across reopenings).
std::unique_ptr<BlockDevice> View(BlockDevice* dev) {
  std::unique_ptr<FaultDevice> view = FaultDevice::WrapUnowned(dev);
  view->SetCrashTracking(false);
  return view;
}

class DevStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { mem_ = NewMem(16 << 20); }

  std::unique_ptr<DevStore> Open(BlockDevice* dev) {
    StoreOptions o;
    o.prefix = "vol";
    o.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    auto s = OpenDevStore(View(dev), "dev:test", o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  void Format(BlockDevice* dev, uint64_t segment_bytes = 1 << 20) {
    DevFormatOptions f;
    f.segment_bytes = segment_bytes;
    ASSERT_TRUE(FormatDevStore(dev, "vol", f).ok());
  }

  std::unique_ptr<BlockDevice> mem_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(DevStoreTest, FormatRefusesWhatIsThereUnlessForced) {
  StoreOptions o;
  o.prefix = "vol";
  EXPECT_EQ(OpenDevStore(View(mem_.get()), "dev:x", o).status().code(), StatusCode::kNotFound);
  Format(mem_.get());
  Status again = FormatDevStore(mem_.get(), "other", DevFormatOptions{});
  EXPECT_EQ(again.code(), StatusCode::kExists);
  EXPECT_NE(again.message().find("'vol'"), std::string_view::npos) << again.ToString();
  o.prefix = "other";
  EXPECT_EQ(OpenDevStore(View(mem_.get()), "dev:x", o).status().code(),
            StatusCode::kInvalidArgument);
  // Something else on a device: refused, then forced.
  auto junk = NewMem(8 << 20);
  std::vector<char> bytes(4096, 'J');
  AlignedBuffer b = AllocUnits(4096);
  std::memcpy(b.data(), bytes.data(), 4096);
  ASSERT_TRUE(junk->Write(0, b.data(), 4096).ok());
  EXPECT_EQ(FormatDevStore(junk.get(), "vol", DevFormatOptions{}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(FormatDevStore(junk.get(), "vol", DevFormatOptions{.force = true}).ok());
  EXPECT_TRUE(OpenDevStore(View(junk.get()), "dev:j", StoreOptions{.prefix = "vol"}).ok());
  // Too small for three segments.
  auto tiny = NewMem(2 << 20);
  EXPECT_EQ(FormatDevStore(tiny.get(), "vol", DevFormatOptions{}).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(DevStoreTest, PutGetDeleteListAndReopen) {
  Format(mem_.get());
  std::vector<ObjectKey> keys = {ObjectKey::Block(1, 0, 100000), ObjectKey::Block(1, 1, 7),
                                 ObjectKey::Pack(2, 4096), ObjectKey::Block(3, 0, 300000)};
  {
    auto s = Open(mem_.get());
    for (const auto& k : keys) ASSERT_TRUE(s->Put(k, test::ObjectBytes(k).data()).ok());
    for (const auto& k : keys) {
      std::string want = test::ObjectBytes(k);
      std::string out(k.bytes, '\0');
      ASSERT_TRUE(s->Get(k, 0, k.bytes, out.data()).ok());
      EXPECT_EQ(out, want);
      uint64_t off = k.bytes / 3, len = std::min<uint64_t>(k.bytes - off, 5000);
      ASSERT_TRUE(s->Get(k, off, len, out.data()).ok());
      EXPECT_EQ(out.substr(0, len), want.substr(off, len));
    }
    ASSERT_TRUE(s->Delete(keys[0]).ok());
    EXPECT_EQ(s->Delete(keys[0]).code(), StatusCode::kNotFound);
    EXPECT_EQ(s->Delete(ObjectKey::Block(99, 0, 5)).code(), StatusCode::kNotFound);
    auto blocks = s->List(ObjectKind::kBlock);
    ASSERT_TRUE(blocks.ok());
    EXPECT_EQ(blocks->size(), 2u);
    EXPECT_EQ(s->dev_stats().objects, 3u);
  }
  auto s = Open(mem_.get());
  char c;
  EXPECT_EQ(s->Get(keys[0], 0, 1, &c).code(), StatusCode::kNotFound);
  for (size_t i = 1; i < keys.size(); ++i) {
    std::string out(keys[i].bytes, '\0');
    ASSERT_TRUE(s->Get(keys[i], 0, keys[i].bytes, out.data()).ok());
    EXPECT_EQ(out, test::ObjectBytes(keys[i]));
  }
  auto packs = s->List(ObjectKind::kPack);
  ASSERT_TRUE(packs.ok());
  ASSERT_EQ(packs->size(), 1u);
  EXPECT_EQ((*packs)[0].key, keys[2]);
  EXPECT_EQ(s->dev_stats().objects, 3u);
  EXPECT_GE(s->dev_stats().recovered_records, 5u);
}

// A dev: store's puts are durable when they complete (their batch was flushed): it defers
// nothing, and a kSync completes at once.
TEST_F(DevStoreTest, EveryPutIsDurableAtCompletionSoSyncIsFree) {
  Format(mem_.get());
  auto s = Open(mem_.get());
  EXPECT_FALSE(s->DefersSync());
  const ObjectKey k = ObjectKey::Block(5, 0, 9000);
  const std::string data = test::ObjectBytes(k);
  StoreRequest req;
  req.ResetPut(k, data.data());
  req.put_sync = PutSync::kDeferred;  // taken as kNow
  ASSERT_TRUE(s->SubmitAndWait(&req).ok());
  const uint64_t batches = s->dev_stats().batches;
  ASSERT_TRUE(s->Sync(std::span<const ObjectKey>(&k, 1)).ok());
  EXPECT_EQ(s->dev_stats().batches, batches);  // no write, no flush
  EXPECT_EQ(s->stats().sync.requests, 1u);
}

TEST_F(DevStoreTest, FlippedByteIsCorruptionNamingTheObject) {
  Format(mem_.get());
  auto s = Open(mem_.get());
  ObjectKey k = ObjectKey::Block(8, 2, 20000);
  ASSERT_TRUE(s->Put(k, test::ObjectBytes(k).data()).ok());
  // Find the record: the first segment's first record starts after the segment header.
  dev::Superblock sb;
  {
    AlignedBuffer b = AllocUnits(4096);
    ASSERT_TRUE(mem_->Read(0, b.data(), 4096).ok());
    auto d = dev::DecodeSuperblock(b.data());
    ASSERT_TRUE(d.ok());
    sb = *d;
  }
  bool flipped = false;
  for (uint32_t seg = 0; seg < sb.segment_count && !flipped; ++seg) {
    uint64_t data = sb.data_offset + seg * sb.segment_bytes + 2 * 4096;  // header, record header
    AlignedBuffer b = AllocUnits(4096);
    ASSERT_TRUE(mem_->Read(data, b.data(), 4096).ok());
    if (std::memcmp(b.data(), test::ObjectBytes(k).data(), 64) != 0) continue;
    b.data()[10] ^= 1;
    ASSERT_TRUE(mem_->Write(data, b.data(), 4096).ok());
    flipped = true;
  }
  ASSERT_TRUE(flipped);
  std::string out(100, '\0');
  Status st = s->Get(k, 0, 100, out.data());
  ASSERT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("8_2_20000"), std::string_view::npos) << st.ToString();
  ASSERT_TRUE(s->Get(k, 8184, 100, out.data()).ok());  // sector 2 is intact
  EXPECT_EQ(s->stats().checksum_failures, 1u);
  EXPECT_EQ(s->stats().healed, 0u);
  std::lock_guard<std::mutex> lock(log_mu_);
  EXPECT_FALSE(log_.empty());
}

// Deleting most objects and cleaning frees segments; everything left reads back, also after
// reopening; writing several times the device's size with a small live set never runs out.
TEST_F(DevStoreTest, CleaningReclaimsSpaceAndKeepsLiveObjects) {
  Format(mem_.get());  // 16 MiB, 1 MiB segments
  auto s = Open(mem_.get());
  const uint32_t segments = s->dev_stats().segments;
  std::vector<ObjectKey> live;
  uint64_t id = 1;
  for (int round = 0; round < 12; ++round) {  // ~4 x the device
    std::vector<ObjectKey> batch;
    for (int i = 0; i < 40; ++i) {
      ObjectKey k = ObjectKey::Block(id++, 0, 100000 + (i * 977) % 20000);
      ASSERT_TRUE(s->Put(k, test::ObjectBytes(k).data()).ok()) << "round " << round;
      batch.push_back(k);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (i % 10 == 0) {
        live.push_back(batch[i]);
      } else {
        ASSERT_TRUE(s->Delete(batch[i]).ok());
      }
    }
  }
  EXPECT_GT(s->dev_stats().segments_cleaned, static_cast<uint64_t>(segments));
  ASSERT_TRUE(s->Clean(0.5).ok());
  DevStoreStats ds = s->dev_stats();
  EXPECT_EQ(ds.objects, live.size());
  EXPECT_GT(ds.records_copied, 0u);
  auto check = [&](DevStore* st) {
    for (const auto& k : live) {
      std::string out(k.bytes, '\0');
      ASSERT_TRUE(st->Get(k, 0, k.bytes, out.data()).ok()) << KeyText(k);
      ASSERT_EQ(out, test::ObjectBytes(k)) << KeyText(k);
    }
    auto all = st->List(ObjectKind::kBlock);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), live.size());
  };
  check(s.get());
  s.reset();
  s = Open(mem_.get());
  check(s.get());
  EXPECT_EQ(s->dev_stats().objects, live.size());
}

TEST_F(DevStoreTest, FullStoreIsNoSpaceAndObjectsTooLargeAreRefused) {
  auto small = NewMem(6 << 20);
  Format(small.get());
  auto s = Open(small.get());
  Status last;
  uint64_t id = 1;
  for (int i = 0; i < 100 && last.ok(); ++i) {
    ObjectKey k = ObjectKey::Block(id++, 0, 200000);
    last = s->Put(k, test::ObjectBytes(k).data());
  }
  EXPECT_EQ(last.code(), StatusCode::kNoSpace) << last.ToString();
  ObjectKey big = ObjectKey::Block(1000, 0, 2 << 20);
  std::string data(big.bytes, 'b');
  EXPECT_EQ(s->Put(big, data.data()).code(), StatusCode::kInvalidArgument);
  // Deleting makes room again.
  for (uint64_t i = 1; i < id; ++i) (void)s->Delete(ObjectKey::Block(i, 0, 200000));
  ObjectKey k = ObjectKey::Block(5000, 0, 200000);
  EXPECT_TRUE(s->Put(k, test::ObjectBytes(k).data()).ok());
}

// dev:SPEC through the URL functions, with the caller's device opener (the CLI's).
TEST_F(DevStoreTest, OpensFromAUrlWithTheCallersDeviceOpener) {
  std::vector<std::string> specs;
  DeviceOpenFn open = [&](std::string_view spec) -> Result<std::unique_ptr<BlockDevice>> {
    specs.emplace_back(spec);
    if (spec != "mem:16M") return Status::NotFound(std::string(spec) + ": no such device");
    return View(mem_.get());
  };
  Result<StoreUrl> u = ParseStoreUrl("dev:raid:/a,/b,/c");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->kind, StoreUrl::Kind::kDev);
  EXPECT_EQ(u->target, "raid:/a,/b,/c");
  EXPECT_EQ(ParseStoreUrl("dev:").status().code(), StatusCode::kInvalidArgument);
  FormatOptions f;
  f.segment_bytes = 2 << 20;
  ASSERT_TRUE(FormatBlockStore("dev:mem:16M", "vol", f, open).ok());
  EXPECT_EQ(FormatBlockStore("dev:mem:16M", "vol", FormatOptions{}, open).code(),
            StatusCode::kExists);
  EXPECT_EQ(FormatBlockStore("dev:mem:16M", "vol", FormatOptions{}, nullptr).code(),
            StatusCode::kInvalidArgument);
  StoreOptions o;
  o.prefix = "vol";
  auto s = OpenBlockStore("dev:mem:16M", o, open);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->url(), "dev:mem:16M");
  ObjectKey k = ObjectKey::Block(1, 0, 1000);
  ASSERT_TRUE((*s)->Put(k, test::ObjectBytes(k).data()).ok());
  EXPECT_NE((*s)->ObjectPath(k).find("vol/chunks/0/0/1_0_1000"), std::string::npos);
  auto* dev = dynamic_cast<DevStore*>(s->get());
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->dev_stats().segment_bytes, 2u << 20);
  EXPECT_EQ(OpenBlockStore("dev:file:/nope", o, open).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(specs.back(), "file:/nope");
}

}  // namespace
}  // namespace folio::store
