// RedisTxn: the Txn of the Redis engine: Folio's records mapped onto Redis keys (the layout is
// in docs/format/meta.md, "Redis schema"), read and written through a RedisKv (WATCH on every
// key read, writes buffered for MULTI / EXEC). Writes in a kRead transaction are
// InvalidArgument; records that do not decode are Corruption naming the key.
//
// Methods are split over redis_txn.cc (inodes, entries, symlinks, xattrs, chunks, slice refs,
// counters) and redis_txn_locks.cc (sessions, locks, sustained inodes, deletions, format).
//
// Thread safety: as any Txn (one thread, during fn).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "meta/meta_engine.h"
#include "meta/record_checks.h"
#include "meta/redis_kv.h"

namespace folio::meta {

// The names of a volume's keys: "<prefix>:<kind>[:<id>]" (ids in decimal).
class RedisKeys {
 public:
  explicit RedisKeys(std::string_view prefix) : p_(std::string(prefix) + ":") {}
  const std::string& prefix() const { return p_; }  // "folio:"
  std::string Meta() const { return p_ + "meta"; }
  std::string Inode(InodeId ino) const { return Id("i:", Raw(ino)); }
  std::string Inodes() const { return p_ + "inodes"; }
  std::string Dir(InodeId parent) const { return Id("d:", Raw(parent)); }
  std::string DirNames(InodeId parent) const { return Id("dn:", Raw(parent)); }
  std::string Symlink(InodeId ino) const { return Id("s:", Raw(ino)); }
  std::string Xattrs(InodeId ino) const { return Id("x:", Raw(ino)); }
  std::string Chunk(InodeId ino, uint32_t index) const {
    return Id("c:", Raw(ino)) + ":" + std::to_string(index);
  }
  std::string Chunks(InodeId ino) const { return Id("ci:", Raw(ino)); }
  std::string SliceRef(SliceId id) const { return Id("r:", Raw(id)); }
  std::string SliceRefs() const { return p_ + "refs"; }
  std::string Counter(meta::Counter c) const { return p_ + "n:" + std::string(CounterName(c)); }
  std::string DeletionSeq() const { return p_ + "n:deletion_seq"; }
  std::string Session(SessionId id) const { return Id("sess:", Raw(id)); }
  std::string Sessions() const { return p_ + "sessions"; }
  std::string Flocks(InodeId ino) const { return Id("fl:", Raw(ino)); }
  std::string Plocks(InodeId ino) const { return Id("pl:", Raw(ino)); }
  std::string Locked(SessionId s) const { return Id("lk:", Raw(s)); }
  std::string Sustained(SessionId s) const { return Id("su:", Raw(s)); }
  std::string SustainedBy(InodeId ino) const { return Id("sui:", Raw(ino)); }
  std::string Deletions() const { return p_ + "del"; }
  std::string CommitMarker(uint64_t conn_id) const { return Id("tx:", conn_id); }

 private:
  // One allocation (a readdir of 1000 names builds 1000 inode keys: concatenated temporaries
  // were a ninth of its client CPU).
  std::string Id(std::string_view kind, uint64_t id) const {
    char digits[20];
    const auto end = std::to_chars(digits, digits + sizeof(digits), id).ptr;
    std::string s;
    s.reserve(p_.size() + kind.size() + static_cast<size_t>(end - digits));
    s.append(p_).append(kind).append(digits, end);
    return s;
  }
  std::string p_;
};

// Big-endian encodings: index members sort by number.
std::string Be64(uint64_t v);
std::string Be32(uint32_t v);
uint64_t FromBe64(std::string_view s);  // REQUIRES: s.size() >= 8

class RedisTxn final : public Txn {
 public:
  RedisTxn(RedisKv& kv, const RedisKeys& keys, TxnMode mode, std::string_view url,
           RedisConn& conn)
      : kv_(kv), k_(keys), mode_(mode), url_(url), conn_(conn) {}

  Status Prefetch(std::span<const RecordKey> keys) override;
  Result<std::optional<Inode>> GetInode(InodeId ino) override;
  Result<std::vector<std::optional<Inode>>> GetInodes(std::span<const InodeId> inos) override;
  Status PutInode(const Inode& inode) override;
  Status DeleteInode(InodeId ino) override;
  Result<std::vector<Inode>> ListInodes(InodeId after, size_t limit) override;

  Result<std::optional<Entry>> GetEntry(InodeId parent, std::string_view name) override;
  Status PutEntry(const Entry& entry) override;
  Status DeleteEntry(InodeId parent, std::string_view name) override;
  Result<std::vector<Entry>> ListEntries(InodeId parent, std::string_view after,
                                         size_t limit) override;

  Result<std::optional<std::string>> GetSymlink(InodeId ino) override;
  Status PutSymlink(InodeId ino, std::string_view target) override;
  Status DeleteSymlink(InodeId ino) override;

  Result<std::optional<std::string>> GetXattr(InodeId ino, std::string_view name) override;
  Result<std::vector<Xattr>> ListXattrs(InodeId ino) override;
  Status PutXattr(InodeId ino, std::string_view name, std::string_view value) override;
  Status DeleteXattr(InodeId ino, std::string_view name) override;

  Result<std::vector<Slice>> GetChunk(InodeId ino, uint32_t index) override;
  Status AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) override;
  Status PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) override;
  Result<std::vector<uint32_t>> ListChunks(InodeId ino) override;

  Result<std::optional<SliceRef>> GetSliceRef(SliceId id) override;
  Status PutSliceRef(const SliceRef& ref) override;
  Status DeleteSliceRef(SliceId id) override;
  Result<std::vector<SliceRef>> ListSliceRefs(SliceId after, size_t limit) override;

  Result<int64_t> GetCounter(Counter c) override;
  Status AddToCounter(Counter c, int64_t delta) override;

  Result<std::optional<Session>> GetSession(SessionId id) override;
  Status PutSession(const Session& session) override;
  Status DeleteSession(SessionId id) override;
  Result<std::vector<Session>> ListSessions() override;

  Result<std::vector<FlockRecord>> GetFlocks(InodeId ino) override;
  Status PutFlock(const FlockRecord& lock) override;
  Status DeleteFlock(InodeId ino, SessionId session, uint64_t owner) override;
  Result<std::vector<PlockRecord>> GetPlocks(InodeId ino) override;
  Status PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                   const std::vector<PlockRecord>& ranges) override;
  Result<std::vector<InodeId>> ListLockedInodes(SessionId session) override;

  Status AddSustained(SessionId session, InodeId ino) override;
  Status RemoveSustained(SessionId session, InodeId ino) override;
  Result<std::vector<InodeId>> ListSustained(SessionId session) override;
  Result<bool> IsSustained(InodeId ino) override;

  Result<uint64_t> QueueDeletion(const Deletion& item) override;
  Result<std::vector<std::pair<uint64_t, Deletion>>> ListDeletions(int64_t due_ns,
                                                                   size_t limit) override;
  Status RemoveDeletion(uint64_t key) override;

  Result<std::optional<FormatRecord>> GetFormat() override;
  Status PutFormat(const FormatRecord& format) override;

 private:
  // InvalidArgument for a write in a kRead transaction, naming the method.
  Status Writable(std::string_view method) const;
  Status Bad(std::string_view key, std::string_view what) const;
  // The inode ids of an index of Be64 members (all of them).
  Result<std::vector<InodeId>> IdIndex(const std::string& key);
  // Drops ino from the session's lock index when the session holds no lock on it any more.
  Status UnindexLockIfUnused(InodeId ino, SessionId session);

  RedisKv& kv_;
  const RedisKeys& k_;
  TxnMode mode_;
  // GetInodes of more inodes than this in a read transaction does not WATCH them.
  static constexpr size_t kWatchedGetInodesMax = 64;
  std::string_view url_;
  RedisConn& conn_;  // QueueDeletion's key counter, incremented outside the transaction
};

}  // namespace folio::meta
