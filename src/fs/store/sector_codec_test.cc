#include "fs/store/sector_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "fs/store/store_test_util.h"

namespace folio::store {
namespace {

TEST(SectorCodecTest, SizesAndRanges) {
  EXPECT_EQ(EncodedBytes(1), 5u);
  EXPECT_EQ(EncodedBytes(4092), 4096u);
  EXPECT_EQ(EncodedBytes(4093), 4096u + 5);
  EXPECT_EQ(EncodedBytes(4u << 20), (4u << 20) + 4 * SectorCount(4u << 20));
  // A 4 KiB read costs two sectors (8 KiB) since 4096 > 4092.
  EncodedRange r = EncodedRangeFor(4u << 20, 8192, 4096);
  EXPECT_EQ(r.first_sector, 2u);
  EXPECT_EQ(r.offset, 2u * 4096);
  EXPECT_EQ(r.length, 8192u);
  // The last sector is short.
  r = EncodedRangeFor(5000, 4999, 1);
  EXPECT_EQ(r.first_sector, 1u);
  EXPECT_EQ(r.length, 5000u - 4092 + 4);
}

// Every range of several objects decodes to the original bytes; a flipped bit anywhere in the
// covered sectors is caught, naming the right sector.
TEST(SectorCodecTest, RandomRangesDecodeAndEveryFlipIsCaught) {
  uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t bytes : {1u, 4091u, 4092u, 4093u, 65536u, 100000u, 1u << 20}) {
    ObjectKey key = ObjectKey::Block(rng() % 1000 + 1, 3, bytes);
    std::string data = test::ObjectBytes(key);
    uint32_t obj_seed = ObjectSeed(key, 9);
    std::vector<char> enc(EncodedBytes(bytes));
    EncodeObject(obj_seed, data.data(), bytes, enc.data());
    SectorMismatch mm;
    ASSERT_TRUE(VerifyObject(obj_seed, bytes, enc.data(), &mm));
    for (int i = 0; i < 50; ++i) {
      uint64_t off = rng() % bytes;
      uint64_t len = 1 + rng() % std::min<uint64_t>(bytes - off, 70000);
      EncodedRange r = EncodedRangeFor(bytes, off, len);
      ASSERT_LE(r.offset + r.length, enc.size());
      std::vector<char> out(len);
      ASSERT_TRUE(DecodeRange(obj_seed, bytes, enc.data() + r.offset, off, len, out.data(), &mm))
          << "bytes " << bytes << " off " << off << " len " << len;
      ASSERT_EQ(0, std::memcmp(out.data(), data.data() + off, len));
      // Flip one bit somewhere in the range's sectors.
      uint64_t flip = r.offset + rng() % r.length;
      enc[flip] ^= static_cast<char>(1 << (rng() % 8));
      ASSERT_FALSE(DecodeRange(obj_seed, bytes, enc.data() + r.offset, off, len, out.data(), &mm));
      EXPECT_EQ(mm.sector, flip / kSectorBytes);
      EXPECT_FALSE(VerifyObject(obj_seed, bytes, enc.data(), &mm));
      EncodeObject(obj_seed, data.data(), bytes, enc.data());
    }
  }
}

// An encoding built in place, as a file's block buffer is (seeded random appends of any
// length, then the CRCs), is byte for byte EncodeObject's; the copies in and out never touch a
// CRC slot (a put's store may be writing them while a reader copies data out); ranges copied
// out of a partly filled buffer read what was copied in.
TEST(SectorCodecTest, AnEncodingBuiltInPlaceIsEncodeObjects) {
  uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t bytes : {1u, 4091u, 4092u, 4093u, 8184u, 65536u, 100000u, 4u << 20}) {
    ObjectKey key = ObjectKey::Block(rng() % 1000 + 1, 2, bytes);
    const std::string data = test::ObjectBytes(key);
    const uint32_t obj_seed = ObjectSeed(key, 0);
    std::vector<char> want(EncodedBytes(bytes));
    EncodeObject(obj_seed, data.data(), bytes, want.data());
    // 0x5a in every byte: a CRC slot that a copy wrote would no longer hold it.
    std::vector<char> enc(EncodedBytes(bytes), 0x5a);
    for (uint64_t at = 0; at < bytes;) {
      const uint64_t n = std::min<uint64_t>(bytes - at, 1 + rng() % 20000);
      CopyIntoSectors(enc.data(), at, data.data() + at, n);
      at += n;
      const uint64_t off = rng() % at;
      const uint64_t len = 1 + rng() % (at - off);
      std::vector<char> out(len);
      CopyOutOfSectors(enc.data(), off, out.data(), len);
      ASSERT_EQ(0, std::memcmp(out.data(), data.data() + off, len))
          << "bytes " << bytes << " filled " << at << " off " << off << " len " << len;
    }
    for (uint64_t s = 0; s < SectorCount(bytes); ++s) {
      const uint64_t n = std::min<uint64_t>(kSectorDataBytes, bytes - s * kSectorDataBytes);
      for (uint32_t i = 0; i < kSectorCrcBytes; ++i) {
        ASSERT_EQ(enc[s * kSectorBytes + n + i], 0x5a) << "sector " << s << " of " << bytes;
      }
    }
    FillSectorCrcs(obj_seed, enc.data(), bytes);
    ASSERT_EQ(enc, want) << "bytes " << bytes;
    SectorMismatch mm;
    EXPECT_TRUE(VerifyObject(obj_seed, bytes, enc.data(), &mm));
  }
}

// Another object's sectors, another salt (write generation) or sectors swapped inside one
// object do not verify, even when the data bytes are identical.
TEST(SectorCodecTest, SeedBindsSectorsToKeySaltAndPosition) {
  ObjectKey a = ObjectKey::Block(5, 0, 3 * 4092);
  ObjectKey b = ObjectKey::Block(5, 1, 3 * 4092);
  std::string zeros(a.bytes, '\0');
  std::vector<char> ea(EncodedBytes(a.bytes)), eb(EncodedBytes(b.bytes));
  EncodeObject(ObjectSeed(a, 0), zeros.data(), a.bytes, ea.data());
  EncodeObject(ObjectSeed(b, 0), zeros.data(), b.bytes, eb.data());
  SectorMismatch mm;
  EXPECT_FALSE(VerifyObject(ObjectSeed(a, 0), a.bytes, eb.data(), &mm));
  EXPECT_FALSE(VerifyObject(ObjectSeed(a, 1), a.bytes, ea.data(), &mm));
  std::vector<char> swapped = ea;
  std::memcpy(swapped.data(), ea.data() + kSectorBytes, kSectorBytes);
  std::memcpy(swapped.data() + kSectorBytes, ea.data(), kSectorBytes);
  EXPECT_FALSE(VerifyObject(ObjectSeed(a, 0), a.bytes, swapped.data(), &mm));
  EXPECT_EQ(mm.sector, 0u);
  Status s = SectorCorruption("vol/chunks/0/0/5_0_12276", mm);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("vol/chunks/0/0/5_0_12276"), std::string_view::npos);
}

}  // namespace
}  // namespace folio::store
