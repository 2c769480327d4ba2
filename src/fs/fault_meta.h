// FaultMetaEngine: a MetaEngine wrapper for tests that aborts write transactions at a chosen
// point: armed for the next write transaction whose op is in a set, it makes the k-th Txn call
// of that transaction fail with IOError, so the engine rolls everything fn wrote back. The fs
// layer's operation must then fail and leave no trace (atomicity), which the model test checks.
// AfterNext runs a test's callback right after a named transaction, to order a race.
//
// Thread safety: as the wrapped engine; arming is for one thread driving the test (AfterNext
// may be called while other threads run transactions).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "meta/meta_engine.h"

namespace folio::fs::test {

class FaultTxn final : public meta::Txn {
 public:
  FaultTxn(meta::Txn& t, int fail_at, const std::function<void()>* at_failure = nullptr)
      : t_(t), fail_at_(fail_at), at_failure_(at_failure) {}
  bool failed() const { return failed_; }

  using Inode = meta::Inode;
  using InodeId = meta::InodeId;
  using Entry = meta::Entry;
  using Xattr = meta::Xattr;
  using Slice = meta::Slice;
  using SliceId = meta::SliceId;
  using SliceRef = meta::SliceRef;
  using Counter = meta::Counter;
  using Session = meta::Session;
  using SessionId = meta::SessionId;
  using FlockRecord = meta::FlockRecord;
  using PlockRecord = meta::PlockRecord;
  using Deletion = meta::Deletion;
  using FormatRecord = meta::FormatRecord;

  Status Prefetch(std::span<const meta::RecordKey> keys) override {
    FOLIO_RETURN_IF_ERROR(Step("Prefetch"));
    return t_.Prefetch(keys);
  }
  Result<std::optional<Inode>> GetInode(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("GetInode"));
    return t_.GetInode(ino);
  }
  Status PutInode(const Inode& inode) override {
    FOLIO_RETURN_IF_ERROR(Step("PutInode"));
    return t_.PutInode(inode);
  }
  Status DeleteInode(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteInode"));
    return t_.DeleteInode(ino);
  }
  Result<std::vector<Inode>> ListInodes(InodeId after, size_t limit) override {
    FOLIO_RETURN_IF_ERROR(Step("ListInodes"));
    return t_.ListInodes(after, limit);
  }
  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override {
    FOLIO_RETURN_IF_ERROR(Step("GetEntry"));
    return t_.GetEntry(parent, name);
  }
  Status PutEntry(const Entry& entry) override {
    FOLIO_RETURN_IF_ERROR(Step("PutEntry"));
    return t_.PutEntry(entry);
  }
  Status DeleteEntry(InodeId parent, std::string_view name) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteEntry"));
    return t_.DeleteEntry(parent, name);
  }
  Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after, size_t limit) override {
    FOLIO_RETURN_IF_ERROR(Step("ListEntries"));
    return t_.ListEntries(parent, after, limit);
  }
  Result<std::optional<std::string>> GetSymlink(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("GetSymlink"));
    return t_.GetSymlink(ino);
  }
  Status PutSymlink(InodeId ino, std::string_view target) override {
    FOLIO_RETURN_IF_ERROR(Step("PutSymlink"));
    return t_.PutSymlink(ino, target);
  }
  Status DeleteSymlink(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteSymlink"));
    return t_.DeleteSymlink(ino);
  }
  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override {
    FOLIO_RETURN_IF_ERROR(Step("GetXattr"));
    return t_.GetXattr(ino, name);
  }
  Result<std::vector<Xattr>> ListXattrs(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("ListXattrs"));
    return t_.ListXattrs(ino);
  }
  Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override {
    FOLIO_RETURN_IF_ERROR(Step("PutXattr"));
    return t_.PutXattr(ino, name, value);
  }
  Status DeleteXattr(InodeId ino, std::string_view name) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteXattr"));
    return t_.DeleteXattr(ino, name);
  }
  Result<std::vector<Slice>> GetChunk(InodeId ino, uint32_t index) override {
    FOLIO_RETURN_IF_ERROR(Step("GetChunk"));
    return t_.GetChunk(ino, index);
  }
  Status AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) override {
    FOLIO_RETURN_IF_ERROR(Step("AppendSlices"));
    return t_.AppendSlices(ino, index, slices);
  }
  Status PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) override {
    FOLIO_RETURN_IF_ERROR(Step("PutChunk"));
    return t_.PutChunk(ino, index, slices);
  }
  Result<std::vector<uint32_t>> ListChunks(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("ListChunks"));
    return t_.ListChunks(ino);
  }
  Result<std::optional<SliceRef>> GetSliceRef(SliceId id) override {
    FOLIO_RETURN_IF_ERROR(Step("GetSliceRef"));
    return t_.GetSliceRef(id);
  }
  Status PutSliceRef(const SliceRef& ref) override {
    FOLIO_RETURN_IF_ERROR(Step("PutSliceRef"));
    return t_.PutSliceRef(ref);
  }
  Status DeleteSliceRef(SliceId id) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteSliceRef"));
    return t_.DeleteSliceRef(id);
  }
  Result<std::vector<SliceRef>> ListSliceRefs(SliceId after, size_t limit) override {
    FOLIO_RETURN_IF_ERROR(Step("ListSliceRefs"));
    return t_.ListSliceRefs(after, limit);
  }
  Result<int64_t> GetCounter(Counter c) override {
    FOLIO_RETURN_IF_ERROR(Step("GetCounter"));
    return t_.GetCounter(c);
  }
  Status AddToCounter(Counter c, int64_t delta) override {
    FOLIO_RETURN_IF_ERROR(Step("AddToCounter"));
    return t_.AddToCounter(c, delta);
  }
  Result<std::optional<Session>> GetSession(SessionId id) override {
    FOLIO_RETURN_IF_ERROR(Step("GetSession"));
    return t_.GetSession(id);
  }
  Status PutSession(const Session& session) override {
    FOLIO_RETURN_IF_ERROR(Step("PutSession"));
    return t_.PutSession(session);
  }
  Status DeleteSession(SessionId id) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteSession"));
    return t_.DeleteSession(id);
  }
  Result<std::vector<Session>> ListSessions() override {
    FOLIO_RETURN_IF_ERROR(Step("ListSessions"));
    return t_.ListSessions();
  }
  Result<std::vector<FlockRecord>> GetFlocks(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("GetFlocks"));
    return t_.GetFlocks(ino);
  }
  Status PutFlock(const FlockRecord& lock) override {
    FOLIO_RETURN_IF_ERROR(Step("PutFlock"));
    return t_.PutFlock(lock);
  }
  Status DeleteFlock(InodeId ino, SessionId session, uint64_t owner) override {
    FOLIO_RETURN_IF_ERROR(Step("DeleteFlock"));
    return t_.DeleteFlock(ino, session, owner);
  }
  Result<std::vector<PlockRecord>> GetPlocks(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("GetPlocks"));
    return t_.GetPlocks(ino);
  }
  Status PutPlocks(InodeId ino, SessionId session, uint64_t owner, const std::vector<PlockRecord>& ranges) override {
    FOLIO_RETURN_IF_ERROR(Step("PutPlocks"));
    return t_.PutPlocks(ino, session, owner, ranges);
  }
  Result<std::vector<InodeId>> ListLockedInodes(SessionId session) override {
    FOLIO_RETURN_IF_ERROR(Step("ListLockedInodes"));
    return t_.ListLockedInodes(session);
  }
  Status AddSustained(SessionId session, InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("AddSustained"));
    return t_.AddSustained(session, ino);
  }
  Status RemoveSustained(SessionId session, InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("RemoveSustained"));
    return t_.RemoveSustained(session, ino);
  }
  Result<std::vector<InodeId>> ListSustained(SessionId session) override {
    FOLIO_RETURN_IF_ERROR(Step("ListSustained"));
    return t_.ListSustained(session);
  }
  Result<bool> IsSustained(InodeId ino) override {
    FOLIO_RETURN_IF_ERROR(Step("IsSustained"));
    return t_.IsSustained(ino);
  }
  Result<uint64_t> QueueDeletion(const Deletion& item) override {
    FOLIO_RETURN_IF_ERROR(Step("QueueDeletion"));
    return t_.QueueDeletion(item);
  }
  Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t due_ns, size_t limit) override {
    FOLIO_RETURN_IF_ERROR(Step("ListDeletions"));
    return t_.ListDeletions(due_ns, limit);
  }
  Status RemoveDeletion(uint64_t key) override {
    FOLIO_RETURN_IF_ERROR(Step("RemoveDeletion"));
    return t_.RemoveDeletion(key);
  }
  Result<std::optional<FormatRecord>> GetFormat() override {
    FOLIO_RETURN_IF_ERROR(Step("GetFormat"));
    return t_.GetFormat();
  }
  Status PutFormat(const FormatRecord& format) override {
    FOLIO_RETURN_IF_ERROR(Step("PutFormat"));
    return t_.PutFormat(format);
  }

 private:

  Status Step(const char* what) {
    if (fail_at_ < 0 || calls_++ < fail_at_) return Status::OK();
    failed_ = true;
    if (at_failure_ != nullptr && *at_failure_) (*at_failure_)();
    return Status::IOError(std::string("injected metadata failure at ") + what);
  }

  meta::Txn& t_;
  const int fail_at_;
  const std::function<void()>* const at_failure_;
  int calls_ = 0;
  bool failed_ = false;
};

class FaultMetaEngine final : public meta::MetaEngine {
 public:
  explicit FaultMetaEngine(meta::MetaEngine* inner) : inner_(inner) {}

  // The next write transaction whose op is in `ops` fails at its fail_at-th Txn call (the
  // transaction is retried by nobody: the operation gets the IOError).
  // at_failure (optional) runs on the transaction's thread at the failing call, before the
  // call returns its error: a test puts another event inside the transaction's window.
  void Arm(std::set<std::string> ops, int fail_at, std::function<void()> at_failure = nullptr) {
    ops_ = std::move(ops);
    fail_at_ = fail_at;
    at_failure_ = std::move(at_failure);
    armed_ = true;
    fired_ = false;
  }
  // Ends an armed period; fired() keeps what happened until the next Arm.
  void Disarm() { armed_ = false; }
  // Whether a transaction failed by injection since the last Arm.
  bool fired() const { return fired_; }

  // Runs then() once, right after the next transaction named `op` (of any mode) returns, on
  // the thread that ran it: a test puts another event between a read and what its caller does
  // with what it read.
  void AfterNext(std::string op, std::function<void()> then) {
    std::lock_guard<std::mutex> lock(after_mu_);
    after_op_ = std::move(op);
    after_ = std::move(then);
  }

  Status Transact(std::string_view op, meta::TxnMode mode,
                  const std::function<Status(meta::Txn&)>& fn) override {
    Status s = TransactInner(op, mode, fn);
    std::function<void()> then;
    {
      std::lock_guard<std::mutex> lock(after_mu_);
      if (after_ && op == after_op_) then = std::exchange(after_, nullptr);
    }
    if (then) then();
    return s;
  }
  Result<uint64_t> AllocateIds(meta::Counter c, uint64_t n) override { return inner_->AllocateIds(c, n); }
  Status Init(InitMode mode) override { return inner_->Init(mode); }
  Status Sync() override { return inner_->Sync(); }
  meta::MetaStats Stats() const override { return inner_->Stats(); }
  std::string url() const override { return inner_->url(); }

 private:
  Status TransactInner(std::string_view op, meta::TxnMode mode,
                       const std::function<Status(meta::Txn&)>& fn) {
    if (!armed_ || mode != meta::TxnMode::kWrite || ops_.count(std::string(op)) == 0) {
      return inner_->Transact(op, mode, fn);
    }
    armed_ = false;
    const int fail_at = fail_at_;
    bool failed = false;
    Status s = inner_->Transact(op, mode, [&](meta::Txn& t) -> Status {
      FaultTxn ft(t, fail_at, &at_failure_);
      Status r = fn(ft);
      failed = ft.failed();
      return r;
    });
    fired_ = failed;
    return s;
  }

  meta::MetaEngine* const inner_;
  std::mutex after_mu_;
  std::string after_op_;
  std::function<void()> after_;
  std::set<std::string> ops_;
  int fail_at_ = 0;
  std::function<void()> at_failure_;
  bool armed_ = false;
  bool fired_ = false;
};

}  // namespace folio::fs::test
