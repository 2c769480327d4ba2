// Batches of store requests issued together and waited for together: the ranged gets a read
// needs (every block a range touches, in flight at once), the puts of a slice's blocks, the
// deletes of an object's blocks. And the naming of a slice's or pack's objects from a slice
// record (block i of a slice of object_bytes B is min(block_bytes, B - i * block_bytes) long).
//
// Thread safety: a batch is used by one thread; the store completes its requests on store
// threads, which only touch the batch's latch.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fs/store/block_store.h"
#include "meta/meta_types.h"

namespace folio::fs {

// Counts completions of requests whose ctx points at it.
class StoreLatch {
 public:
  void Add(size_t n);
  void Done();
  void Wait();
  static void OnDone(store::StoreRequest* req);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t pending_ = 0;  // GUARDED_BY(mu_)
};

class StoreBatch {
 public:
  explicit StoreBatch(store::BlockStore* store) : store_(store) {}
  void Get(const store::ObjectKey& key, uint64_t offset, uint64_t length, char* dst);
  void Put(const store::ObjectKey& key, const char* data);
  void Delete(const store::ObjectKey& key);
  size_t size() const { return reqs_.size(); }
  // Submits everything, waits, and returns the first error (NotFound of a delete counts as
  // done). The batch may be reused after Run.
  Status Run();

 private:
  store::BlockStore* const store_;
  std::vector<std::unique_ptr<store::StoreRequest>> reqs_;
};

// The key of block `index` of slice `id` whose stored size is object_bytes.
store::ObjectKey BlockKey(uint64_t id, uint32_t index, uint64_t object_bytes,
                          uint64_t block_bytes);
// Number of blocks of a slice of object_bytes.
uint32_t BlockCount(uint64_t object_bytes, uint64_t block_bytes);

// Calls fn(key, offset, n, done) for each stored object (block or pack) range that holds
// bytes [off, off + len) of a kBlocks or kPacked slice's data, in order; `done` counts the
// bytes before the range.
template <class Fn>
void ForEachObjectRange(const meta::Slice& s, uint64_t off, uint64_t len, uint64_t block_bytes,
                        Fn&& fn) {
  if (s.kind == meta::SliceKind::kPacked) {
    fn(store::ObjectKey::Pack(Raw(s.id), s.object_bytes), off, len, uint64_t{0});
    return;
  }
  for (uint64_t done = 0; done < len;) {
    const uint32_t index = static_cast<uint32_t>((off + done) / block_bytes);
    const uint64_t in_block = (off + done) % block_bytes;
    const store::ObjectKey key = BlockKey(Raw(s.id), index, s.object_bytes, block_bytes);
    const uint64_t n = std::min<uint64_t>(len - done, key.bytes - in_block);
    fn(key, in_block, n, done);
    done += n;
  }
}

// Adds the gets that read [off, off + len) of the stored object of a kBlocks or kPacked slice
// into dst.
void AddObjectReads(StoreBatch* batch, const meta::Slice& s, uint64_t off, uint64_t len,
                    uint64_t block_bytes, char* dst);

// Adds deletes of every object of a stored slice (kBlocks: all blocks) or pack.
void AddObjectDeletes(StoreBatch* batch, meta::SliceKind kind, uint64_t id,
                      uint64_t object_bytes, uint64_t block_bytes);

}  // namespace folio::fs
