// The Redis engine's reply objects (redis_reply.cc): seeded random replies in RESP, fed in
// random pieces to a hiredis reader building them in arenas and to one with hiredis's own
// objects, must give the same trees; readers failing or freed mid-reply free what they built
// (the sanitizer builds check for leaks and bad accesses).
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "meta/redis_conn.h"

namespace folio::meta {
namespace {

struct Reader {
  explicit Reader(bool arena) : arena(arena) {
    r = arena ? redisReaderCreateWithFunctions(RedisReplyFunctions()) : redisReaderCreate();
  }
  ~Reader() { redisReaderFree(r); }
  void Free(void* reply) const {
    if (arena) {
      FreeRedisReply(static_cast<redisReply*>(reply));
    } else {
      freeReplyObject(reply);
    }
  }
  bool arena;
  redisReader* r;
};

constexpr int kDepth = 3;

// One random reply in RESP, `depth` levels of arrays at most (kDepth at the top).
void AppendRandomReply(std::mt19937_64& rng, int depth, std::string* out) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 8 : 6));
  switch (kind) {
    case 0:
    case 1: {  // bulk string, mostly short, sometimes larger than a reader block
      const size_t len = depth == kDepth && rng() % 4 == 0 ? rng() % 300000 : rng() % 100;
      std::string s(len, '\0');
      for (char& c : s) c = static_cast<char>(rng());
      *out += "$" + std::to_string(len) + "\r\n" + s + "\r\n";
      break;
    }
    case 2:
      *out += "$-1\r\n";
      break;
    case 3:
      *out += ":" + std::to_string(static_cast<int64_t>(rng())) + "\r\n";
      break;
    case 4:
      *out += "+OK" + std::to_string(rng() % 1000) + "\r\n";
      break;
    case 5:
      *out += "-ERR something " + std::to_string(rng() % 1000) + "\r\n";
      break;
    default: {  // an array: empty, nil, short, or a listing's thousands
      const int shape = static_cast<int>(rng() % 8);
      if (shape == 0) {
        *out += "*-1\r\n";
        break;
      }
      // Long arrays at the top only (a listing): nested ones stay short, so a reply stays
      // within a few MiB.
      const size_t n = shape == 1 ? 0 : shape == 2 && depth == kDepth ? 500 + rng() % 2000
                                                                      : rng() % 8;
      *out += "*" + std::to_string(n) + "\r\n";
      for (size_t i = 0; i < n; ++i) AppendRandomReply(rng, depth - 1, out);
      break;
    }
  }
}

void ExpectSame(const redisReply* want, const redisReply* got, const std::string& where) {
  ASSERT_NE(got, nullptr) << where;
  ASSERT_EQ(got->type, want->type) << where;
  switch (want->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      ASSERT_EQ(std::string(got->str, got->len), std::string(want->str, want->len)) << where;
      EXPECT_EQ(got->str[got->len], '\0') << where;
      break;
    case REDIS_REPLY_INTEGER:
      ASSERT_EQ(got->integer, want->integer) << where;
      break;
    case REDIS_REPLY_ARRAY:
      ASSERT_EQ(got->elements, want->elements) << where;
      for (size_t i = 0; i < want->elements; ++i) {
        ExpectSame(want->element[i], got->element[i], where + "[" + std::to_string(i) + "]");
      }
      break;
    default:
      break;
  }
}

// Feeds `wire` in random pieces and takes every reply it holds.
std::vector<void*> ReadAll(Reader& reader, const std::string& wire, std::mt19937_64& rng) {
  std::vector<void*> out;
  size_t at = 0;
  while (at < wire.size()) {
    const size_t piece = std::min(wire.size() - at, size_t{1} + rng() % 40000);
    EXPECT_EQ(redisReaderFeed(reader.r, wire.data() + at, piece), REDIS_OK);
    at += piece;
    for (;;) {
      void* reply = nullptr;
      EXPECT_EQ(redisReaderGetReply(reader.r, &reply), REDIS_OK) << reader.r->errstr;
      if (reply == nullptr) break;
      out.push_back(reply);
    }
  }
  return out;
}

TEST(RedisReplyTest, ArenaRepliesEqualHiredisOwn) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  size_t replies = 0;
  for (int round = 0; round < 20; ++round) {
    std::string wire;
    const int n = 1 + static_cast<int>(rng() % 50);
    for (int i = 0; i < n; ++i) AppendRandomReply(rng, kDepth, &wire);
    Reader plain(false);
    Reader arena(true);
    std::mt19937_64 pieces(rng());
    std::vector<void*> want = ReadAll(plain, wire, pieces);
    std::vector<void*> got = ReadAll(arena, wire, pieces);
    ASSERT_EQ(want.size(), static_cast<size_t>(n)) << "seed " << seed;
    ASSERT_EQ(got.size(), want.size()) << "seed " << seed;
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectSame(static_cast<redisReply*>(want[i]), static_cast<redisReply*>(got[i]),
                 "seed " + std::to_string(seed) + " round " + std::to_string(round) + " reply " +
                     std::to_string(i));
    }
    // Freed in a random order: each reply's arena is its own.
    std::shuffle(got.begin(), got.end(), rng);
    for (void* r : got) arena.Free(r);
    for (void* r : want) plain.Free(r);
    replies += got.size();
  }
  std::printf("%zu replies compared\n", replies);
}

TEST(RedisReplyTest, RepliesOutliveEachOtherAndTheReader) {
  std::string wire = "*3\r\n$3\r\nabc\r\n:42\r\n*1\r\n$-1\r\n+PONG\r\n";
  void* first = nullptr;
  void* second = nullptr;
  {
    Reader arena(true);
    ASSERT_EQ(redisReaderFeed(arena.r, wire.data(), wire.size()), REDIS_OK);
    ASSERT_EQ(redisReaderGetReply(arena.r, &first), REDIS_OK);
    ASSERT_EQ(redisReaderGetReply(arena.r, &second), REDIS_OK);
  }
  auto* a = static_cast<redisReply*>(first);
  auto* b = static_cast<redisReply*>(second);
  ASSERT_EQ(a->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(a->elements, 3u);
  EXPECT_EQ(std::string(a->element[0]->str, a->element[0]->len), "abc");
  EXPECT_EQ(a->element[1]->integer, 42);
  ASSERT_EQ(a->element[2]->elements, 1u);
  EXPECT_EQ(a->element[2]->element[0]->type, REDIS_REPLY_NIL);
  FreeRedisReply(a);
  ASSERT_EQ(b->type, REDIS_REPLY_STATUS);
  EXPECT_EQ(std::string(b->str, b->len), "PONG");
  FreeRedisReply(b);
  FreeRedisReply(nullptr);
}

TEST(RedisReplyTest, ElementsLargerThanAGrownBlockGetOneOfTheirSize) {
  const std::string big(2500000, 'b');  // past the 1 MiB a block grows to
  const std::string wire = "*3\r\n$10\r\n0123456789\r\n$" + std::to_string(big.size()) + "\r\n" +
                           big + "\r\n$3\r\nend\r\n";
  Reader arena(true);
  ASSERT_EQ(redisReaderFeed(arena.r, wire.data(), wire.size()), REDIS_OK);
  void* reply = nullptr;
  ASSERT_EQ(redisReaderGetReply(arena.r, &reply), REDIS_OK);
  auto* r = static_cast<redisReply*>(reply);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(std::string(r->element[0]->str, r->element[0]->len), "0123456789");
  EXPECT_EQ(std::string(r->element[1]->str, r->element[1]->len), big);
  EXPECT_EQ(std::string(r->element[2]->str, r->element[2]->len), "end");
  FreeRedisReply(r);
}

TEST(RedisReplyTest, AReaderThatFailsOrIsFreedMidReplyFreesWhatItBuilt) {
  // A protocol error after a thousand elements of a listing.
  std::string bad = "*2000\r\n";
  for (int i = 0; i < 1000; ++i) bad += "$5\r\nentry\r\n";
  bad += "!oops\r\n";
  {
    Reader arena(true);
    ASSERT_EQ(redisReaderFeed(arena.r, bad.data(), bad.size()), REDIS_OK);
    void* reply = nullptr;
    EXPECT_EQ(redisReaderGetReply(arena.r, &reply), REDIS_ERR);
    EXPECT_EQ(reply, nullptr);
  }
  // Half a reply, then the reader (a connection closed) goes.
  std::string half = "*3\r\n$3\r\nabc\r\n*2\r\n:1\r\n";
  Reader* arena = new Reader(true);
  ASSERT_EQ(redisReaderFeed(arena->r, half.data(), half.size()), REDIS_OK);
  void* reply = nullptr;
  ASSERT_EQ(redisReaderGetReply(arena->r, &reply), REDIS_OK);
  EXPECT_EQ(reply, nullptr);
  delete arena;
}

}  // namespace
}  // namespace folio::meta
