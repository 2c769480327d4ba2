// libFuzzer target: the dev: store's on-device structures (fs/store/dev_format.h): superblock,
// segment table, segment and record headers.
//
// Input: one byte choosing the structure, then its bytes (zero-padded to its size). Each is
// decoded as given and again with its checksum recomputed so mutations reach the field checks.
// Oracles: a structure that decodes re-encodes to bytes that decode to the same values
// (superblocks, headers: the same bytes).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "fs/store/dev_format.h"
#include "fs/store/le.h"

namespace {

using namespace folio::store;
using namespace folio::store::dev;

void Require(bool cond) {
  if (!cond) std::abort();
}

// CRC32C over len bytes with the field at 12 zero, seeded.
void Reseal(char* p, uint64_t len, uint32_t seed) {
  std::memset(p + 12, 0, 4);
  PutLe32(p + 12, folio::Crc32c(p, len, seed));
}

void Super(std::vector<char> b) {
  for (int pass = 0; pass < 2; ++pass) {
    auto sb = DecodeSuperblock(b.data());
    if (sb.ok()) {
      std::vector<char> again(kUnitBytes);
      EncodeSuperblock(*sb, again.data());
      auto back = DecodeSuperblock(again.data());
      Require(back.ok() && back->prefix == sb->prefix && back->segment_count == sb->segment_count &&
              back->data_offset == sb->data_offset && back->uuid == sb->uuid);
    }
    Reseal(b.data(), kUnitBytes, 0);
  }
}

void Table(std::vector<char> b, uint32_t count, uint64_t segment_bytes) {
  uint64_t bytes = TableBytesFor(count);
  b.resize(bytes, 0);
  for (int pass = 0; pass < 2; ++pass) {
    auto t = DecodeTable(b.data(), bytes, count, segment_bytes);
    if (t.ok()) {
      std::vector<char> again(bytes);
      EncodeTable(*t, again.data(), bytes);
      auto back = DecodeTable(again.data(), bytes, count, segment_bytes);
      Require(back.ok() && back->sequence == t->sequence && back->entries.size() == count);
      for (uint32_t i = 0; i < count; ++i) {
        Require(back->entries[i].generation == t->entries[i].generation &&
                back->entries[i].used_bytes == t->entries[i].used_bytes);
      }
    }
    Reseal(b.data(), bytes, 0);
  }
}

void Headers(std::vector<char> b, uint32_t seed) {
  for (int pass = 0; pass < 2; ++pass) {
    auto sh = DecodeSegmentHeader(b.data(), seed);
    if (sh.ok()) {
      std::vector<char> again(kUnitBytes);
      EncodeSegmentHeader(*sh, seed, again.data());
      Require(std::memcmp(again.data(), b.data(), 64) == 0);
    }
    auto rh = DecodeRecordHeader(b.data(), seed);
    if (rh.ok()) {
      std::vector<char> again(kUnitBytes);
      EncodeRecordHeader(*rh, seed, again.data());
      Require(std::memcmp(again.data(), b.data(), 64) == 0);
      Require(RecordBytes(rh->type, rh->key.bytes) % kUnitBytes == 0);
    }
    Reseal(b.data(), 64, seed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  std::vector<char> b(reinterpret_cast<const char*>(data) + 1,
                      reinterpret_cast<const char*>(data) + size);
  if (b.size() < kUnitBytes) b.resize(kUnitBytes, 0);
  switch (data[0] % 3) {
    case 0: Super(b); break;
    case 1: Table(b, 3 + data[0] / 3 % 60, 1ull << 20); break;
    case 2: Headers(b, data[0] < 128 ? 0 : 0x12345678u); break;
  }
  return 0;
}
