// The records a metadata engine stores for Folio FS, engine-neutral: every engine (SQLite,
// Redis, PostgreSQL) stores exactly these fields, in its own schema. The POSIX logic that
// reads and writes them lives once, in fs/, inside MetaEngine transactions (meta_engine.h);
// engines only store, fetch, scan and commit records.
//
// Binary encodings that engines store as opaque bytes (the slice records of a chunk) are
// defined here with their codecs, so every engine holds the same bytes; the byte tables are in
// docs/format/meta.md.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::meta {

// Strong ids. 0 is never a valid id of any kind. Ids are below 2^63 (engines may store them
// as signed 64-bit integers; AllocateIds never gets near that).
enum class InodeId : uint64_t {};
enum class SliceId : uint64_t {};
enum class SessionId : uint64_t {};
inline constexpr InodeId kRootInode{1};

inline uint64_t Raw(InodeId v) { return static_cast<uint64_t>(v); }
inline uint64_t Raw(SliceId v) { return static_cast<uint64_t>(v); }
inline uint64_t Raw(SessionId v) { return static_cast<uint64_t>(v); }

enum class FileType : uint8_t {
  kRegular = 1,
  kDirectory = 2,
  kSymlink = 3,
  kFifo = 4,
  kSocket = 5,
  kCharDevice = 6,
  kBlockDevice = 7,
};

// An inode's attributes. Times are nanoseconds since the Unix epoch.
struct Inode {
  InodeId ino{0};
  FileType type = FileType::kRegular;
  uint32_t mode = 0;       // permission bits only (07777: suid, sgid, sticky, rwx)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
  uint64_t size_bytes = 0;  // regular: file length; symlink: target length; dir: entry count
  uint64_t rdev = 0;        // char / block devices
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint32_t flags = 0;       // kInodeFlag* below
  InodeId parent{0};        // directories: the parent directory (the root's is itself);
                            // other types: 0 (hard links make "the" parent meaningless)
};

inline constexpr uint32_t kInodeFlagImmutable = 1u << 0;
inline constexpr uint32_t kInodeFlagAppend = 1u << 1;
// Regular files: the file may have holes in [0, size) (a truncate or fallocate grew it, a write
// started past its end, a range was punched or zeroed). Without it every byte below the size
// holds data, so st_blocks is the size in pages; with it st_blocks is counted from the slices.
// Set by the FS core, never by a user; never cleared (a file that was sparse stays counted).
inline constexpr uint32_t kInodeFlagSparse = 1u << 2;

// A directory entry: `name` in directory `parent` is inode `ino` of type `type`. Unique per
// (parent, name).
struct Entry {
  InodeId parent{0};
  std::string name;
  InodeId ino{0};
  FileType type = FileType::kRegular;
};

// One extended attribute of an inode.
struct Xattr {
  std::string name;   // with its namespace prefix ("user.x", "trusted.y")
  std::string value;  // binary
};

// A slice: one contiguous write into a chunk, stored as immutable data; newest wins where
// slices overlap, holes read zeros. `pos`/`len` place the visible part in the chunk; `id`,
// `object_bytes` and `object_off` say where that part's bytes are stored:
//   kBlocks: slice `id` is stored as blocks of the volume's block size (the fs layer names
//            them from id and index); bytes [object_off, object_off + len) of the slice.
//   kPacked: the bytes live in pack `id` (a shared block of small files), at object_off,
//            len bytes (the entry's 8-byte header precedes object_off); object_bytes is the
//            pack's size.
//   kZero:   an explicit hole (fallocate zero range / punch hole over older slices); id 0.
enum class SliceKind : uint8_t { kBlocks = 1, kPacked = 2, kZero = 3 };

struct Slice {
  uint32_t pos = 0;           // offset in the chunk
  uint32_t len = 0;           // visible bytes
  SliceId id{0};
  uint32_t object_bytes = 0;  // size of the stored slice (kBlocks) or pack (kPacked)
  uint32_t object_off = 0;    // where the visible part starts in the stored object
  SliceKind kind = SliceKind::kBlocks;
};

// A chunk's slice list is stored as the concatenation of 32-byte slice records, oldest
// first, so appending a slice is appending bytes (Redis RPUSH / APPEND, SQL blob ||).
inline constexpr size_t kSliceRecordBytes = 32;
void EncodeSlice(const Slice& s, char out[kSliceRecordBytes]);
std::string EncodeSlice(const Slice& s);
std::string EncodeSlices(std::span<const Slice> slices);
// Errors: Corruption naming what is wrong (bad length, bad kind, pos + len past the chunk,
// reserved bytes not zero). `what` names the record for the message (e.g. "inode 12 chunk 3").
Result<std::vector<Slice>> DecodeSlices(std::string_view bytes, std::string_view what);
// The rules DecodeSlices applies to each record, for writers: InvalidArgument naming the
// problem. Engines refuse to store a slice that would not decode (AppendSlice, PutChunk).
//   kind 1..3; len > 0; pos + len <= kChunkBytes;
//   kZero: id, object_bytes, object_off all 0;
//   kBlocks / kPacked: id != 0, object_bytes <= kChunkBytes, object_off + len <= object_bytes;
//   kPacked: object_off >= 8 (the pack entry's header precedes the data).
Status ValidateSlice(const Slice& s);

inline constexpr uint64_t kChunkBytes = 64ull << 20;

// How many references (chunks of files, pending compaction copies) a stored slice or pack has;
// it is deleted only through the deletion queue once this reaches 0.
struct SliceRef {
  SliceId id{0};
  SliceKind kind = SliceKind::kBlocks;
  uint32_t object_bytes = 0;
  int64_t refs = 0;
};

// A mount's registration. A session whose heartbeat is older than the volume's session
// timeout is dead; another mount cleans it (locks, sustained inodes, uncommitted slices).
struct Session {
  SessionId id{0};
  std::string host;
  uint32_t pid = 0;
  std::string mountpoint;
  std::string version;     // Folio version that mounted
  bool read_only = false;
  int64_t start_ns = 0;
  int64_t heartbeat_ns = 0;
  // Mounted with -o shared: other shared mounts may have the volume mounted read-write at the
  // same time (fs/session.h says what that changes).
  bool shared = false;
};

// How engines store read_only and shared together, in one small integer (the sessions table's
// read_only column, the Redis record's byte): bit 0 read-only, bit 1 shared. Sessions written
// before shared mounts existed hold 0 or 1, which decode as they always did.
inline uint8_t SessionFlags(const Session& s) {
  return static_cast<uint8_t>((s.read_only ? 1 : 0) | (s.shared ? 2 : 0));
}
inline bool ValidSessionFlags(int64_t v) { return v >= 0 && v <= 3; }
inline void SetSessionFlags(Session* s, int64_t v) {
  s->read_only = (v & 1) != 0;
  s->shared = (v & 2) != 0;
}

enum class LockType : uint8_t { kUnlock = 0, kRead = 1, kWrite = 2 };

// flock(2): one per (inode, session, owner).
struct FlockRecord {
  InodeId ino{0};
  SessionId session{0};
  uint64_t owner = 0;
  LockType type = LockType::kRead;
};

// fcntl(2) byte-range lock: [start, end] inclusive, end = UINT64_MAX for "to EOF".
struct PlockRecord {
  InodeId ino{0};
  SessionId session{0};
  uint64_t owner = 0;
  uint32_t pid = 0;
  LockType type = LockType::kRead;
  uint64_t start = 0;
  uint64_t end = 0;
};

// Work the deletion queue holds until its time comes:
//   kSlice: a stored slice or pack whose references reached 0; delete its objects once
//           `not_before_ns` has passed (the grace period covering readers with cached
//           slice lists on any mount).
//   kInode: an inode whose last link and last open are gone; free its chunks (which queues
//           their slices) and remove the inode.
enum class DeletionKind : uint8_t { kSlice = 1, kInode = 2 };
struct Deletion {
  DeletionKind kind = DeletionKind::kSlice;
  uint64_t id = 0;             // SliceId or InodeId
  SliceKind slice_kind = SliceKind::kBlocks;  // kSlice only
  uint64_t bytes = 0;          // stored bytes it frees
  int64_t not_before_ns = 0;
};

// The volume's format record, written once by `folio fs format`.
struct FormatRecord {
  std::string name;
  std::string uuid;             // 36-char text UUID
  uint32_t format_version = 1;
  uint64_t block_bytes = 4ull << 20;
  uint64_t pack_below_bytes = 64ull << 10;  // 0 = no packing
  std::string store_url;        // dir:PATH, dev:SPEC, rados:POOL...
  int64_t create_ns = 0;
  int64_t session_timeout_ms = 60000;
  int64_t deletion_grace_ms = 3600000;
};
inline constexpr uint32_t kFormatVersion = 1;
// JSON text, the same in every engine (one key or row); keys in docs/format/meta.md. Unknown
// keys are ignored (a newer format adds keys only with a new format_version).
std::string EncodeFormat(const FormatRecord& f);
// Errors: NotSupported for a format_version newer than kFormatVersion (the message says to
// use a newer folio); Corruption for anything else that is not a valid record.
Result<FormatRecord> DecodeFormat(std::string_view text);
// The rules DecodeFormat applies, for writers (PutFormat refuses a record that would not
// decode): InvalidArgument naming the field. name 1..255 bytes of UTF-8; uuid 36-char text
// UUID; format_version 1..kFormatVersion; block_bytes a power of two 64K..16M;
// pack_below_bytes <= block_bytes; store_url non-empty UTF-8; session_timeout_ms > 0;
// deletion_grace_ms >= 0.
Status ValidateFormat(const FormatRecord& f);

// Counters handed out or accumulated atomically. Every counter starts at 0, except that Init
// sets kNextInode to 1 (kRootInode is taken by `folio fs format`). For the id counters the
// value is the highest id handed out so far (AllocateIds(c, n) returns value + 1 and adds n);
// for the usage counters it is the running sum of AddToCounter deltas.
enum class Counter : uint8_t {
  kNextInode = 1,    // ids handed out in batches
  kNextSlice = 2,
  kNextSession = 3,
  kUsedBytes = 4,    // usage for statfs: bytes of file data (logical, rounded to 4 KiB)
  kUsedInodes = 5,
};
// The counter's stable name ("next_inode", "used_bytes", ...): the key or row engines store.
std::string_view CounterName(Counter c);
inline constexpr Counter kAllCounters[] = {Counter::kNextInode, Counter::kNextSlice,
                                           Counter::kNextSession, Counter::kUsedBytes,
                                           Counter::kUsedInodes};

}  // namespace folio::meta
