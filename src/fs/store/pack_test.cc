#include "fs/store/pack.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>

#include "fs/store/dir_store.h"
#include "fs/store/store_test_util.h"

namespace folio::store {
namespace {

TEST(PackFormatTest, BuildWalkAndReadBack) {
  PackBuilder b;
  std::vector<std::string> files = {"a", std::string(5000, 'x'), "hello world"};
  std::vector<uint32_t> offs;
  for (const auto& f : files) offs.push_back(b.Add(f));
  EXPECT_EQ(offs[0], kPackHeaderBytes + kPackEntryHeaderBytes);
  EXPECT_EQ(offs[1], offs[0] + 1 + kPackEntryHeaderBytes);
  std::string pack = b.Finish(77);
  EXPECT_EQ(pack.size(), b.bytes());
  EXPECT_EQ(pack.size(), 32u + 3 * 8 + 1 + 5000 + 11);
  std::vector<std::string> seen;
  ASSERT_TRUE(WalkPack(pack, 77, "p", [&](const PackEntry& e, std::string_view d) {
                EXPECT_EQ(e.object_off, offs[seen.size()]);
                seen.emplace_back(d);
              }).ok());
  EXPECT_EQ(seen, files);
  // Another id, a flipped byte anywhere, a truncated pack: Corruption.
  EXPECT_EQ(WalkPack(pack, 78, "p", nullptr).code(), StatusCode::kCorruption);
  for (size_t at : {size_t{3}, size_t{13}, size_t{33}, size_t{45}, pack.size() - 1}) {
    std::string bad = pack;
    bad[at] ^= 1;
    EXPECT_EQ(WalkPack(bad, 77, "p", nullptr).code(), StatusCode::kCorruption) << at;
  }
  EXPECT_EQ(WalkPack(pack.substr(0, pack.size() - 1), 77, "p", nullptr).code(),
            StatusCode::kCorruption);
  // One entry verifies alone from [object_off - 8, object_off + len).
  std::string_view entry = std::string_view(pack).substr(offs[2] - 8, 8 + files[2].size());
  EXPECT_TRUE(VerifyPackedEntry(entry, 11, offs[2], "p").ok());
  EXPECT_EQ(VerifyPackedEntry(entry.substr(0, 18), 10, offs[2], "p").code(),
            StatusCode::kCorruption);
}

TEST(PackFormatTest, CopyLiveEntriesCompacts) {
  PackBuilder b;
  std::vector<uint32_t> offs;
  for (int i = 0; i < 10; ++i) offs.push_back(b.Add(std::string(100 + i, 'a' + i)));
  std::string pack = b.Finish(5);
  PackBuilder into;
  std::vector<std::pair<uint32_t, uint32_t>> moved;
  ASSERT_TRUE(CopyLiveEntries(pack, 5, "p", [&](uint32_t off) { return off == offs[3] || off == offs[8]; },
                              &into, &moved)
                  .ok());
  ASSERT_EQ(moved.size(), 2u);
  std::string fresh = into.Finish(6);
  std::vector<std::string> seen;
  ASSERT_TRUE(WalkPack(fresh, 6, "q", [&](const PackEntry&, std::string_view d) { seen.emplace_back(d); }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{std::string(103, 'd'), std::string(108, 'i')}));
  EXPECT_EQ(moved[0].first, offs[3]);
  EXPECT_EQ(fresh.substr(moved[1].second, 108), std::string(108, 'i'));
  pack[offs[5]] ^= 1;  // a damaged pack copies nothing
  PackBuilder none;
  moved.clear();
  EXPECT_EQ(CopyLiveEntries(pack, 5, "p", [](uint32_t) { return true; }, &none, &moved).code(),
            StatusCode::kCorruption);
  EXPECT_TRUE(none.empty());
}

class PackWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FormatDirStore(dir_.path(), "v", FormatOptions{}).ok());
    StoreOptions o;
    o.prefix = "v";
    auto s = OpenDirStore(dir_.path(), o);
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }
  PackIdFn Ids() {
    return [this]() -> Result<uint64_t> { return next_id_.fetch_add(1); };
  }
  test::TempDir dir_;
  std::unique_ptr<BlockStore> store_;
  std::atomic<uint64_t> next_id_{100};
};

// Seeded: files of random sizes go into packs no larger than the limit; every done reports a
// location from which ReadPacked returns the file's bytes; Flush makes all of them durable.
TEST_F(PackWriterTest, FilesLandInBoundedPacksAndReadBack) {
  uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  PackWriterOptions opt;
  opt.pack_bytes_max = 256 << 10;
  opt.flush_after_ms = 60000;
  PackWriter w(store_.get(), opt, Ids());
  std::mutex mu;
  std::map<int, PackedLocation> where;
  std::vector<std::string> files;
  for (int i = 0; i < 300; ++i) {
    std::string f(1 + rng() % 20000, '\0');
    for (auto& c : f) c = static_cast<char>(rng());
    files.push_back(f);
    w.Add(f, [&, i](const Status& s, const PackedLocation& loc) {
      ASSERT_TRUE(s.ok()) << s.ToString();
      std::lock_guard<std::mutex> lock(mu);
      where[i] = loc;
    });
  }
  ASSERT_TRUE(w.Flush().ok());
  ASSERT_EQ(where.size(), files.size());
  for (auto& [i, loc] : where) {
    EXPECT_LE(loc.pack_bytes, opt.pack_bytes_max);
    std::string out(loc.len, '\0');
    ASSERT_TRUE(ReadPacked(store_.get(), loc.pack_id, loc.pack_bytes, loc.object_off, loc.len,
                           out.data())
                    .ok());
    ASSERT_EQ(out, files[i]) << "file " << i;
  }
  PackWriterStats st = w.stats();
  EXPECT_EQ(st.files, 300u);
  EXPECT_GT(st.sealed_full, 5u);
  EXPECT_EQ(st.sealed_flush, 1u);
  auto packs = store_->List(ObjectKind::kPack);
  ASSERT_TRUE(packs.ok());
  EXPECT_EQ(packs->size(), st.packs);
  // Every stored pack walks clean without the metadata.
  for (const ObjectInfo& info : *packs) {
    std::string bytes(info.key.bytes, '\0');
    ASSERT_TRUE(store_->Get(info.key, 0, info.key.bytes, bytes.data()).ok());
    EXPECT_TRUE(WalkPack(bytes, info.key.id, "pack", nullptr).ok());
  }
}

TEST_F(PackWriterTest, TimerSealsAnIdlePack) {
  PackWriterOptions opt;
  opt.flush_after_ms = 20;
  PackWriter w(store_.get(), opt, Ids());
  std::atomic<bool> done{false};
  w.Add("tiny", [&](const Status& s, const PackedLocation&) {
    EXPECT_TRUE(s.ok());
    done = true;
  });
  while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(w.stats().sealed_timer, 1u);
}

TEST_F(PackWriterTest, IdFailureFailsTheEntriesAndFlush) {
  PackWriter w(store_.get(), PackWriterOptions{}, [] () -> Result<uint64_t> {
    return Status::IOError("meta down");
  });
  Status got;
  w.Add("x", [&](const Status& s, const PackedLocation&) { got = s; });
  Status f = w.Flush();
  EXPECT_EQ(f.code(), StatusCode::kIOError);
  EXPECT_EQ(got.code(), StatusCode::kIOError);
  EXPECT_TRUE(w.Flush().ok());  // the error was reported once
}

TEST_F(PackWriterTest, ReadPackedRejectsImpossibleLocationsAndCorruption) {
  PackWriter w(store_.get(), PackWriterOptions{}, Ids());
  PackedLocation loc;
  w.Add(std::string(3000, 'q'), [&](const Status&, const PackedLocation& l) { loc = l; });
  ASSERT_TRUE(w.Flush().ok());
  std::string out(3000, '\0');
  EXPECT_EQ(ReadPacked(store_.get(), loc.pack_id, loc.pack_bytes, 8, 10, out.data()).code(),
            StatusCode::kCorruption);
  // A slice that records the wrong length.
  EXPECT_EQ(ReadPacked(store_.get(), loc.pack_id, loc.pack_bytes, loc.object_off, 2000, out.data())
                .code(),
            StatusCode::kCorruption);
  ASSERT_TRUE(ReadPacked(store_.get(), loc.pack_id, loc.pack_bytes, loc.object_off, 3000, out.data())
                  .ok());
  EXPECT_EQ(out, std::string(3000, 'q'));
}

}  // namespace
}  // namespace folio::store
