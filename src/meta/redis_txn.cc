// RedisTxn, part 1: inodes, entries, symlinks, xattrs, chunks, slice refs, counters.
#include "meta/redis_txn.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "meta/redis_codec.h"

namespace folio::meta {
namespace {

std::string EncodeInode(const Inode& n) {
  ByteWriter w;
  w.U8(static_cast<uint8_t>(n.type)).U32(n.mode).U32(n.uid).U32(n.gid).U32(n.nlink);
  w.U64(n.size_bytes).U64(n.rdev).I64(n.atime_ns).I64(n.mtime_ns).I64(n.ctime_ns);
  w.U32(n.flags).U64(Raw(n.parent));
  return w.Take();
}

std::optional<Inode> DecodeInode(InodeId ino, std::string_view bytes) {
  ByteReader r(bytes);
  Inode n;
  n.ino = ino;
  const uint8_t type = r.U8();
  n.mode = r.U32();
  n.uid = r.U32();
  n.gid = r.U32();
  n.nlink = r.U32();
  n.size_bytes = r.U64();
  n.rdev = r.U64();
  n.atime_ns = r.I64();
  n.mtime_ns = r.I64();
  n.ctime_ns = r.I64();
  n.flags = r.U32();
  n.parent = InodeId{r.U64()};
  if (!r.Done() || !ValidFileType(type)) return std::nullopt;
  n.type = static_cast<FileType>(type);
  return n;
}

std::string EncodeEntryValue(const Entry& e) {
  return ByteWriter().U64(Raw(e.ino)).U8(static_cast<uint8_t>(e.type)).Take();
}

std::optional<Entry> DecodeEntry(InodeId parent, std::string name, std::string_view value) {
  ByteReader r(value);
  Entry e;
  e.parent = parent;
  e.name = std::move(name);
  e.ino = InodeId{r.U64()};
  const uint8_t type = r.U8();
  if (!r.Done() || !ValidFileType(type)) return std::nullopt;
  e.type = static_cast<FileType>(type);
  return e;
}

std::string EncodeSliceRef(const SliceRef& s) {
  return ByteWriter().U8(static_cast<uint8_t>(s.kind)).U32(s.object_bytes).I64(s.refs).Take();
}

std::optional<SliceRef> DecodeSliceRef(SliceId id, std::string_view bytes) {
  ByteReader r(bytes);
  SliceRef s;
  s.id = id;
  const uint8_t kind = r.U8();
  s.object_bytes = r.U32();
  s.refs = r.I64();
  if (!r.Done() || kind < 1 || kind > 3) return std::nullopt;
  s.kind = static_cast<SliceKind>(kind);
  return s;
}

}  // namespace

std::string Be64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * (7 - i)));
  return s;
}

std::string Be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * (3 - i)));
  return s;
}

uint64_t FromBe64(std::string_view s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(s[i]);
  return v;
}

Status RedisTxn::Writable(std::string_view method) const {
  if (mode_ == TxnMode::kWrite) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("{}: {} in a read-only (kRead) transaction", url_, method));
}

Status RedisTxn::Bad(std::string_view key, std::string_view what) const {
  return Status::Corruption(fmt::format("{}: key {}: {}", url_, key, what));
}

Result<std::vector<InodeId>> RedisTxn::IdIndex(const std::string& key) {
  FOLIO_ASSIGN_OR_RETURN(auto members,
                         kv_.ZRange(key, "", std::numeric_limits<size_t>::max()));
  std::vector<InodeId> out;
  out.reserve(members.size());
  for (const std::string& m : members) {
    if (m.size() != 8) return Bad(key, "an index member is not 8 bytes");
    out.push_back(InodeId{FromBe64(m)});
  }
  return out;
}

Status RedisTxn::Prefetch(std::span<const RecordKey> keys) {
  std::vector<RedisKv::Read> reads;
  reads.reserve(keys.size());
  for (const RecordKey& k : keys) {
    switch (k.kind) {
      case RecordKey::Kind::kInode: reads.push_back({k_.Inode(InodeId{k.id}), std::nullopt}); break;
      case RecordKey::Kind::kEntry:
        reads.push_back({k_.Dir(InodeId{k.id}), std::string(k.name)});
        break;
      case RecordKey::Kind::kXattr:
        reads.push_back({k_.Xattrs(InodeId{k.id}), std::string(k.name)});
        break;
      case RecordKey::Kind::kSliceRef:
        reads.push_back({k_.SliceRef(SliceId{k.id}), std::nullopt});
        break;
    }
  }
  return kv_.Prefetch(reads);
}

// ---- inodes ---------------------------------------------------------------------------------

Result<std::optional<Inode>> RedisTxn::GetInode(InodeId ino) {
  const std::string key = k_.Inode(ino);
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.Get(key));
  if (!v) return std::optional<Inode>();
  std::optional<Inode> n = DecodeInode(ino, *v);
  if (!n) return Bad(key, fmt::format("inode {}: a record of {} bytes that does not decode",
                                      Raw(ino), v->size()));
  return n;
}

Result<std::vector<std::optional<Inode>>> RedisTxn::GetInodes(std::span<const InodeId> inos) {
  std::vector<std::string> keys;
  keys.reserve(inos.size());
  for (InodeId ino : inos) keys.push_back(k_.Inode(ino));
  // A read transaction of many (readdir with attributes) does not WATCH them (RedisKv::MGet):
  // each is read whole, as it was at some moment of the transaction, not in its snapshot.
  const bool watch = mode_ == TxnMode::kWrite || keys.size() <= kWatchedGetInodesMax;
  std::vector<std::optional<Inode>> out(inos.size());
  // Unwatched, it carries the validation of the reads before it (the last read of a listing
  // with attributes: RedisKv::MGetEach).
  FOLIO_RETURN_IF_ERROR(kv_.MGetEach(std::move(keys), watch,
                                     [&](size_t i, std::optional<std::string_view> v) {
    if (!v) return Status::OK();
    out[i] = DecodeInode(inos[i], *v);
    if (!out[i]) {
      return Bad(k_.Inode(inos[i]), fmt::format("inode {}: a record of {} bytes that does not decode",
                                                Raw(inos[i]), v->size()));
    }
    return Status::OK();
  }, /*validate=*/!watch));
  return out;
}

Status RedisTxn::PutInode(const Inode& n) {
  if (Raw(n.ino) == 0 || !ValidFileType(static_cast<uint8_t>(n.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutInode: inode {} of type {}", url_,
                                               Raw(n.ino), static_cast<int>(n.type)));
  }
  FOLIO_RETURN_IF_ERROR(Writable("PutInode"));
  kv_.Set(k_.Inode(n.ino), EncodeInode(n));
  kv_.ZAdd(k_.Inodes(), Be64(Raw(n.ino)));
  return Status::OK();
}

Status RedisTxn::DeleteInode(InodeId ino) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteInode"));
  kv_.Del(k_.Inode(ino));
  kv_.ZRem(k_.Inodes(), Be64(Raw(ino)));
  return Status::OK();
}

Result<std::vector<Inode>> RedisTxn::ListInodes(InodeId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(auto members, kv_.ZRange(k_.Inodes(), Be64(Raw(after)), limit));
  std::vector<std::string> keys;
  std::vector<InodeId> ids;
  for (const std::string& m : members) {
    if (m.size() != 8) return Bad(k_.Inodes(), "an index member is not 8 bytes");
    ids.push_back(InodeId{FromBe64(m)});
    keys.push_back(k_.Inode(ids.back()));
  }
  std::vector<Inode> out;
  if (keys.empty()) return out;
  FOLIO_ASSIGN_OR_RETURN(auto values, kv_.MGet(keys));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!values[i]) return Bad(keys[i], "listed in the inode index but missing");
    std::optional<Inode> n = DecodeInode(ids[i], *values[i]);
    if (!n) return Bad(keys[i], "an inode record that does not decode");
    out.push_back(*n);
  }
  return out;
}

// ---- entries --------------------------------------------------------------------------------

Result<std::optional<Entry>> RedisTxn::GetEntry(InodeId parent, std::string_view name) {
  const std::string key = k_.Dir(parent);
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.HGet(key, std::string(name)));
  if (!v) return std::optional<Entry>();
  std::optional<Entry> e = DecodeEntry(parent, std::string(name), *v);
  if (!e) return Bad(key, fmt::format("entry '{}' does not decode", name));
  return e;
}

Status RedisTxn::PutEntry(const Entry& e) {
  if (e.name.empty() || !ValidFileType(static_cast<uint8_t>(e.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutEntry: name '{}' of type {} in {}", url_,
                                               e.name, static_cast<int>(e.type), Raw(e.parent)));
  }
  FOLIO_RETURN_IF_ERROR(Writable("PutEntry"));
  kv_.HSet(k_.Dir(e.parent), e.name, EncodeEntryValue(e));
  kv_.ZAdd(k_.DirNames(e.parent), e.name);
  return Status::OK();
}

Status RedisTxn::DeleteEntry(InodeId parent, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteEntry"));
  kv_.HDel(k_.Dir(parent), std::string(name));
  kv_.ZRem(k_.DirNames(parent), std::string(name));
  return Status::OK();
}

Result<std::vector<Entry>> RedisTxn::ListEntries(InodeId parent, std::string_view after,
                                                 size_t limit) {
  const std::string key = k_.Dir(parent);
  FOLIO_ASSIGN_OR_RETURN(auto pairs, kv_.ZRangeWithHash(k_.DirNames(parent), key, after, limit));
  std::vector<Entry> out;
  out.reserve(pairs.size());
  for (auto& [name, value] : pairs) {
    std::optional<Entry> e = DecodeEntry(parent, name, value);
    if (!e) return Bad(key, fmt::format("entry '{}' does not decode", name));
    out.push_back(std::move(*e));
  }
  return out;
}

// ---- symlinks and xattrs --------------------------------------------------------------------

Result<std::optional<std::string>> RedisTxn::GetSymlink(InodeId ino) {
  return kv_.Get(k_.Symlink(ino));
}

Status RedisTxn::PutSymlink(InodeId ino, std::string_view target) {
  FOLIO_RETURN_IF_ERROR(Writable("PutSymlink"));
  kv_.Set(k_.Symlink(ino), std::string(target));
  return Status::OK();
}

Status RedisTxn::DeleteSymlink(InodeId ino) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteSymlink"));
  kv_.Del(k_.Symlink(ino));
  return Status::OK();
}

Result<std::optional<std::string>> RedisTxn::GetXattr(InodeId ino, std::string_view name) {
  return kv_.HGet(k_.Xattrs(ino), std::string(name));
}

Result<std::vector<Xattr>> RedisTxn::ListXattrs(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(auto all, kv_.HGetAll(k_.Xattrs(ino)));
  std::vector<Xattr> out;
  out.reserve(all.size());
  for (auto& [name, value] : all) out.push_back(Xattr{name, value});
  return out;
}

Status RedisTxn::PutXattr(InodeId ino, std::string_view name, std::string_view value) {
  FOLIO_RETURN_IF_ERROR(Writable("PutXattr"));
  kv_.HSet(k_.Xattrs(ino), std::string(name), std::string(value));
  return Status::OK();
}

Status RedisTxn::DeleteXattr(InodeId ino, std::string_view name) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteXattr"));
  kv_.HDel(k_.Xattrs(ino), std::string(name));
  return Status::OK();
}

// ---- chunks and slice refs ------------------------------------------------------------------

Result<std::vector<Slice>> RedisTxn::GetChunk(InodeId ino, uint32_t index) {
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.Get(k_.Chunk(ino, index)));
  if (!v) return std::vector<Slice>();
  return DecodeSlices(*v, fmt::format("{}: inode {} chunk {}", url_, Raw(ino), index));
}

Status RedisTxn::AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: AppendSlices inode {} chunk {}", url_, Raw(ino), index)));
  }
  FOLIO_RETURN_IF_ERROR(Writable("AppendSlices"));
  if (slices.empty()) return Status::OK();
  kv_.Append(k_.Chunk(ino, index), EncodeSlices(slices));
  kv_.ZAdd(k_.Chunks(ino), Be32(index));
  return Status::OK();
}

Status RedisTxn::PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: PutChunk inode {} chunk {}", url_, Raw(ino), index)));
  }
  FOLIO_RETURN_IF_ERROR(Writable("PutChunk"));
  if (slices.empty()) {
    kv_.Del(k_.Chunk(ino, index));
    kv_.ZRem(k_.Chunks(ino), Be32(index));
    return Status::OK();
  }
  kv_.Set(k_.Chunk(ino, index), EncodeSlices(slices));
  kv_.ZAdd(k_.Chunks(ino), Be32(index));
  return Status::OK();
}

Result<std::vector<uint32_t>> RedisTxn::ListChunks(InodeId ino) {
  const std::string key = k_.Chunks(ino);
  FOLIO_ASSIGN_OR_RETURN(auto members, kv_.ZRange(key, "", std::numeric_limits<size_t>::max()));
  std::vector<uint32_t> out;
  for (const std::string& m : members) {
    if (m.size() != 4) return Bad(key, "a chunk index member is not 4 bytes");
    out.push_back(static_cast<uint32_t>(FromBe64(std::string(4, '\0') + m)));
  }
  return out;
}

Result<std::optional<SliceRef>> RedisTxn::GetSliceRef(SliceId id) {
  const std::string key = k_.SliceRef(id);
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.Get(key));
  if (!v) return std::optional<SliceRef>();
  std::optional<SliceRef> r = DecodeSliceRef(id, *v);
  if (!r) return Bad(key, "a slice ref record that does not decode");
  return r;
}

Status RedisTxn::PutSliceRef(const SliceRef& r) {
  const auto kind = static_cast<uint8_t>(r.kind);
  if (Raw(r.id) == 0 || kind < 1 || kind > 3) {
    return Status::InvalidArgument(
        fmt::format("{}: PutSliceRef: slice {} of kind {}", url_, Raw(r.id), kind));
  }
  FOLIO_RETURN_IF_ERROR(Writable("PutSliceRef"));
  kv_.Set(k_.SliceRef(r.id), EncodeSliceRef(r));
  kv_.ZAdd(k_.SliceRefs(), Be64(Raw(r.id)));
  return Status::OK();
}

Status RedisTxn::DeleteSliceRef(SliceId id) {
  FOLIO_RETURN_IF_ERROR(Writable("DeleteSliceRef"));
  kv_.Del(k_.SliceRef(id));
  kv_.ZRem(k_.SliceRefs(), Be64(Raw(id)));
  return Status::OK();
}

Result<std::vector<SliceRef>> RedisTxn::ListSliceRefs(SliceId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(auto members, kv_.ZRange(k_.SliceRefs(), Be64(Raw(after)), limit));
  std::vector<std::string> keys;
  std::vector<SliceId> ids;
  for (const std::string& m : members) {
    if (m.size() != 8) return Bad(k_.SliceRefs(), "an index member is not 8 bytes");
    ids.push_back(SliceId{FromBe64(m)});
    keys.push_back(k_.SliceRef(ids.back()));
  }
  std::vector<SliceRef> out;
  if (keys.empty()) return out;
  FOLIO_ASSIGN_OR_RETURN(auto values, kv_.MGet(keys));
  for (size_t i = 0; i < keys.size(); ++i) {
    std::optional<SliceRef> r = values[i] ? DecodeSliceRef(ids[i], *values[i]) : std::nullopt;
    if (!r) return Bad(keys[i], "listed in the slice ref index but missing or damaged");
    out.push_back(*r);
  }
  return out;
}

// ---- counters -------------------------------------------------------------------------------

Result<int64_t> RedisTxn::GetCounter(Counter c) {
  const std::string key = k_.Counter(c);
  FOLIO_ASSIGN_OR_RETURN(auto v, kv_.Get(key));
  if (!v) return int64_t{0};
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size()) return Bad(key, "not an integer");
  return out;
}

Status RedisTxn::AddToCounter(Counter c, int64_t delta) {
  FOLIO_RETURN_IF_ERROR(Writable("AddToCounter"));
  kv_.IncrBy(k_.Counter(c), delta);
  return Status::OK();
}

}  // namespace folio::meta
