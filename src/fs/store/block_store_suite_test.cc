// The BlockStore conformance suite (block_store_suite.h): every store's puts, ranged gets,
// deletes and lists, CRC32C checked on every read, many requests in flight with callbacks that
// chain more, Close, and two volumes in one store. Instantiated per store: dir_store_test.cc,
// rados_store_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "fs/store/block_store_suite.h"
#include "fs/store/sector_codec.h"

namespace folio::store {
namespace {

TEST_P(BlockStoreTest, PutGetRangesDeleteAndList) {
  ObjectKey k = ObjectKey::Block(1234, 2, 100000);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
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

// Every store takes deferred puts (readable at completion) and kSync requests (durable after
// them), whether or not it defers anything.
TEST_P(BlockStoreTest, DeferredPutsAreReadableAndSyncCompletesOk) {
  std::vector<ObjectKey> keys = {ObjectKey::Block(4321, 0, 70000), ObjectKey::Block(4321, 1, 70000)};
  std::vector<std::string> datas;
  for (const ObjectKey& k : keys) {
    datas.push_back(test::ObjectBytes(k));
    StoreRequest req;
    req.ResetPut(k, datas.back().data());
    req.put_sync = PutSync::kDeferred;
    ASSERT_TRUE(store_->SubmitAndWait(&req).ok());
  }
  ASSERT_TRUE(store_->Sync(keys).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string out(keys[i].bytes, '\0');
    ASSERT_TRUE(store_->Get(keys[i], 0, keys[i].bytes, out.data()).ok());
    EXPECT_EQ(out, datas[i]);
  }
  EXPECT_EQ(store_->stats().sync.requests, 1u);
  EXPECT_EQ(store_->stats().sync.errors, 0u);
}

TEST_P(BlockStoreTest, InvalidRequestsCompleteWithInvalidArgument) {
  std::string out(10, '\0');
  EXPECT_EQ(store_->Get(ObjectKey::Block(1, 0, 100), 95, 10, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get(ObjectKey::Block(0, 0, 100), 0, 10, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Put(ObjectKey::Block(1, 0, 100), nullptr).code(), StatusCode::kInvalidArgument);
  // Both the data and an encoding: which one is the object's is not for the store to guess.
  std::vector<char> data(100, 'd'), enc(EncodedBytes(100));
  StoreRequest both;
  both.ResetPutEncoding(ObjectKey::Block(1, 0, 100), enc.data(), nullptr);
  both.data = data.data();
  EXPECT_EQ(store_->SubmitAndWait(&both).code(), StatusCode::kInvalidArgument);
}

// A put of the caller's encoding (StoreRequest::encoding, as a file's block buffer is put):
// built in place with garbage in its CRC slots, it reads back like a put of the data, whole and
// in ranges across sector edges; the store wrote only the CRC slots (the data runs still hold
// the bytes); and once the put completed OK the store holds no reference to the buffer (a
// caller may reuse it).
TEST_P(BlockStoreTest, PutsOfACallersEncodingReadBackAndLetTheBufferGo) {
  uint64_t id = 500;
  for (uint32_t bytes : {1u, 4092u, 4093u, 65536u, 100000u, (1u << 20) + 5}) {
    const ObjectKey k = ObjectKey::Block(++id, 1, bytes);
    const std::string data = test::ObjectBytes(k);
    auto buf = std::make_shared<std::vector<char>>(EncodedBytes(bytes), 0x5a);
    CopyIntoSectors(buf->data(), 0, data.data(), bytes);
    StoreRequest req;
    req.ResetPutEncoding(k, buf->data(), buf);
    ASSERT_TRUE(store_->SubmitAndWait(&req).ok()) << bytes << ": " << req.status.ToString();
    req.data_owner.reset();
    EXPECT_EQ(buf.use_count(), 1) << bytes << ": the store kept the buffer after a good put";
    std::string runs(bytes, '\0');
    CopyOutOfSectors(buf->data(), 0, runs.data(), bytes);
    EXPECT_EQ(runs, data) << bytes << ": the store changed the data in the caller's buffer";
    std::string out(bytes, '\0');
    ASSERT_TRUE(store_->Get(k, 0, bytes, out.data()).ok()) << bytes;
    EXPECT_EQ(out, data) << bytes;
    for (uint64_t off : {uint64_t{0}, uint64_t{4091}, uint64_t{4092}, uint64_t{bytes / 2}}) {
      if (off >= bytes) continue;
      const uint64_t len = std::min<uint64_t>(bytes - off, 5000);
      std::string part(len, '\0');
      ASSERT_TRUE(store_->Get(k, off, len, part.data()).ok()) << bytes << " at " << off;
      EXPECT_EQ(part, data.substr(off, len)) << bytes << " at " << off;
    }
  }
  Result<std::vector<ObjectInfo>> blocks = store_->List(ObjectKind::kBlock);
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(blocks->size(), 6u);
  EXPECT_EQ(store_->stats().checksum_failures, 0u);
}

// A bit flipped in the stored object: the ranged get covering it fails with Corruption naming
// the object, is counted and logged; ranges elsewhere still read.
TEST_P(BlockStoreTest, FlippedBitIsCorruptionOnlyForRangesCoveringIt) {
  ObjectKey k = ObjectKey::Block(77, 0, 65536);
  std::string data = test::ObjectBytes(k);
  ASSERT_TRUE(store_->Put(k, data.data()).ok());
  ASSERT_TRUE(GetParam().flip(*store_, k, 3 * kSectorBytes + 100).ok());  // sector 3
  std::string out(4096, '\0');
  ASSERT_TRUE(store_->Get(k, 0, 4096, out.data()).ok());
  EXPECT_EQ(out, data.substr(0, 4096));
  Status s = store_->Get(k, 12276 + 50, 100, out.data());
  ASSERT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find(store_->ObjectPath(k)), std::string_view::npos) << s.ToString();
  EXPECT_NE(s.message().find("sector 3"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(store_->stats().checksum_failures, 1u);
  std::lock_guard<std::mutex> lock(log_mu_);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("77_0_65536"), std::string::npos);
}

// Two volumes in one store (one directory, one pool): same keys, separate objects.
TEST_P(BlockStoreTest, TwoVolumesShareOneStore) {
  auto other = Make(prefix_ + "-b");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ObjectKey k = ObjectKey::Block(1, 0, 10);
  ASSERT_TRUE(store_->Put(k, "0123456789").ok());
  char out[10];
  EXPECT_EQ((*other)->Get(k, 0, 10, out).code(), StatusCode::kNotFound);
  ASSERT_TRUE((*other)->Put(k, "abcdefghij").ok());
  ASSERT_TRUE(store_->Get(k, 0, 10, out).ok());
  EXPECT_EQ(std::string(out, 10), "0123456789");
  auto listed = (*other)->List(ObjectKind::kBlock);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_NE(store_->ObjectPath(k), (*other)->ObjectPath(k));
}

// Many requests in flight from several threads with callbacks; callbacks chain a get after
// each put (Submit from inside done), and everything reads back.
TEST_P(BlockStoreTest, ManyAsyncRequestsWithChainedCallbacks) {
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

TEST_P(BlockStoreTest, CloseCompletesQueuedRequestsThenRefusesNewOnes) {
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

}  // namespace
}  // namespace folio::store
