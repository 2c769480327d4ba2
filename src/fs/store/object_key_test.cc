#include "fs/store/object_key.h"

#include <gtest/gtest.h>

namespace folio::store {
namespace {

TEST(ObjectKeyTest, NamesFollowTheJuiceFsScheme) {
  EXPECT_EQ(ObjectName("vol", ObjectKey::Block(1234, 5, 4194304)),
            "vol/chunks/0/1/1234_5_4194304");
  EXPECT_EQ(ObjectName("vol", ObjectKey::Block(7123456789ull, 0, 65536)),
            "vol/chunks/7123/7123456/7123456789_0_65536");
  EXPECT_EQ(ObjectName("", ObjectKey::Pack(77, 1000)), "packs/0/0/77_1000");
  EXPECT_EQ(ObjectName("a-b.c", ObjectKey::Pack(1000001, 9)), "a-b.c/packs/1/1000/1000001_9");
}

TEST(ObjectKeyTest, ParseRoundTripsEveryKindAndRejectsNonCanonicalNames) {
  for (ObjectKey k : {ObjectKey::Block(1, 0, 1), ObjectKey::Block(999999999999ull, 4095, 16u << 20),
                      ObjectKey::Pack(42, 65536)}) {
    Result<ObjectKey> parsed = ParseObjectName(ObjectName("", k));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, k);
  }
  for (const char* bad : {"chunks/0/1/1234_5", "chunks/0/0/1234_5_4096", "chunks/0/1/01234_5_4096",
                          "packs/0/0/77_0_100", "packs/0/0/0_100", "chunks/0/0/5_0_0",
                          "chunks/0/0/5_0_16777217", "blobs/0/0/5_0_1", "chunks/0/0/5_0_1/x",
                          "chunks/0/0/.tmp.5_0_1.9.1", "chunks/0/0/5_0_+1", "chunks/0/0/5_0_1 "}) {
    EXPECT_FALSE(ParseObjectName(bad).ok()) << bad;
  }
}

TEST(ObjectKeyTest, ValidationNamesTheProblem) {
  EXPECT_TRUE(ValidateKey(ObjectKey::Block(1, 2, 3)).ok());
  Status s = ValidateKey(ObjectKey::Block(0, 0, 4096));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("id 0"), std::string_view::npos) << s.ToString();
  EXPECT_FALSE(ValidateKey(ObjectKey::Block(1, 0, kMaxObjectBytes + 1)).ok());
  EXPECT_FALSE(ValidateKey(ObjectKey{ObjectKind::kPack, 1, 3, 10}).ok());
  EXPECT_FALSE(ValidateKey(ObjectKey{static_cast<ObjectKind>(9), 1, 0, 10}).ok());
}

TEST(ObjectKeyTest, PrefixesArePathSafe) {
  EXPECT_TRUE(ValidatePrefix("vol-1.a_b").ok());
  for (const char* bad : {"", ".", "..", "a/b", "a b", "x\n"}) {
    EXPECT_FALSE(ValidatePrefix(bad).ok()) << bad;
  }
  EXPECT_FALSE(ValidatePrefix(std::string(65, 'a')).ok());
}

}  // namespace
}  // namespace folio::store
