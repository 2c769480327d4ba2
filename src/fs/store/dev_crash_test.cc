// Crash model test of the dev: store: a seeded sequence of puts and deletes, many in flight,
// against a map of what completed; at a random point the device (a FaultDevice over memory)
// loses every unflushed write (or a random subset of them, sometimes with a torn write first);
// the store is reopened and checked: every completed put reads back and verifies, every
// completed delete is gone, objects whose request was in flight are absent or intact, and
// nothing else is listed. Prints the seed, and the operation and crash counts.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "folio/fault_device.h"
#include "fs/store/dev_store.h"
#include "fs/store/store_test_util.h"

namespace folio::store {
namespace {

#ifdef FOLIO_STORE_SLOW
constexpr int kRounds = 60;
#else
constexpr int kRounds = 12;
#endif

struct Model {
  std::mutex mu;
  std::map<ObjectKey, uint64_t> committed;  // key -> content generation
  std::set<ObjectKey> maybe;                // in flight at the crash: absent or intact
  uint64_t puts_ok = 0, deletes_ok = 0, failed = 0, no_space = 0;
};

struct Op {
  StoreRequest req;
  std::string data;
  Model* model = nullptr;
  std::atomic<int>* in_flight = nullptr;
};

void OpDone(StoreRequest* r) {
  Op* op = static_cast<Op*>(r->ctx);
  {
    std::lock_guard<std::mutex> lock(op->model->mu);
    if (!r->status.ok()) {
      ++op->model->failed;
      if (r->status.IsNoSpace()) ++op->model->no_space;
    } else {
      ++(r->op == StoreOp::kPut ? op->model->puts_ok : op->model->deletes_ok);
      op->model->maybe.erase(r->key);
      if (r->op == StoreOp::kPut) op->model->committed[r->key] = 0;
      if (r->op == StoreOp::kDelete) op->model->committed.erase(r->key);
    }
  }
  op->in_flight->fetch_sub(1);
  delete op;
}

TEST(DevStoreCrashTest, CompletedPutsSurviveCrashesAndNothingElseIsReferenced) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (FOLIO_SEED to repeat)");
  std::mt19937_64 rng(seed);
  MemDeviceOptions mo;
  mo.size_bytes = 24 << 20;
  mo.logical_block_bytes = 4096;
  auto mem = NewMemDevice(mo);
  ASSERT_TRUE(mem.ok());
  std::unique_ptr<FaultDevice> fault = FaultDevice::WrapUnowned(mem->get());
  DevFormatOptions f;
  f.segment_bytes = 1 << 20;
  ASSERT_TRUE(FormatDevStore(fault.get(), "vol", f).ok());
  ASSERT_TRUE(fault->Flush().ok());

  Model model;
  uint64_t next_id = 1, ops_total = 0, verified = 0;
  int torn = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StoreOptions o;
    o.prefix = "vol";
    o.log = [](std::string_view) {};
    auto view = FaultDevice::WrapUnowned(fault.get());
    view->SetCrashTracking(false);
    auto opened = OpenDevStore(std::move(view), "dev:crash", o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<DevStore> store = std::move(*opened);

    // Check the state the last crash left.
    {
      std::lock_guard<std::mutex> lock(model.mu);
      for (const auto& [key, gen] : model.committed) {
        std::string out(key.bytes, '\0');
        Status s = store->Get(key, 0, key.bytes, out.data());
        ASSERT_TRUE(s.ok()) << KeyText(key) << ": " << s.ToString();
        ASSERT_EQ(out, test::ObjectBytes(key)) << KeyText(key);
        ++verified;
      }
      for (ObjectKind kind : {ObjectKind::kBlock, ObjectKind::kPack}) {
        auto listed = store->List(kind);
        ASSERT_TRUE(listed.ok());
        for (const ObjectInfo& info : *listed) {
          bool known = model.committed.count(info.key) || model.maybe.count(info.key);
          ASSERT_TRUE(known) << "listed but never completed: " << KeyText(info.key);
          std::string out(info.key.bytes, '\0');
          Status s = store->Get(info.key, 0, info.key.bytes, out.data());
          ASSERT_TRUE(s.ok()) << KeyText(info.key) << ": " << s.ToString();
          ASSERT_EQ(out, test::ObjectBytes(info.key));
          if (model.maybe.erase(info.key)) model.committed[info.key] = 0;  // it made it
        }
      }
      model.maybe.clear();  // the rest did not make it
    }

    // Random operations, several in flight, then a crash at a random point.
    std::atomic<int> in_flight{0};
    const int ops = 20 + static_cast<int>(rng() % 120);
    const int crash_at = static_cast<int>(rng() % ops);
    // Sometimes a write a little before the crash lands torn (and fails).
    const int tear_at = rng() % 4 == 0 ? static_cast<int>(rng() % (crash_at + 1)) : -1;
    for (int i = 0; i < ops; ++i) {
      if (i == tear_at) {
        fault->TearNextWrite(4096 * (rng() % 8), /*report_error=*/true);
        ++torn;
      }
      if (i == crash_at) break;
      auto* op = new Op;
      op->model = &model;
      op->in_flight = &in_flight;
      op->req.ctx = op;
      op->req.done = &OpDone;
      {
        std::lock_guard<std::mutex> lock(model.mu);
        bool del = !model.committed.empty() && rng() % 3 == 0;
        if (del) {
          auto it = model.committed.begin();
          std::advance(it, static_cast<long>(rng() % model.committed.size()));
          op->req.ResetDelete(it->first);
        } else {
          uint32_t bytes = 1 + static_cast<uint32_t>(rng() % 200000);
          ObjectKey k = rng() % 4 == 0 ? ObjectKey::Pack(next_id++, bytes)
                                       : ObjectKey::Block(next_id++, static_cast<uint32_t>(rng() % 3), bytes);
          op->data = test::ObjectBytes(k);
          op->req.ResetPut(k, op->data.data());
        }
        model.maybe.insert(op->req.key);
      }
      in_flight.fetch_add(1);
      ++ops_total;
      store->Submit(&op->req);
      while (in_flight.load() > 8) std::this_thread::yield();
    }
    fault->Crash(rng() % 2 ? CrashMode::kDropUnflushed : CrashMode::kRandomSubset, rng());
    while (in_flight.load() > 0) std::this_thread::yield();
    store.reset();
    fault->ClearFailures();  // a tear that found no write before the crash
    fault->Restart();
    {
      // A delete that completed is gone; one in flight may or may not be.
      std::lock_guard<std::mutex> lock(model.mu);
      for (const ObjectKey& k : model.maybe) model.committed.erase(k);
    }
  }
  std::printf("dev store crash test: seed %llu, %d crashes (%d with a torn write), %llu "
              "operations (%llu puts and %llu deletes completed, %llu failed by the crash, %llu "
              "no space), %llu object reads verified after reopening\n",
              static_cast<unsigned long long>(seed), kRounds, torn,
              static_cast<unsigned long long>(ops_total),
              static_cast<unsigned long long>(model.puts_ok),
              static_cast<unsigned long long>(model.deletes_ok),
              static_cast<unsigned long long>(model.failed),
              static_cast<unsigned long long>(model.no_space),
              static_cast<unsigned long long>(verified));
  // The run must have exercised what it claims: completed writes on both sides of crashes.
  EXPECT_GT(model.puts_ok, static_cast<uint64_t>(kRounds));
  EXPECT_GT(verified, 0u);
}

}  // namespace
}  // namespace folio::store
