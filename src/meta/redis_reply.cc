// Reply objects of the Redis engine's connections, each reply in an arena of its own (see
// redis_conn.h, RedisReplyFunctions).
//
// Layout: a reply's first block holds a BlockHead, then a RootHead, then the reply's top-level
// redisReply; every other object of the reply (elements, strings, element vectors) is carved
// from that block or from later blocks chained behind it. A nested object finds its arena
// through its parent tasks: hiredis builds a reply depth-first, and the root task's obj is the
// top-level redisReply. hiredis calls freeObject only on a top-level reply (a reader error or
// a reader freed mid-reply), as FreeRedisReply is called by RedisReply's deleter.
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "meta/redis_conn.h"

namespace folio::meta {
namespace {

constexpr size_t kAlign = 16;
constexpr size_t kFirstBlock = 512;          // a status, integer or short string reply fits
constexpr size_t kMaxGrownBlock = 1u << 20;  // later blocks double up to this
constexpr size_t kCachedBlocks = 4;          // per thread, of kCachedMinBytes or more
constexpr size_t kCachedMinBytes = 64u << 10;

struct alignas(kAlign) BlockHead {
  BlockHead* prev;  // the block before (nullptr: the reply's first)
  size_t cap;       // bytes after the head
  size_t used;
};
struct alignas(kAlign) RootHead {
  BlockHead* last;  // the newest block, where objects are carved
};

constexpr size_t Align(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
constexpr size_t kRootOffset = Align(sizeof(RootHead));
char* Data(BlockHead* b) { return reinterpret_cast<char*>(b + 1); }

// Large blocks freed by this thread, kept for its next replies: a 1000-entry listing needs
// ~130 KiB of objects per reply, which glibc would otherwise map and fault in afresh. At most
// kCachedBlocks of at most kMaxGrownBlock each.
struct BlockCache {
  BlockHead* blocks[kCachedBlocks] = {};
  bool gone = false;  // the thread is exiting: a reply freed from here on frees its blocks
  ~BlockCache() {
    for (BlockHead* b : blocks) std::free(b);
    gone = true;
  }
  BlockHead* Take(size_t at_least) {
    for (BlockHead*& b : blocks) {
      if (b != nullptr && b->cap >= at_least) return std::exchange(b, nullptr);
    }
    return nullptr;
  }
  bool Keep(BlockHead* b) {
    // Only grown blocks: one made to the size of a single large element is freed, so a thread
    // keeps at most kCachedBlocks MiB.
    if (gone || b->cap < kCachedMinBytes || b->cap > kMaxGrownBlock) return false;
    for (BlockHead*& slot : blocks) {
      if (slot == nullptr) {
        slot = b;
        return true;
      }
    }
    return false;
  }
};
thread_local BlockCache block_cache;

BlockHead* NewBlock(size_t cap, BlockHead* prev) {
  BlockHead* b = cap >= kCachedMinBytes ? block_cache.Take(cap) : nullptr;
  if (b == nullptr) {
    b = static_cast<BlockHead*>(std::malloc(sizeof(BlockHead) + cap));
    if (b == nullptr) return nullptr;  // hiredis reports out of memory
    b->cap = cap;
  }
  b->prev = prev;
  b->used = 0;
  return b;
}

RootHead* HeadOf(const redisReply* root) {
  return reinterpret_cast<RootHead*>(
      const_cast<char*>(reinterpret_cast<const char*>(root)) - kRootOffset);
}

void* Carve(const redisReply* root, size_t bytes) {
  RootHead* h = HeadOf(root);
  bytes = Align(bytes);
  BlockHead* b = h->last;
  if (b->cap - b->used < bytes) {
    b = NewBlock(std::max(std::min(b->cap * 2, kMaxGrownBlock), bytes), b);
    if (b == nullptr) return nullptr;
    h->last = b;
  }
  void* p = Data(b) + b->used;
  b->used += bytes;
  return p;
}

// A zeroed redisReply of `type` for `task`, linked into its parent's element vector, with
// `extra` bytes carved from its arena after it (*extra_out; none when extra_out is null).
redisReply* NewObject(const redisReadTask* task, int type, size_t extra, char** extra_out) {
  redisReply* r;
  const redisReply* root;
  if (task->parent == nullptr) {
    const size_t need = kRootOffset + Align(sizeof(redisReply)) + Align(extra);
    BlockHead* b = NewBlock(std::max(kFirstBlock, need), nullptr);
    if (b == nullptr) return nullptr;
    reinterpret_cast<RootHead*>(Data(b))->last = b;
    r = reinterpret_cast<redisReply*>(Data(b) + kRootOffset);
    b->used = kRootOffset + Align(sizeof(redisReply));
    root = r;
  } else {
    const redisReadTask* t = task;
    while (t->parent != nullptr) t = t->parent;
    root = static_cast<const redisReply*>(t->obj);
    r = static_cast<redisReply*>(Carve(root, sizeof(redisReply)));
    if (r == nullptr) return nullptr;
  }
  std::memset(r, 0, sizeof(*r));
  r->type = type;
  if (extra_out != nullptr) {
    *extra_out = static_cast<char*>(Carve(root, extra));
    if (*extra_out == nullptr) return nullptr;  // r stays in the arena, freed with the root
  }
  if (task->parent != nullptr) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = r;
  }
  return r;
}

void* CreateString(const redisReadTask* task, char* str, size_t len) {
  char* copy = nullptr;
  redisReply* r = NewObject(task, task->type, len + 1, &copy);
  if (r == nullptr) return nullptr;
  std::memcpy(copy, str, len);
  copy[len] = '\0';
  r->str = copy;
  r->len = len;
  return r;
}

void* CreateArray(const redisReadTask* task, int elements) {
  const size_t n = elements > 0 ? static_cast<size_t>(elements) : 0;
  char* vec = nullptr;
  redisReply* r =
      NewObject(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply*), n > 0 ? &vec : nullptr);
  if (r == nullptr) return nullptr;
  r->elements = n;
  if (n > 0) {
    r->element = reinterpret_cast<redisReply**>(vec);
    std::memset(vec, 0, n * sizeof(redisReply*));
  }
  return r;
}

void* CreateInteger(const redisReadTask* task, long long value) {  // NOLINT(runtime/int): hiredis
  redisReply* r = NewObject(task, REDIS_REPLY_INTEGER, 0, nullptr);
  if (r == nullptr) return nullptr;
  r->integer = value;
  return r;
}

void* CreateNil(const redisReadTask* task) {
  return NewObject(task, REDIS_REPLY_NIL, 0, nullptr);
}

void FreeObject(void* reply) { FreeRedisReply(static_cast<redisReply*>(reply)); }

redisReplyObjectFunctions kFunctions = {CreateString, CreateArray, CreateInteger, CreateNil,
                                        FreeObject};

}  // namespace

redisReplyObjectFunctions* RedisReplyFunctions() { return &kFunctions; }

void FreeRedisReply(redisReply* root) {
  if (root == nullptr) return;
  BlockHead* b = HeadOf(root)->last;
  while (b != nullptr) {
    BlockHead* prev = b->prev;
    if (!block_cache.Keep(b)) std::free(b);
    b = prev;
  }
}

}  // namespace folio::meta
