#include "fs/store/dev_format.h"

#include <fmt/format.h>

#include <cstring>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/units.h"
#include "fs/store/le.h"
#include "fs/store/sector_codec.h"

namespace folio::store {

AlignedBuffer AllocUnits(uint64_t bytes) {
  return AlignedBuffer::Zeroed(dev::RoundUp(bytes == 0 ? 1 : bytes, dev::kUnitBytes),
                               dev::kUnitBytes);
}

}  // namespace folio::store

namespace folio::store::dev {
namespace {

constexpr char kTableMagic[8] = {'F', 'O', 'L', 'I', 'O', 'S', 'T', '1'};
constexpr char kSegmentMagic[8] = {'F', 'O', 'L', 'I', 'O', 'S', 'G', '1'};
constexpr char kRecordMagic[8] = {'F', 'O', 'L', 'I', 'O', 'R', 'C', '1'};
constexpr uint32_t kSmallHeaderBytes = 64;  // checksummed prefix of segment / record headers

// CRC32C of len bytes with the 4 bytes at crc_at taken as zero.
uint32_t CrcWithHole(const char* p, uint64_t len, uint64_t crc_at, uint32_t seed = 0) {
  static const char kZero[4] = {0, 0, 0, 0};
  uint32_t c = Crc32c(p, crc_at, seed);
  c = Crc32c(kZero, 4, c);
  return Crc32c(p + crc_at + 4, len - crc_at - 4, c);
}

bool AllZero(const char* p, uint64_t len) {
  for (uint64_t i = 0; i < len; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

}  // namespace

uint64_t TableBytesFor(uint32_t segment_count) {
  return RoundUp(kTableHeaderBytes + uint64_t{kTableEntryBytes} * segment_count, kUnitBytes);
}

Result<Superblock> PlanLayout(uint64_t device_bytes, uint64_t segment_bytes) {
  if (!IsPowerOfTwo(segment_bytes) || segment_bytes < kMinSegmentBytes ||
      segment_bytes > kMaxSegmentBytes) {
    return Status::InvalidArgument(fmt::format(
        "segment size {}: must be a power of two between 1M and 1G", FormatSize(segment_bytes)));
  }
  Superblock sb;
  sb.device_bytes = device_bytes;
  sb.segment_bytes = segment_bytes;
  uint64_t n = device_bytes / segment_bytes;
  while (n > 0) {
    uint64_t table = TableBytesFor(static_cast<uint32_t>(n));
    uint64_t data_offset = RoundUp(kTableOffset + 2 * table, 1ull << 20);
    if (data_offset + n * segment_bytes <= device_bytes) {
      sb.segment_count = static_cast<uint32_t>(n);
      sb.table_bytes = table;
      sb.data_offset = data_offset;
      break;
    }
    --n;
  }
  if (sb.segment_count < 3) {
    return Status::InvalidArgument(fmt::format(
        "device of {} holds {} segments of {}; a dev store needs at least 3 (use smaller "
        "segments or a larger device)",
        FormatSize(device_bytes), sb.segment_count, FormatSize(segment_bytes)));
  }
  return sb;
}

void EncodeSuperblock(const Superblock& sb, char out[kUnitBytes]) {
  std::memset(out, 0, kUnitBytes);
  std::memcpy(out, kSuperMagic, 8);
  PutLe32(out + 8, kVersion);
  std::memcpy(out + 16, sb.uuid.data(), std::min<size_t>(16, sb.uuid.size()));
  PutLe64(out + 32, sb.create_unix_s);
  PutLe64(out + 40, sb.device_bytes);
  PutLe64(out + 48, sb.segment_bytes);
  PutLe32(out + 56, sb.segment_count);
  PutLe64(out + 64, kTableOffset);
  PutLe64(out + 72, sb.table_bytes);
  PutLe64(out + 80, sb.data_offset);
  out[88] = static_cast<char>(std::min<size_t>(64, sb.prefix.size()));
  std::memcpy(out + 96, sb.prefix.data(), std::min<size_t>(64, sb.prefix.size()));
  PutLe32(out + 12, CrcWithHole(out, kUnitBytes, 12));
}

Result<Superblock> DecodeSuperblock(const char b[kUnitBytes]) {
  if (std::memcmp(b, kSuperMagic, 8) != 0) {
    return Status::NotFound("no Folio dev store superblock");
  }
  if (GetLe32(b + 12) != CrcWithHole(b, kUnitBytes, 12)) {
    return Status::Corruption("dev store superblock checksum mismatch");
  }
  if (GetLe32(b + 8) != kVersion) {
    return Status::NotSupported(fmt::format(
        "dev store format version {} (this Folio reads {}); use a newer folio", GetLe32(b + 8),
        kVersion));
  }
  Superblock sb;
  sb.uuid.assign(b + 16, 16);
  sb.create_unix_s = GetLe64(b + 32);
  sb.device_bytes = GetLe64(b + 40);
  sb.segment_bytes = GetLe64(b + 48);
  sb.segment_count = GetLe32(b + 56);
  sb.table_bytes = GetLe64(b + 72);
  sb.data_offset = GetLe64(b + 80);
  uint8_t prefix_len = static_cast<uint8_t>(b[88]);
  bool ok = GetLe64(b + 64) == kTableOffset && prefix_len >= 1 && prefix_len <= 64 &&
            IsPowerOfTwo(sb.segment_bytes) && sb.segment_bytes >= kMinSegmentBytes &&
            sb.segment_bytes <= kMaxSegmentBytes && sb.segment_count >= 3 &&
            sb.table_bytes == TableBytesFor(sb.segment_count) &&
            sb.data_offset % kUnitBytes == 0 &&
            sb.data_offset >= kTableOffset + 2 * sb.table_bytes &&
            sb.data_offset <= sb.device_bytes &&
            (sb.device_bytes - sb.data_offset) / sb.segment_bytes >= sb.segment_count;
  if (!ok) return Status::Corruption("dev store superblock has impossible fields");
  sb.prefix.assign(b + 96, prefix_len);
  return sb;
}

void EncodeTable(const SegmentTable& t, char* out, uint64_t table_bytes) {
  std::memset(out, 0, table_bytes);
  std::memcpy(out, kTableMagic, 8);
  PutLe32(out + 8, kVersion);
  PutLe64(out + 16, t.sequence);
  PutLe64(out + 24, t.next_generation);
  PutLe32(out + 32, static_cast<uint32_t>(t.entries.size()));
  for (size_t i = 0; i < t.entries.size(); ++i) {
    char* e = out + kTableHeaderBytes + i * kTableEntryBytes;
    PutLe64(e, t.entries[i].generation);
    PutLe32(e + 8, static_cast<uint32_t>(t.entries[i].state));
    PutLe32(e + 12, t.entries[i].used_bytes);
  }
  PutLe32(out + 12, CrcWithHole(out, table_bytes, 12));
}

Result<SegmentTable> DecodeTable(const char* in, uint64_t table_bytes, uint32_t segment_count,
                                 uint64_t segment_bytes) {
  if (table_bytes < TableBytesFor(segment_count) || std::memcmp(in, kTableMagic, 8) != 0 ||
      GetLe32(in + 12) != CrcWithHole(in, table_bytes, 12) || GetLe32(in + 8) != kVersion ||
      GetLe32(in + 32) != segment_count) {
    return Status::Corruption("segment table slot is not valid");
  }
  SegmentTable t;
  t.sequence = GetLe64(in + 16);
  t.next_generation = GetLe64(in + 24);
  t.entries.resize(segment_count);
  for (uint32_t i = 0; i < segment_count; ++i) {
    const char* e = in + kTableHeaderBytes + uint64_t{i} * kTableEntryBytes;
    SegmentEntry& s = t.entries[i];
    s.generation = GetLe64(e);
    uint32_t state = GetLe32(e + 8);
    s.used_bytes = GetLe32(e + 12);
    bool ok = state <= 2 && (state == 0) == (s.generation == 0) &&
              s.generation < t.next_generation && s.used_bytes % kUnitBytes == 0 &&
              s.used_bytes <= segment_bytes - kUnitBytes &&
              (state == 2 || s.used_bytes == 0);
    if (!ok) return Status::Corruption(fmt::format("segment table entry {} is not valid", i));
    s.state = static_cast<SegmentState>(state);
  }
  return t;
}

uint32_t StoreSeed(const std::string& uuid) { return Crc32c(uuid.data(), uuid.size()); }

void EncodeSegmentHeader(const SegmentHeader& h, uint32_t store_seed, char out[kUnitBytes]) {
  std::memset(out, 0, kUnitBytes);
  std::memcpy(out, kSegmentMagic, 8);
  PutLe32(out + 8, kVersion);
  PutLe64(out + 16, h.generation);
  PutLe32(out + 24, h.index);
  PutLe32(out + 12, CrcWithHole(out, kSmallHeaderBytes, 12, store_seed));
}

Result<SegmentHeader> DecodeSegmentHeader(const char b[kUnitBytes], uint32_t store_seed) {
  if (std::memcmp(b, kSegmentMagic, 8) != 0) return Status::NotFound("no segment header");
  if (GetLe32(b + 12) != CrcWithHole(b, kSmallHeaderBytes, 12, store_seed) || GetLe32(b + 8) != kVersion ||
      !AllZero(b + 28, kSmallHeaderBytes - 28)) {
    return Status::Corruption("segment header is damaged");
  }
  return SegmentHeader{GetLe64(b + 16), GetLe32(b + 24)};
}

uint64_t RecordBytes(RecordType type, uint32_t logical_bytes) {
  if (type == RecordType::kDelete) return kUnitBytes;
  return kUnitBytes + RoundUp(EncodedBytes(logical_bytes), kUnitBytes);
}

void EncodeRecordHeader(const RecordHeader& h, uint32_t store_seed, char out[kUnitBytes]) {
  std::memset(out, 0, kUnitBytes);
  std::memcpy(out, kRecordMagic, 8);
  out[8] = static_cast<char>(h.type);
  out[9] = static_cast<char>(h.key.kind);
  PutLe64(out + 16, h.key.id);
  PutLe32(out + 24, h.key.index);
  PutLe32(out + 28, h.key.bytes);
  PutLe64(out + 32, h.generation);
  PutLe32(out + 40, h.position);
  PutLe32(out + 12, CrcWithHole(out, kSmallHeaderBytes, 12, store_seed));
}

Result<RecordHeader> DecodeRecordHeader(const char b[kUnitBytes], uint32_t store_seed) {
  if (std::memcmp(b, kRecordMagic, 8) != 0) return Status::NotFound("no record header");
  if (GetLe32(b + 12) != CrcWithHole(b, kSmallHeaderBytes, 12, store_seed)) {
    return Status::Corruption("record header checksum mismatch");
  }
  RecordHeader h;
  uint8_t type = static_cast<uint8_t>(b[8]);
  h.key.kind = static_cast<ObjectKind>(b[9]);
  h.key.id = GetLe64(b + 16);
  h.key.index = GetLe32(b + 24);
  h.key.bytes = GetLe32(b + 28);
  h.generation = GetLe64(b + 32);
  h.position = GetLe32(b + 40);
  bool ok = (type == 1 || type == 2) && b[10] == 0 && b[11] == 0 && ValidateKey(h.key).ok() &&
            h.generation != 0 && h.position % kUnitBytes == 0 && h.position >= kUnitBytes &&
            AllZero(b + 44, kSmallHeaderBytes - 44);
  if (!ok) return Status::Corruption("record header has impossible fields");
  h.type = static_cast<RecordType>(type);
  return h;
}

}  // namespace folio::store::dev
