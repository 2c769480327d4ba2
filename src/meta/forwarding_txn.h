// ForwardingTxn: a Txn that forwards every call to the Txn In() returns; a subclass overrides
// the calls it treats differently (meta/cached_engine.cc; tests' in-memory engines).
//
// Thread safety: as any Txn (one thread, during fn).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "meta/meta_engine.h"

namespace folio::meta {

class ForwardingTxn : public Txn {
 public:
  Status Prefetch(std::span<const RecordKey> keys) override { return In().Prefetch(keys); }
  Result<std::optional<Inode>> GetInode(InodeId ino) override { return In().GetInode(ino); }
  Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override {
    return In().GetInodes(inos);
  }
  Status PutInode(const Inode& inode) override { return In().PutInode(inode); }
  Status DeleteInode(InodeId ino) override { return In().DeleteInode(ino); }
  Result<std::vector<Inode>> ListInodes(InodeId after, size_t limit) override {
    return In().ListInodes(after, limit);
  }
  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override {
    return In().GetEntry(parent, name);
  }
  Status PutEntry(const Entry& entry) override { return In().PutEntry(entry); }
  Status DeleteEntry(InodeId parent, std::string_view name) override {
    return In().DeleteEntry(parent, name);
  }
  Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after,
                                         size_t limit) override {
    return In().ListEntries(parent, after, limit);
  }
  Result<std::optional<std::string>> GetSymlink(InodeId ino) override {
    return In().GetSymlink(ino);
  }
  Status PutSymlink(InodeId ino, std::string_view target) override {
    return In().PutSymlink(ino, target);
  }
  Status DeleteSymlink(InodeId ino) override { return In().DeleteSymlink(ino); }
  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override {
    return In().GetXattr(ino, name);
  }
  Result<std::vector<Xattr>> ListXattrs(InodeId ino) override { return In().ListXattrs(ino); }
  Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override {
    return In().PutXattr(ino, name, value);
  }
  Status DeleteXattr(InodeId ino, std::string_view name) override {
    return In().DeleteXattr(ino, name);
  }
  Result<std::vector<Slice>> GetChunk(InodeId ino, uint32_t index) override {
    return In().GetChunk(ino, index);
  }
  Status AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) override {
    return In().AppendSlices(ino, index, slices);
  }
  Status PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) override {
    return In().PutChunk(ino, index, slices);
  }
  Result<std::vector<uint32_t>> ListChunks(InodeId ino) override { return In().ListChunks(ino); }
  Result<std::optional<SliceRef>> GetSliceRef(SliceId id) override {
    return In().GetSliceRef(id);
  }
  Status PutSliceRef(const SliceRef& ref) override { return In().PutSliceRef(ref); }
  Status DeleteSliceRef(SliceId id) override { return In().DeleteSliceRef(id); }
  Result<std::vector<SliceRef>> ListSliceRefs(SliceId after, size_t limit) override {
    return In().ListSliceRefs(after, limit);
  }
  Result<int64_t> GetCounter(Counter c) override { return In().GetCounter(c); }
  Status AddToCounter(Counter c, int64_t delta) override { return In().AddToCounter(c, delta); }
  Result<std::optional<Session>> GetSession(SessionId id) override {
    return In().GetSession(id);
  }
  Status PutSession(const Session& session) override { return In().PutSession(session); }
  Status DeleteSession(SessionId id) override { return In().DeleteSession(id); }
  Result<std::vector<Session>> ListSessions() override { return In().ListSessions(); }
  Result<std::vector<FlockRecord>> GetFlocks(InodeId ino) override { return In().GetFlocks(ino); }
  Status PutFlock(const FlockRecord& lock) override { return In().PutFlock(lock); }
  Status DeleteFlock(InodeId ino, SessionId session, uint64_t owner) override {
    return In().DeleteFlock(ino, session, owner);
  }
  Result<std::vector<PlockRecord>> GetPlocks(InodeId ino) override { return In().GetPlocks(ino); }
  Status PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                   const std::vector<PlockRecord>& ranges) override {
    return In().PutPlocks(ino, session, owner, ranges);
  }
  Result<std::vector<InodeId>> ListLockedInodes(SessionId session) override {
    return In().ListLockedInodes(session);
  }
  Status AddSustained(SessionId session, InodeId ino) override {
    return In().AddSustained(session, ino);
  }
  Status RemoveSustained(SessionId session, InodeId ino) override {
    return In().RemoveSustained(session, ino);
  }
  Result<std::vector<InodeId>> ListSustained(SessionId session) override {
    return In().ListSustained(session);
  }
  Result<bool> IsSustained(InodeId ino) override { return In().IsSustained(ino); }
  Result<uint64_t> QueueDeletion(const Deletion& item) override {
    return In().QueueDeletion(item);
  }
  Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t due_ns,
                                                                   size_t limit) override {
    return In().ListDeletions(due_ns, limit);
  }
  Status RemoveDeletion(uint64_t key) override { return In().RemoveDeletion(key); }
  Result<std::optional<FormatRecord>> GetFormat() override { return In().GetFormat(); }
  Status PutFormat(const FormatRecord& format) override { return In().PutFormat(format); }

 protected:
  virtual Txn& In() = 0;
};

}  // namespace folio::meta
