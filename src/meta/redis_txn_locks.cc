// RedisTxn, part 2: sessions, flock and POSIX locks, sustained inodes, the deletion queue and
// the format record.
#include <fmt/format.h>

#include <limits>

#include "meta/redis_codec.h"
#include "meta/redis_txn.h"

namespace folio::meta {
namespace {

constexpr size_t kPlockRangeBytes = 21;  // pid u32, type u8, start u64, end u64
constexpr size_t kDeletionMemberBytes = 8 + 26;

std::string EncodeSession(const Session& s) {
  ByteWriter w;
  w.Str(s.host).U32(s.pid).Str(s.mountpoint).Str(s.version).U8(SessionFlags(s));
  w.I64(s.start_ns).I64(s.heartbeat_ns);
  return w.Take();
}

std::optional<Session> DecodeSession(SessionId id, std::string_view bytes) {
  ByteReader r(bytes);
  Session s;
  s.id = id;
  s.host = r.Str();
  s.pid = r.U32();
  s.mountpoint = r.Str();
  s.version = r.Str();
  const uint8_t ro = r.U8();
  s.start_ns = r.I64();
  s.heartbeat_ns = r.I64();
  if (!r.Done() || !ValidSessionFlags(ro)) return std::nullopt;
  SetSessionFlags(&s, ro);
  return s;
}

// A lock hash's field: the holder.
std::string LockField(SessionId session, uint64_t owner) {
  return Be64(Raw(session)) + Be64(owner);
}

// The member of the deletion index: the key (so members sort by it), then the item.
std::string DeletionMember(uint64_t key, const Deletion& d) {
  ByteWriter w;
  w.U8(static_cast<uint8_t>(d.kind)).U64(d.id).U8(static_cast<uint8_t>(d.slice_kind));
  w.U64(d.bytes).I64(d.not_before_ns);
  return Be64(key) + w.Take();
}

std::optional<std::pair<uint64_t, Deletion>> DecodeDeletion(std::string_view m) {
  if (m.size() != kDeletionMemberBytes) return std::nullopt;
  ByteReader r(m.substr(8));
  Deletion d;
  const uint8_t kind = r.U8();
  d.id = r.U64();
  const uint8_t slice_kind = r.U8();
  d.bytes = r.U64();
  d.not_before_ns = r.I64();
  if (!r.Done() || kind < 1 || kind > 2 || slice_kind > 3) return std::nullopt;
  d.kind = static_cast<DeletionKind>(kind);
  d.slice_kind = static_cast<SliceKind>(slice_kind);
  return std::make_pair(FromBe64(m), d);
}

}  // namespace

// ---- sessions -------------------------------------------------------------------------------

Result<std::optional<Session>> RedisTxn::GetSession(SessionId id) {
  const std::string key = k_.Session(id);
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.Get(key));
  if (!v) return std::optional<Session>();
  std::optional<Session> s = DecodeSession(id, *v);
  if (!s) return Bad(key, "a session record that does not decode");
  return s;
}

Status RedisTxn::PutSession(const Session& s) {
  if (Raw(s.id) == 0) {
    return Status::InvalidArgument(fmt::format("{}: PutSession: session id 0", url_));
  }
  FOLIO_RETURN_IF_ERROR(Writable("PutSession"));
  kv_.Set(k_.Session(s.id), EncodeSession(s));
  kv_.ZAdd(k_.Sessions(), Be64(Raw(s.id)));
  return Status::OK();
}

Status RedisTxn::DeleteSession(SessionId id) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteSession"));
  kv_.Del(k_.Session(id));
  kv_.ZRem(k_.Sessions(), Be64(Raw(id)));
  return Status::OK();
}

Result<std::vector<Session>> RedisTxn::ListSessions() {
  FOLIO_ASSIGN_OR_RETURN(std::vector<InodeId> ids, IdIndex(k_.Sessions()));
  std::vector<std::string> keys;
  for (InodeId id : ids) keys.push_back(k_.Session(SessionId{Raw(id)}));
  std::vector<Session> out;
  if (keys.empty()) return out;
  FOLIO_ASSIGN_OR_RETURN(auto values, kv_.MGet(keys));
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<Session> s =
        values[i] ? DecodeSession(SessionId{Raw(ids[i])}, *values[i]) : std::nullopt;
    if (!s) return Bad(keys[i], "listed in the session index but missing or damaged");
    out.push_back(std::move(*s));
  }
  return out;
}

// ---- locks ----------------------------------------------------------------------------------

Result<std::vector<FlockRecord>> RedisTxn::GetFlocks(InodeId ino) {
  const std::string key = k_.Flocks(ino);
  FOLIO_ASSIGN_OR_RETURN(auto all, kv_.HGetAll(key));
  std::vector<FlockRecord> out;
  for (const auto& [field, value] : all) {
    if (field.size() != 16 || value.size() != 1 || !ValidLockType(value[0])) {
      return Bad(key, "a flock record that does not decode");
    }
    out.push_back(FlockRecord{ino, SessionId{FromBe64(field)}, FromBe64(field.substr(8)),
                              static_cast<LockType>(value[0])});
  }
  return out;
}

Status RedisTxn::PutFlock(const FlockRecord& l) {
  FOLIO_RETURN_IF_ERROR(Writable("PutFlock"));
  kv_.HSet(k_.Flocks(l.ino), LockField(l.session, l.owner),
           std::string(1, static_cast<char>(l.type)));
  kv_.ZAdd(k_.Locked(l.session), Be64(Raw(l.ino)));
  return Status::OK();
}

Status RedisTxn::DeleteFlock(InodeId ino, SessionId session, uint64_t owner) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteFlock"));
  kv_.HDel(k_.Flocks(ino), LockField(session, owner));
  return UnindexLockIfUnused(ino, session);
}

Result<std::vector<PlockRecord>> RedisTxn::GetPlocks(InodeId ino) {
  const std::string key = k_.Plocks(ino);
  FOLIO_ASSIGN_OR_RETURN(auto all, kv_.HGetAll(key));
  std::vector<PlockRecord> out;
  for (const auto& [field, value] : all) {
    if (field.size() != 16 || value.size() % kPlockRangeBytes != 0) {
      return Bad(key, "a POSIX lock record that does not decode");
    }
    ByteReader r(value);
    while (r.left() > 0) {
      PlockRecord p{ino, SessionId{FromBe64(field)}, FromBe64(field.substr(8))};
      p.pid = r.U32();
      const uint8_t type = r.U8();
      p.start = r.U64();
      p.end = r.U64();
      if (!r.ok() || !ValidLockType(type)) return Bad(key, "a POSIX lock range of bad type");
      p.type = static_cast<LockType>(type);
      out.push_back(p);
    }
  }
  return out;
}

Status RedisTxn::PutPlocks(InodeId ino, SessionId session, uint64_t owner,
                           const std::vector<PlockRecord>& ranges) {
  FOLIO_RETURN_IF_ERROR(Writable("PutPlocks"));
  if (ranges.empty()) {
    kv_.HDel(k_.Plocks(ino), LockField(session, owner));
    return UnindexLockIfUnused(ino, session);
  }
  ByteWriter w;
  // The records' own ino / session / owner are those of the call: one owner's ranges.
  for (const PlockRecord& r : ranges) {
    w.U32(r.pid).U8(static_cast<uint8_t>(r.type)).U64(r.start).U64(r.end);
  }
  kv_.HSet(k_.Plocks(ino), LockField(session, owner), w.Take());
  kv_.ZAdd(k_.Locked(session), Be64(Raw(ino)));
  return Status::OK();
}

Status RedisTxn::UnindexLockIfUnused(InodeId ino, SessionId session) {
  const std::string mine = Be64(Raw(session));
  for (const std::string& key : {k_.Flocks(ino), k_.Plocks(ino)}) {
    FOLIO_ASSIGN_OR_RETURN(auto all, kv_.HGetAll(key));
    for (const auto& [field, value] : all) {
      if (field.starts_with(mine)) return Status::OK();  // still holds one
    }
  }
  kv_.ZRem(k_.Locked(session), Be64(Raw(ino)));
  return Status::OK();
}

Result<std::vector<InodeId>> RedisTxn::ListLockedInodes(SessionId session) {
  return IdIndex(k_.Locked(session));
}

// ---- sustained inodes -----------------------------------------------------------------------

Status RedisTxn::AddSustained(SessionId session, InodeId ino) {
  FOLIO_RETURN_IF_ERROR(Writable("AddSustained"));
  kv_.ZAdd(k_.Sustained(session), Be64(Raw(ino)));
  kv_.ZAdd(k_.SustainedBy(ino), Be64(Raw(session)));
  return Status::OK();
}

Status RedisTxn::RemoveSustained(SessionId session, InodeId ino) {
  FOLIO_RETURN_IF_ERROR(Writable("RemoveSustained"));
  kv_.ZRem(k_.Sustained(session), Be64(Raw(ino)));
  kv_.ZRem(k_.SustainedBy(ino), Be64(Raw(session)));
  return Status::OK();
}

Result<std::vector<InodeId>> RedisTxn::ListSustained(SessionId session) {
  return IdIndex(k_.Sustained(session));
}

Result<bool> RedisTxn::IsSustained(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(auto holders, kv_.ZRange(k_.SustainedBy(ino), "", 1));
  return !holders.empty();
}

// ---- deletion queue -------------------------------------------------------------------------

Result<uint64_t> RedisTxn::QueueDeletion(const Deletion& d) {
  const auto kind = static_cast<uint8_t>(d.kind);
  if (kind < 1 || kind > 2) {
    return Status::InvalidArgument(
        fmt::format("{}: QueueDeletion: kind {} (must be 1 slice or 2 inode)", url_, kind));
  }
  FOLIO_RETURN_IF_ERROR(Writable("QueueDeletion"));
  // The key comes from a counter incremented at once, outside the transaction: keys are unique
  // and increasing across clients, and one lost with a failed transaction is a harmless gap.
  FOLIO_ASSIGN_OR_RETURN(RedisReply r, conn_.Run1({"INCR", k_.DeletionSeq()}));
  if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
    return UnexpectedReply(url_, "INCR " + k_.DeletionSeq(), r.get());
  }
  const auto key = static_cast<uint64_t>(r->integer);
  kv_.ZAdd(k_.Deletions(), DeletionMember(key, d));
  return key;
}

Result<std::vector<std::pair<uint64_t, Deletion>>> RedisTxn::ListDeletions(int64_t due_ns,
                                                                           size_t limit) {
  constexpr size_t kPage = 256;
  std::vector<std::pair<uint64_t, Deletion>> out;
  std::string cursor;
  while (out.size() < limit) {
    FOLIO_ASSIGN_OR_RETURN(auto members, kv_.ZRange(k_.Deletions(), cursor, kPage));
    for (const std::string& m : members) {
      auto item = DecodeDeletion(m);
      if (!item) return Bad(k_.Deletions(), "a deletion record that does not decode");
      if (item->second.not_before_ns <= due_ns && out.size() < limit) out.push_back(*item);
    }
    if (members.size() < kPage) break;
    cursor = members.back();
  }
  return out;
}

Status RedisTxn::RemoveDeletion(uint64_t key) {
  FOLIO_RETURN_IF_ERROR(Writable("RemoveDeletion"));
  kv_.ZRemPrefix(k_.Deletions(), Be64(key));
  return Status::OK();
}

// ---- format record --------------------------------------------------------------------------

Result<std::optional<FormatRecord>> RedisTxn::GetFormat() {
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.HGet(k_.Meta(), "format"));
  if (!v) return std::optional<FormatRecord>();
  auto f = DecodeFormat(*v);
  if (!f.ok()) return f.status().WithContext(fmt::format("{}: format record", url_));
  return std::optional<FormatRecord>(std::move(*f));
}

Status RedisTxn::PutFormat(const FormatRecord& format) {
  FOLIO_RETURN_IF_ERROR(ValidateFormat(format).WithContext(fmt::format("{}: PutFormat", url_)));
  FOLIO_RETURN_IF_ERROR(Writable("PutFormat"));
  kv_.HSet(k_.Meta(), "format", EncodeFormat(format));
  return Status::OK();
}

}  // namespace folio::meta
