// PgTxn, part 1: inodes, entries, symlinks, xattrs, chunks, slice refs, counters.
#include <fmt/format.h>

#include <map>

#include "meta/pg_txn.h"

namespace folio::meta {
namespace {

using P = PgParam;

constexpr const char* kInodeColumns =
    "ino, type, mode, uid, gid, nlink, size, rdev, atime_ns, mtime_ns, ctime_ns, flags, parent";

std::optional<Inode> ReadInode(const PgRows& s, int row) {
  Inode n;
  n.ino = InodeId{s.U64(row, 0)};
  const int64_t type = s.Int(row, 1);
  if (!ValidFileType(type) || !FitsU32(s.Int(row, 2)) || !FitsU32(s.Int(row, 3)) ||
      !FitsU32(s.Int(row, 4)) || !FitsU32(s.Int(row, 5)) || !FitsU32(s.Int(row, 11))) {
    return std::nullopt;
  }
  n.type = static_cast<FileType>(type);
  n.mode = static_cast<uint32_t>(s.Int(row, 2));
  n.uid = static_cast<uint32_t>(s.Int(row, 3));
  n.gid = static_cast<uint32_t>(s.Int(row, 4));
  n.nlink = static_cast<uint32_t>(s.Int(row, 5));
  n.size_bytes = s.U64(row, 6);
  n.rdev = s.U64(row, 7);
  n.atime_ns = s.Int(row, 8);
  n.mtime_ns = s.Int(row, 9);
  n.ctime_ns = s.Int(row, 10);
  n.flags = static_cast<uint32_t>(s.Int(row, 11));
  n.parent = InodeId{s.U64(row, 12)};
  return n;
}

std::optional<SliceRef> ReadSliceRef(const PgRows& s, int row) {
  SliceRef r;
  r.id = SliceId{s.U64(row, 0)};
  if (s.Int(row, 1) < 1 || s.Int(row, 1) > 3 || !FitsU32(s.Int(row, 2))) return std::nullopt;
  r.kind = static_cast<SliceKind>(s.Int(row, 1));
  r.object_bytes = static_cast<uint32_t>(s.Int(row, 2));
  r.refs = s.Int(row, 3);
  return r;
}

}  // namespace

Status PgTxn::BadRow(std::string_view what) const {
  return Status::Corruption(fmt::format("{}: {}", conn_.display(), what));
}

Status PgTxn::Writable(std::string_view method) const {
  if (mode_ == TxnMode::kWrite) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("{}: {} in a read-only (kRead) transaction", conn_.display(), method));
}

Status PgTxn::Write(std::string_view method, std::string_view sql,
                    const std::vector<PgParam>& params) {
  FOLIO_RETURN_IF_ERROR(Writable(method));
  return conn_.Queue(sql, params);  // sent with the next read or the commit
}

Result<std::vector<InodeId>> PgTxn::InodeIds(std::string_view sql,
                                             const std::vector<PgParam>& params) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec(sql, params));
  std::vector<InodeId> out;
  for (int i = 0; i < r.size(); ++i) out.push_back(InodeId{r.U64(i, 0)});
  return out;
}

// ---- inodes ---------------------------------------------------------------------------------

Result<std::optional<Inode>> PgTxn::GetInode(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec(fmt::format("SELECT {} FROM inodes WHERE ino = $1", kInodeColumns),
                           {P::U(Raw(ino))}));
  if (r.size() == 0) return std::optional<Inode>();
  std::optional<Inode> n = ReadInode(r, 0);
  if (!n) return BadRow(fmt::format("inode {}: a column is out of range", Raw(ino)));
  return n;
}

Result<std::vector<std::optional<Inode>>> PgTxn::GetInodes(std::span<const InodeId> inos) {
  std::vector<std::optional<Inode>> out(inos.size());
  if (inos.empty()) return out;
  // One statement for all: the ids as a bigint[] literal (bit for bit, as P::U).
  std::string ids = "{";
  for (size_t i = 0; i < inos.size(); ++i) {
    ids += fmt::format("{}{}", i ? "," : "", static_cast<int64_t>(Raw(inos[i])));
  }
  ids += "}";
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec(fmt::format("SELECT {} FROM inodes WHERE ino = ANY($1::text::bigint[])",
                                       kInodeColumns),
                           {P::T(ids)}));
  std::map<uint64_t, size_t> row_of;
  for (int i = 0; i < r.size(); ++i) row_of[r.U64(i, 0)] = static_cast<size_t>(i);
  for (size_t i = 0; i < inos.size(); ++i) {
    auto it = row_of.find(Raw(inos[i]));
    if (it == row_of.end()) continue;
    out[i] = ReadInode(r, static_cast<int>(it->second));
    if (!out[i]) return BadRow(fmt::format("inode {}: a column is out of range", Raw(inos[i])));
  }
  return out;
}

Status PgTxn::PutInode(const Inode& n) {
  if (Raw(n.ino) == 0 || !ValidFileType(static_cast<int64_t>(n.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutInode: inode {} of type {}",
                                               conn_.display(), Raw(n.ino),
                                               static_cast<int>(n.type)));
  }
  return Write("PutInode",
               fmt::format("INSERT INTO inodes({}) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                           "$10, $11, $12, $13) ON CONFLICT(ino) DO UPDATE SET type = "
                           "excluded.type, mode = excluded.mode, uid = excluded.uid, gid = "
                           "excluded.gid, nlink = excluded.nlink, size = excluded.size, rdev = "
                           "excluded.rdev, atime_ns = excluded.atime_ns, mtime_ns = "
                           "excluded.mtime_ns, ctime_ns = excluded.ctime_ns, flags = "
                           "excluded.flags, parent = excluded.parent",
                           kInodeColumns),
               {P::U(Raw(n.ino)), P::I(static_cast<int64_t>(n.type)), P::I(n.mode), P::I(n.uid),
                P::I(n.gid), P::I(n.nlink), P::U(n.size_bytes), P::U(n.rdev), P::I(n.atime_ns),
                P::I(n.mtime_ns), P::I(n.ctime_ns), P::I(n.flags), P::U(Raw(n.parent))});
}

Status PgTxn::DeleteInode(InodeId ino) {
  return Write("DeleteInode", "DELETE FROM inodes WHERE ino = $1", {P::U(Raw(ino))});
}

Result<std::vector<Inode>> PgTxn::ListInodes(InodeId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r,
      conn_.Exec(fmt::format("SELECT {} FROM inodes WHERE ino > $1 ORDER BY ino LIMIT $2",
                             kInodeColumns),
                 {P::U(Raw(after)), P::I(SqlLimit(limit))}));
  std::vector<Inode> out;
  for (int i = 0; i < r.size(); ++i) {
    std::optional<Inode> n = ReadInode(r, i);
    if (!n) return BadRow(fmt::format("inode {}: a column is out of range", r.Int(i, 0)));
    out.push_back(*n);
  }
  return out;
}

// ---- entries --------------------------------------------------------------------------------

Result<std::optional<Entry>> PgTxn::GetEntry(InodeId parent, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT ino, type FROM entries WHERE parent = $1 AND name = $2",
                           {P::U(Raw(parent)), P::B(name)}));
  if (r.size() == 0) return std::optional<Entry>();
  if (!ValidFileType(r.Int(0, 1))) {
    return BadRow(fmt::format("entry {} in directory {}: type {}", name, Raw(parent), r.Int(0, 1)));
  }
  return std::optional<Entry>(Entry{parent, std::string(name), InodeId{r.U64(0, 0)},
                                    static_cast<FileType>(r.Int(0, 1))});
}

Status PgTxn::PutEntry(const Entry& e) {
  if (e.name.empty() || !ValidFileType(static_cast<int64_t>(e.type))) {
    return Status::InvalidArgument(fmt::format("{}: PutEntry: name '{}' of type {} in {}",
                                               conn_.display(), e.name, static_cast<int>(e.type),
                                               Raw(e.parent)));
  }
  return Write("PutEntry",
               "INSERT INTO entries(parent, name, ino, type) VALUES($1, $2, $3, $4) "
               "ON CONFLICT(parent, name) DO UPDATE SET ino = excluded.ino, type = excluded.type",
               {P::U(Raw(e.parent)), P::B(e.name), P::U(Raw(e.ino)),
                P::I(static_cast<int64_t>(e.type))});
}

Status PgTxn::DeleteEntry(InodeId parent, std::string_view name) {
  return Write("DeleteEntry", "DELETE FROM entries WHERE parent = $1 AND name = $2",
               {P::U(Raw(parent)), P::B(name)});
}

Result<std::vector<Entry>> PgTxn::ListEntries(InodeId parent, std::string_view after,
                                              size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT name, ino, type FROM entries WHERE parent = $1 AND name > $2 "
                           "ORDER BY name LIMIT $3",
                           {P::U(Raw(parent)), P::B(after), P::I(SqlLimit(limit))}));
  std::vector<Entry> out;
  for (int i = 0; i < r.size(); ++i) {
    if (!ValidFileType(r.Int(i, 2))) {
      return BadRow(fmt::format("entry {} in directory {}: type {}", r.Bytes(i, 0), Raw(parent),
                                r.Int(i, 2)));
    }
    out.push_back(Entry{parent, std::string(r.Bytes(i, 0)), InodeId{r.U64(i, 1)},
                        static_cast<FileType>(r.Int(i, 2))});
  }
  return out;
}

// ---- symlinks and xattrs --------------------------------------------------------------------

Result<std::optional<std::string>> PgTxn::GetSymlink(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT target FROM symlinks WHERE ino = $1",
                                              {P::U(Raw(ino))}));
  if (r.size() == 0) return std::optional<std::string>();
  return std::optional<std::string>(std::string(r.Bytes(0, 0)));
}

Status PgTxn::PutSymlink(InodeId ino, std::string_view target) {
  return Write("PutSymlink",
               "INSERT INTO symlinks(ino, target) VALUES($1, $2) ON CONFLICT(ino) DO UPDATE SET "
               "target = excluded.target",
               {P::U(Raw(ino)), P::B(target)});
}

Status PgTxn::DeleteSymlink(InodeId ino) {
  return Write("DeleteSymlink", "DELETE FROM symlinks WHERE ino = $1", {P::U(Raw(ino))});
}

Result<std::optional<std::string>> PgTxn::GetXattr(InodeId ino, std::string_view name) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT value FROM xattrs WHERE ino = $1 AND name = $2",
                           {P::U(Raw(ino)), P::B(name)}));
  if (r.size() == 0) return std::optional<std::string>();
  return std::optional<std::string>(std::string(r.Bytes(0, 0)));
}

Result<std::vector<Xattr>> PgTxn::ListXattrs(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT name, value FROM xattrs WHERE ino = $1 ORDER BY name",
                           {P::U(Raw(ino))}));
  std::vector<Xattr> out;
  for (int i = 0; i < r.size(); ++i) {
    out.push_back(Xattr{std::string(r.Bytes(i, 0)), std::string(r.Bytes(i, 1))});
  }
  return out;
}

Status PgTxn::PutXattr(InodeId ino, std::string_view name, std::string_view value) {
  return Write("PutXattr",
               "INSERT INTO xattrs(ino, name, value) VALUES($1, $2, $3) ON CONFLICT(ino, name) "
               "DO UPDATE SET value = excluded.value",
               {P::U(Raw(ino)), P::B(name), P::B(value)});
}

Status PgTxn::DeleteXattr(InodeId ino, std::string_view name) {
  return Write("DeleteXattr", "DELETE FROM xattrs WHERE ino = $1 AND name = $2",
               {P::U(Raw(ino)), P::B(name)});
}

// ---- chunks and slice refs ------------------------------------------------------------------

Result<std::vector<Slice>> PgTxn::GetChunk(InodeId ino, uint32_t index) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r,
                         conn_.Exec("SELECT 0::int8 AS n, slices FROM chunks WHERE ino = $1 AND "
                                    "idx = $2 UNION ALL SELECT n, slices FROM chunk_appends WHERE "
                                    "ino = $1 AND idx = $2 ORDER BY n",
                                    {P::U(Raw(ino)), P::I(index)}));
  if (r.size() == 0) return std::vector<Slice>();
  // The list, then the records appended since, each a run of whole records.
  std::string all;
  for (int i = 0; i < r.size(); ++i) all.append(r.Bytes(i, 1));
  return DecodeSlices(all,
                      fmt::format("{}: inode {} chunk {}", conn_.display(), Raw(ino), index));
}

Status PgTxn::AppendSlices(InodeId ino, uint32_t index, std::span<const Slice> slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: AppendSlices inode {} chunk {}", conn_.display(), Raw(ino), index)));
  }
  if (slices.empty()) return Status::OK();
  // A row of its own, numbered by the chunk's append counter: the chunk's list is not
  // rewritten (with `slices || new` every append copied the whole list, TOASTed and WAL-logged).
  // The counter's row lock orders concurrent appends to one chunk in commit order.
  FOLIO_RETURN_IF_ERROR(Write("AppendSlices",
                              "INSERT INTO chunks(ino, idx, slices, appends) VALUES($1, $2, "
                              "''::bytea, 1) ON CONFLICT(ino, idx) DO UPDATE SET appends = "
                              "chunks.appends + 1",
                              {P::U(Raw(ino)), P::I(index)}));
  return Write("AppendSlices",
               "INSERT INTO chunk_appends(ino, idx, n, slices) SELECT ino, idx, appends, $3 FROM "
               "chunks WHERE ino = $1 AND idx = $2",
               {P::U(Raw(ino)), P::I(index), P::B(EncodeSlices(slices))});
}

Status PgTxn::PutChunk(InodeId ino, uint32_t index, const std::vector<Slice>& slices) {
  for (const Slice& slice : slices) {
    FOLIO_RETURN_IF_ERROR(ValidateSlice(slice).WithContext(
        fmt::format("{}: PutChunk inode {} chunk {}", conn_.display(), Raw(ino), index)));
  }
  FOLIO_RETURN_IF_ERROR(Write("PutChunk", "DELETE FROM chunk_appends WHERE ino = $1 AND idx = $2",
                              {P::U(Raw(ino)), P::I(index)}));
  if (slices.empty()) {
    return Write("PutChunk", "DELETE FROM chunks WHERE ino = $1 AND idx = $2",
                 {P::U(Raw(ino)), P::I(index)});
  }
  return Write("PutChunk",
               "INSERT INTO chunks(ino, idx, slices, appends) VALUES($1, $2, $3, 0) ON "
               "CONFLICT(ino, idx) DO UPDATE SET slices = excluded.slices, appends = 0",
               {P::U(Raw(ino)), P::I(index), P::B(EncodeSlices(slices))});
}

Result<std::vector<uint32_t>> PgTxn::ListChunks(InodeId ino) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT idx FROM chunks WHERE ino = $1 ORDER BY idx",
                                              {P::U(Raw(ino))}));
  std::vector<uint32_t> out;
  for (int i = 0; i < r.size(); ++i) {
    if (!FitsU32(r.Int(i, 0))) {
      return BadRow(fmt::format("inode {}: chunk index {}", Raw(ino), r.Int(i, 0)));
    }
    out.push_back(static_cast<uint32_t>(r.Int(i, 0)));
  }
  return out;
}

Result<std::optional<SliceRef>> PgTxn::GetSliceRef(SliceId id) {
  FOLIO_ASSIGN_OR_RETURN(
      PgRows r, conn_.Exec("SELECT id, kind, object_bytes, refs FROM slice_refs WHERE id = $1",
                           {P::U(Raw(id))}));
  if (r.size() == 0) return std::optional<SliceRef>();
  std::optional<SliceRef> s = ReadSliceRef(r, 0);
  if (!s) return BadRow(fmt::format("slice ref {}: a column is out of range", Raw(id)));
  return s;
}

Status PgTxn::PutSliceRef(const SliceRef& r) {
  const auto kind = static_cast<uint8_t>(r.kind);
  if (Raw(r.id) == 0 || kind < 1 || kind > 3) {
    return Status::InvalidArgument(fmt::format("{}: PutSliceRef: slice {} of kind {}",
                                               conn_.display(), Raw(r.id), kind));
  }
  return Write("PutSliceRef",
               "INSERT INTO slice_refs(id, kind, object_bytes, refs) VALUES($1, $2, $3, $4) "
               "ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, object_bytes = "
               "excluded.object_bytes, refs = excluded.refs",
               {P::U(Raw(r.id)), P::I(kind), P::I(r.object_bytes), P::I(r.refs)});
}

Status PgTxn::DeleteSliceRef(SliceId id) {
  return Write("DeleteSliceRef", "DELETE FROM slice_refs WHERE id = $1", {P::U(Raw(id))});
}

Result<std::vector<SliceRef>> PgTxn::ListSliceRefs(SliceId after, size_t limit) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT id, kind, object_bytes, refs FROM "
                                              "slice_refs WHERE id > $1 ORDER BY id LIMIT $2",
                                              {P::U(Raw(after)), P::I(SqlLimit(limit))}));
  std::vector<SliceRef> out;
  for (int i = 0; i < r.size(); ++i) {
    std::optional<SliceRef> s = ReadSliceRef(r, i);
    if (!s) return BadRow(fmt::format("slice ref {}: a column is out of range", r.Int(i, 0)));
    out.push_back(*s);
  }
  return out;
}

// ---- counters -------------------------------------------------------------------------------

Result<int64_t> PgTxn::GetCounter(Counter c) {
  FOLIO_ASSIGN_OR_RETURN(PgRows r, conn_.Exec("SELECT value FROM counters WHERE name = $1",
                                              {P::T(CounterName(c))}));
  return r.size() > 0 ? r.Int(0, 0) : int64_t{0};
}

Status PgTxn::AddToCounter(Counter c, int64_t delta) {
  return Write("AddToCounter",
               "INSERT INTO counters(name, value) VALUES($1, $2) ON CONFLICT(name) DO UPDATE "
               "SET value = counters.value + excluded.value",
               {P::T(CounterName(c)), P::I(delta)});
}

}  // namespace folio::meta
