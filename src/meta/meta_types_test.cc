// The record codecs: slice records (32 bytes, little-endian) and the format record (JSON).
#include "meta/meta_types.h"

#include <gtest/gtest.h>

#include <string>

namespace folio::meta {
namespace {

Slice Blocks() {
  Slice s;
  s.pos = 0x01020304;
  s.len = 0x00100000;
  s.id = SliceId{0x1122334455667788};
  s.object_bytes = 0x00200000;
  s.object_off = 0x00080000;
  s.kind = SliceKind::kBlocks;
  return s;
}

TEST(SliceRecord, BytesMatchTheDocumentedLayout) {
  const std::string b = EncodeSlice(Blocks());
  ASSERT_EQ(b.size(), kSliceRecordBytes);
  const std::string expected(
      "\x04\x03\x02\x01"                  // pos
      "\x00\x00\x10\x00"                  // len
      "\x88\x77\x66\x55\x44\x33\x22\x11"  // id
      "\x00\x00\x20\x00"                  // object_bytes
      "\x00\x00\x08\x00"                  // object_off
      "\x01"                              // kind
      "\x00\x00\x00\x00\x00\x00\x00",     // reserved
      32);
  EXPECT_EQ(b, expected);
}

TEST(SliceRecord, RoundTripsAListOldestFirst) {
  Slice packed = Blocks();
  packed.kind = SliceKind::kPacked;
  packed.object_off = 8;
  packed.len = 100;
  Slice zero;
  zero.pos = 5;
  zero.len = 7;
  zero.kind = SliceKind::kZero;
  const std::vector<Slice> in = {Blocks(), packed, zero};
  auto out = DecodeSlices(EncodeSlices(in), "inode 9 chunk 0");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(EncodeSlice((*out)[i]), EncodeSlice(in[i]));
  auto empty = DecodeSlices("", "x");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(SliceRecord, DecoderRefusesDamageNamingTheRecord) {
  const std::string good = EncodeSlice(Blocks());
  struct Case {
    std::string bytes;
    std::string expect;
  };
  std::vector<Case> cases;
  cases.push_back({good.substr(0, 20), "not a multiple of 32"});
  std::string reserved = good;
  reserved[31] = 1;
  cases.push_back({good + reserved, "slice record 1: reserved byte 31"});
  std::string kind = good;
  kind[24] = 4;
  cases.push_back({kind, "kind 4"});
  Slice s = Blocks();
  s.len = 0;
  cases.push_back({EncodeSlice(s), "len 0"});
  s = Blocks();
  s.pos = static_cast<uint32_t>(kChunkBytes);
  cases.push_back({EncodeSlice(s), "past the"});
  s = Blocks();
  s.object_off = s.object_bytes;
  cases.push_back({EncodeSlice(s), "past object_bytes"});
  s = Blocks();
  s.id = SliceId{0};
  cases.push_back({EncodeSlice(s), "id 0"});
  s = Blocks();
  s.kind = SliceKind::kZero;
  cases.push_back({EncodeSlice(s), "zero slice with id"});
  s = Blocks();
  s.kind = SliceKind::kPacked;
  s.object_off = 4;
  cases.push_back({EncodeSlice(s), "8-byte entry header"});
  for (const Case& c : cases) {
    auto r = DecodeSlices(c.bytes, "inode 12 chunk 3");
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_NE(r.status().message().find("inode 12 chunk 3"), std::string_view::npos)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.expect), std::string_view::npos)
        << r.status().ToString();
  }
  EXPECT_TRUE(ValidateSlice(Blocks()).ok());
  s = Blocks();
  s.len = 0;
  EXPECT_EQ(ValidateSlice(s).code(), StatusCode::kInvalidArgument);
}

FormatRecord Format() {
  FormatRecord f;
  f.name = "vol \xc3\xa9";
  f.uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
  f.block_bytes = 1 << 20;
  f.pack_below_bytes = 0;
  f.store_url = "dev:raid:/d/m0,/d/m1,/d/m2";
  f.create_ns = 1'700'000'000'123'456'789;
  f.session_timeout_ms = 5000;
  f.deletion_grace_ms = 0;
  return f;
}

TEST(FormatRecordCodec, RoundTripsAsJson) {
  const std::string text = EncodeFormat(Format());
  EXPECT_NE(text.find("\"format_version\":1"), std::string::npos) << text;
  auto f = DecodeFormat(text);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(EncodeFormat(*f), text);
  EXPECT_EQ(f->name, Format().name);
  EXPECT_EQ(f->create_ns, Format().create_ns);
}

TEST(FormatRecordCodec, RefusesNewerVersionsWithAClearMessage) {
  std::string text = EncodeFormat(Format());
  const size_t at = text.find("\"format_version\":1");
  text.replace(at, 18, "\"format_version\":7,\"new_key\":[1]");
  auto f = DecodeFormat(text);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotSupported);
  EXPECT_NE(f.status().message().find("format_version 7 is newer"), std::string_view::npos)
      << f.status().ToString();
  EXPECT_NE(f.status().message().find("use a newer folio"), std::string_view::npos);
}

TEST(FormatRecordCodec, RefusesDamage) {
  const std::string good = EncodeFormat(Format());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {good.substr(0, good.size() - 1), "not a JSON object"},
      {R"({"format_version":1})", "missing key \"name\""},
      {std::string(good).replace(good.find("\"block_bytes\":1048576"), 21, "\"block_bytes\":3000"),
       "block_bytes 3000"},
      {std::string(good).replace(good.find("\"block_bytes\":1048576"), 21, "\"block_bytes\":-1"),
       "non-negative integer"},
      {std::string(good).replace(good.find("\"format_version\":1"), 18, "\"format_version\":0"),
       "format_version 0"},
      {std::string(good).replace(good.find("0f8fad5b"), 8, "zzzzzzzz"), "uuid"},
  };
  for (const auto& [text, expect] : cases) {
    auto f = DecodeFormat(text);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.status().code(), StatusCode::kCorruption) << text;
    EXPECT_NE(f.status().message().find(expect), std::string_view::npos)
        << f.status().ToString();
  }
  FormatRecord bad = Format();
  bad.name = "\xff";
  EXPECT_EQ(ValidateFormat(bad).code(), StatusCode::kInvalidArgument);
  bad = Format();
  bad.pack_below_bytes = bad.block_bytes * 2;
  EXPECT_EQ(ValidateFormat(bad).code(), StatusCode::kInvalidArgument);
}

TEST(CounterNames, AreStableAndDistinct) {
  EXPECT_EQ(CounterName(Counter::kNextInode), "next_inode");
  EXPECT_EQ(CounterName(Counter::kNextSlice), "next_slice");
  EXPECT_EQ(CounterName(Counter::kNextSession), "next_session");
  EXPECT_EQ(CounterName(Counter::kUsedBytes), "used_bytes");
  EXPECT_EQ(CounterName(Counter::kUsedInodes), "used_inodes");
}

}  // namespace
}  // namespace folio::meta
