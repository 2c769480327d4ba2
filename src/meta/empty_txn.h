// EmptyTxn: the Txn of a database that holds no Folio schema yet (before Init). Every read
// finds nothing (GetFormat returns nullopt, so the fs layer can say "not formatted"), and every
// write fails with the Status given at construction. Engine-neutral: any engine may use it.
//
// Thread safety: as any Txn (one thread, during fn).
#pragma once

#include "meta/meta_engine.h"

namespace folio::meta {

class EmptyTxn final : public Txn {
 public:
  explicit EmptyTxn(Status write_error) : write_error_(std::move(write_error)) {}

  Result<std::optional<Inode>> GetInode(InodeId) override { return std::optional<Inode>(); }
  Status PutInode(const Inode&) override { return write_error_; }
  Status DeleteInode(InodeId) override { return write_error_; }
  Result<std::vector<Inode>> ListInodes(InodeId, size_t) override {
    return std::vector<Inode>();
  }
  Result<std::optional<Entry>> GetEntry(InodeId, std::string_view) override {
    return std::optional<Entry>();
  }
  Status PutEntry(const Entry&) override { return write_error_; }
  Status DeleteEntry(InodeId, std::string_view) override { return write_error_; }
  Result<std::vector<Entry>> ListEntries(InodeId, std::string_view, size_t) override {
    return std::vector<Entry>();
  }
  Result<std::optional<std::string>> GetSymlink(InodeId) override {
    return std::optional<std::string>();
  }
  Status PutSymlink(InodeId, std::string_view) override { return write_error_; }
  Status DeleteSymlink(InodeId) override { return write_error_; }
  Result<std::optional<std::string>> GetXattr(InodeId, std::string_view) override {
    return std::optional<std::string>();
  }
  Result<std::vector<Xattr>> ListXattrs(InodeId) override { return std::vector<Xattr>(); }
  Status PutXattr(InodeId, std::string_view, std::string_view) override { return write_error_; }
  Status DeleteXattr(InodeId, std::string_view) override { return write_error_; }
  Result<std::vector<Slice>> GetChunk(InodeId, uint32_t) override { return std::vector<Slice>(); }
  Status AppendSlices(InodeId, uint32_t, std::span<const Slice>) override { return write_error_; }
  Status PutChunk(InodeId, uint32_t, const std::vector<Slice>&) override { return write_error_; }
  Result<std::vector<uint32_t>> ListChunks(InodeId) override { return std::vector<uint32_t>(); }
  Result<std::optional<SliceRef>> GetSliceRef(SliceId) override {
    return std::optional<SliceRef>();
  }
  Status PutSliceRef(const SliceRef&) override { return write_error_; }
  Status DeleteSliceRef(SliceId) override { return write_error_; }
  Result<std::vector<SliceRef>> ListSliceRefs(SliceId, size_t) override {
    return std::vector<SliceRef>();
  }
  Result<int64_t> GetCounter(Counter) override { return int64_t{0}; }
  Status AddToCounter(Counter, int64_t) override { return write_error_; }
  Result<std::optional<Session>> GetSession(SessionId) override {
    return std::optional<Session>();
  }
  Status PutSession(const Session&) override { return write_error_; }
  Status DeleteSession(SessionId) override { return write_error_; }
  Result<std::vector<Session>> ListSessions() override { return std::vector<Session>(); }
  Result<std::vector<FlockRecord>> GetFlocks(InodeId) override {
    return std::vector<FlockRecord>();
  }
  Status PutFlock(const FlockRecord&) override { return write_error_; }
  Status DeleteFlock(InodeId, SessionId, uint64_t) override { return write_error_; }
  Result<std::vector<PlockRecord>> GetPlocks(InodeId) override {
    return std::vector<PlockRecord>();
  }
  Status PutPlocks(InodeId, SessionId, uint64_t, const std::vector<PlockRecord>&) override {
    return write_error_;
  }
  Result<std::vector<InodeId>> ListLockedInodes(SessionId) override {
    return std::vector<InodeId>();
  }
  Status AddSustained(SessionId, InodeId) override { return write_error_; }
  Status RemoveSustained(SessionId, InodeId) override { return write_error_; }
  Result<std::vector<InodeId>> ListSustained(SessionId) override {
    return std::vector<InodeId>();
  }
  Result<bool> IsSustained(InodeId) override { return false; }
  Result<uint64_t> QueueDeletion(const Deletion&) override { return write_error_; }
  Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t, size_t) override {
    return std::vector<std::pair<uint64_t, Deletion>>();
  }
  Status RemoveDeletion(uint64_t) override { return write_error_; }
  Result<std::optional<FormatRecord>> GetFormat() override {
    return std::optional<FormatRecord>();
  }
  Status PutFormat(const FormatRecord&) override { return write_error_; }

 private:
  Status write_error_;
};

}  // namespace folio::meta
