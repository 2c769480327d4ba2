// PowerCutStore: a BlockStore wrapper for tests of a dir: store that knows what a power cut
// would take away: every object put with PutSync::kDeferred whose kSync has not completed OK
// (BlockStore's deferred durability). PowerCut() then removes each such object's file, or,
// with a seed, keeps, removes or truncates each one at random (a torn write). A file system
// that commits a record naming an object before that object's sync completed finds it missing
// or torn after the cut, and fsck reports it.
//
// It also counts gets in flight (the most at once: how many a reader keeps going together).
// Each get of a batch is counted before the batch goes to the wrapped store, so the gets one
// Submit sends are all counted as in flight together whatever the store's speed.
//
// It can fail puts as a rados: store fails one that timed out while librados may still send
// its buffer (FailEncodedPutsHolding): the put goes through (it may have been applied), then
// completes with IOError, and the wrapper keeps the request's data_owner and a copy of the
// data the buffer held, so a test can check that nobody changed the buffer since
// (HeldBuffersUnchanged): what the late message would otherwise send.
//
// Requests pass through unchanged except for `done` / `ctx`, which the wrapper borrows until
// the wrapped store completes the request and gives back before the caller's completion runs.
//
// Thread safety: as the wrapped store; PowerCut() only with no request in flight.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "fs/store/block_store.h"
#include "fs/store/sector_codec.h"

namespace folio::fs::test {

class PowerCutStore final : public store::BlockStore {
 public:
  explicit PowerCutStore(std::unique_ptr<store::BlockStore> inner) : inner_(std::move(inner)) {}

  std::string url() const override { return inner_->url(); }
  std::string prefix() const override { return inner_->prefix(); }
  std::string ObjectPath(const store::ObjectKey& key) const override {
    return inner_->ObjectPath(key);
  }
  void Close() override { inner_->Close(); }
  store::StoreStatsSnapshot stats() const override { return inner_->stats(); }
  bool DefersSync() const override { return inner_->DefersSync(); }

  void Submit(std::span<store::StoreRequest* const> batch) override {
    for (store::StoreRequest* req : batch) {
      const bool deferred = req->op == store::StoreOp::kPut &&
                            req->put_sync == store::PutSync::kDeferred && inner_->DefersSync();
      if (req->op == store::StoreOp::kGet) {
        std::lock_guard<std::mutex> lock(mu_);
        gets_max_ = std::max(gets_max_, ++gets_);
      } else if (req->op != store::StoreOp::kPut && req->op != store::StoreOp::kSync) {
        continue;
      }
      auto* b = new Borrowed{this, req->done, req->ctx, deferred, {}};
      if (req->op == store::StoreOp::kSync) {
        b->sync_keys.assign(req->sync_keys.begin(), req->sync_keys.end());
      }
      if (deferred) {
        // Lost by a cut from now on, until a sync of it completes.
        std::lock_guard<std::mutex> lock(mu_);
        unsynced_.insert(req->key);
      }
      req->done = &PowerCutStore::OnDone;
      req->ctx = b;
    }
    inner_->Submit(batch);
  }

  // The objects a power cut would take away now.
  size_t unsynced() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unsynced_.size();
  }
  bool IsUnsynced(const store::ObjectKey& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    return unsynced_.count(key) != 0;
  }

  // The next n puts of an encoding with a data_owner fail so (see the header).
  void FailEncodedPutsHolding(uint32_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_holding_ = n;
  }
  // How many buffers are held, and whether each still holds the data it held at its failure.
  size_t held() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  bool HeldBuffersUnchanged() const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Held& h : held_) {
      std::string now(h.data.size(), '\0');
      store::CopyOutOfSectors(h.encoding, 0, now.data(), now.size());
      if (now != h.data) return false;
    }
    return true;
  }

  // The most gets in flight at once since the last ResetGetsInFlightMax().
  uint64_t gets_in_flight_max() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gets_max_;
  }
  void ResetGetsInFlightMax() {
    std::lock_guard<std::mutex> lock(mu_);
    gets_max_ = gets_;
  }

  // Every unsynced object's file is removed (seed 0), or each is kept whole, removed or cut
  // short at random (seed != 0). REQUIRES: no request in flight.
  void PowerCut(uint64_t seed) {
    std::lock_guard<std::mutex> lock(mu_);
    std::mt19937_64 rng(seed);
    for (const store::ObjectKey& key : unsynced_) {
      const std::string path = inner_->ObjectPath(key);
      const int what = seed == 0 ? 1 : static_cast<int>(rng() % 3);
      if (what == 1) {
        (void)::unlink(path.c_str());
      } else if (what == 2) {
        (void)::truncate(path.c_str(), static_cast<off_t>(rng() % (key.bytes + 1)));
      }
    }
    unsynced_.clear();
  }

 private:
  struct Held {
    std::shared_ptr<const void> owner;
    const char* encoding;
    std::string data;  // its logical bytes when the put failed
  };
  struct Borrowed {
    PowerCutStore* self;
    store::StoreDoneFn done;
    void* ctx;
    bool deferred;
    std::vector<store::ObjectKey> sync_keys;
  };

  static void OnDone(store::StoreRequest* req) {
    std::unique_ptr<Borrowed> b(static_cast<Borrowed*>(req->ctx));
    req->done = b->done;
    req->ctx = b->ctx;
    if (req->op == store::StoreOp::kPut && req->encoding != nullptr &&
        req->data_owner != nullptr && req->status.ok()) {
      std::lock_guard<std::mutex> lock(b->self->mu_);
      if (b->self->fail_holding_ > 0) {
        --b->self->fail_holding_;
        Held h{req->data_owner, req->encoding, std::string(req->key.bytes, '\0')};
        store::CopyOutOfSectors(req->encoding, 0, h.data.data(), h.data.size());
        b->self->held_.push_back(std::move(h));
        req->status = Status::IOError(store::KeyText(req->key) +
                                      ": put failed without an answer (PowerCutStore)");
      }
    }
    if (req->op == store::StoreOp::kGet) {
      std::lock_guard<std::mutex> lock(b->self->mu_);
      --b->self->gets_;
    } else if (req->status.ok()) {
      std::lock_guard<std::mutex> lock(b->self->mu_);
      if (req->op == store::StoreOp::kSync) {
        for (const store::ObjectKey& key : b->sync_keys) b->self->unsynced_.erase(key);
      } else if (!b->deferred) {
        b->self->unsynced_.erase(req->key);  // a durable put of the key
      }
    }
    if (req->done != nullptr) {
      req->done(req);
      return;
    }
    req->completed.store(true, std::memory_order_release);
  }

  std::unique_ptr<store::BlockStore> inner_;
  mutable std::mutex mu_;
  std::unordered_set<store::ObjectKey, store::ObjectKeyHash> unsynced_;  // GUARDED_BY(mu_)
  uint32_t fail_holding_ = 0;  // GUARDED_BY(mu_)
  std::vector<Held> held_;     // GUARDED_BY(mu_)
  uint64_t gets_ = 0, gets_max_ = 0;                                      // GUARDED_BY(mu_)
};

}  // namespace folio::fs::test
