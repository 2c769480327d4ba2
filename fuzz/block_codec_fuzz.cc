// libFuzzer target: the sector codec (fs/store/sector_codec.h).
//
// Input: 16 bytes of parameters (logical size, range offset, range length, seed), then bytes
// taken as an encoded object. Oracles: decoding arbitrary bytes either fails or copies the
// range; data encoded by EncodeObject always decodes back exactly over any range, and flipping
// any one bit of the encoded range makes that range fail to decode.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fs/store/le.h"
#include "fs/store/sector_codec.h"

namespace {
void Require(bool cond) {
  if (!cond) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace folio::store;
  if (size < 16) return 0;
  const char* p = reinterpret_cast<const char*>(data);
  uint64_t logical = 1 + GetLe32(p) % (256 << 10);
  uint64_t off = GetLe32(p + 4) % logical;
  uint64_t len = 1 + GetLe32(p + 8) % (logical - off);
  uint32_t seed = GetLe32(p + 12);
  std::string payload(p + 16, size - 16);

  // Arbitrary bytes as an encoding.
  EncodedRange r = EncodedRangeFor(logical, off, len);
  Require(r.offset + r.length <= EncodedBytes(logical));
  std::vector<char> enc(r.length, 0);
  std::memcpy(enc.data(), payload.data(), std::min<size_t>(payload.size(), enc.size()));
  std::vector<char> out(len);
  SectorMismatch mm;
  if (!DecodeRange(seed, logical, enc.data(), off, len, out.data(), &mm)) {
    Require(mm.sector >= r.first_sector && mm.stored_crc != mm.computed_crc);
  }

  // The payload (repeated) as data: round trip and single-bit flips.
  std::vector<char> obj(logical);
  for (uint64_t i = 0; i < logical; ++i) obj[i] = payload.empty() ? 0 : payload[i % payload.size()];
  std::vector<char> full(EncodedBytes(logical));
  EncodeObject(seed, obj.data(), logical, full.data());
  Require(VerifyObject(seed, logical, full.data(), &mm));
  Require(DecodeRange(seed, logical, full.data() + r.offset, off, len, out.data(), &mm));
  Require(std::memcmp(out.data(), obj.data() + off, len) == 0);
  uint64_t bit = (GetLe32(p) ^ seed) % (r.length * 8);
  full[r.offset + bit / 8] ^= static_cast<char>(1 << (bit % 8));
  Require(!DecodeRange(seed, logical, full.data() + r.offset, off, len, out.data(), &mm));
  Require(mm.sector == (r.offset + bit / 8) / kSectorBytes);
  return 0;
}
