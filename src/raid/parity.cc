#include "raid/parity.h"

#include <isa-l/erasure_code.h>
#include <isa-l/gf_vect_mul.h>
#include <isa-l/raid.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "base/check.h"

namespace folio::raid {
namespace {

void CheckBuffer(const void* p, size_t len) {
  FOLIO_CHECK_MSG(reinterpret_cast<uintptr_t>(p) % kParityAlignBytes == 0,
                  "parity buffers must be 32-byte aligned");
  FOLIO_CHECK_MSG(len % kParityAlignBytes == 0, "parity lengths must be multiples of 32");
}

// ISA-L's SIMD multiply-accumulate needs at least 64 bytes.
constexpr size_t kGfSimdMinBytes = 64;

// Row `index` of the (k + 2) x k encoding matrix: identity rows for data, all ones for P,
// g^j for Q.
void EncodingRow(uint32_t index, uint32_t k, uint8_t* row) {
  for (uint32_t j = 0; j < k; ++j) {
    if (index < k) {
      row[j] = index == j ? 1 : 0;
    } else if (index == k) {
      row[j] = 1;
    } else {
      row[j] = GfPow2(j);
    }
  }
}

// Decode tables for rebuilding `lost` from the first k surviving blocks, cached per thread
// (the matrix inversion is O(k^3) and degraded I/O repeats the same lost set).
const std::vector<uint8_t>& DecodeTables(uint32_t k, const uint32_t* lost, uint32_t nlost,
                                         std::vector<uint32_t>* survivors) {
  const uint32_t total = k + 2;
  survivors->clear();
  for (uint32_t i = 0; i < total && survivors->size() < k; ++i) {
    bool is_lost = false;
    for (uint32_t l = 0; l < nlost; ++l) is_lost |= lost[l] == i;
    if (!is_lost) survivors->push_back(i);
  }
  FOLIO_CHECK(survivors->size() == k);
  const uint64_t key = (uint64_t{k} << 32) | (uint64_t{lost[0]} << 16) |
                       (nlost > 1 ? lost[1] + 1 : 0);
  thread_local std::unordered_map<uint64_t, std::vector<uint8_t>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();

  std::vector<uint8_t> b(k * k), binv(k * k), decode(nlost * k);
  for (uint32_t r = 0; r < k; ++r) EncodingRow((*survivors)[r], k, &b[r * k]);
  FOLIO_CHECK_MSG(gf_invert_matrix(b.data(), binv.data(), static_cast<int>(k)) == 0,
                  "RAID 6 survivor matrix must be invertible");
  std::vector<uint8_t> row(k);
  for (uint32_t l = 0; l < nlost; ++l) {
    EncodingRow(lost[l], k, row.data());
    for (uint32_t c = 0; c < k; ++c) {
      uint8_t acc = 0;
      for (uint32_t j = 0; j < k; ++j) acc ^= GfMul(row[j], binv[j * k + c]);
      decode[l * k + c] = acc;
    }
  }
  std::vector<uint8_t> tables(32 * k * nlost);
  ec_init_tables(static_cast<int>(k), static_cast<int>(nlost), decode.data(), tables.data());
  return cache.emplace(key, std::move(tables)).first->second;
}

}  // namespace

uint8_t GfMul(uint8_t a, uint8_t b) { return gf_mul(a, b); }

uint8_t GfPow2(uint32_t exponent) {
  uint8_t v = 1;
  for (uint32_t i = 0; i < exponent % 255; ++i) v = gf_mul(v, 2);
  return v;
}

void XorGen(std::span<char* const> sources, char* dest, size_t len) {
  FOLIO_CHECK(!sources.empty() && sources.size() < 64);
  CheckBuffer(dest, len);
  if (sources.size() == 1) {
    std::memcpy(dest, sources[0], len);
    return;
  }
  void* array[65];
  for (size_t i = 0; i < sources.size(); ++i) {
    CheckBuffer(sources[i], len);
    FOLIO_CHECK(sources[i] != dest);
    array[i] = sources[i];
  }
  array[sources.size()] = dest;
  FOLIO_CHECK(xor_gen(static_cast<int>(sources.size() + 1), static_cast<int>(len), array) == 0);
}

void XorInto(char* dest, const char* src, size_t len) {
  CheckBuffer(dest, len);
  CheckBuffer(src, len);
  // xor_gen reads every source of a block before writing the destination, so the
  // destination may also be a source.
  void* array[3] = {dest, const_cast<char*>(src), dest};
  FOLIO_CHECK(xor_gen(3, static_cast<int>(len), array) == 0);
}

void PqGen(std::span<char* const> data, char* p, char* q, size_t len) {
  FOLIO_CHECK(data.size() >= 2 && data.size() < 64);
  void* array[66];
  for (size_t i = 0; i < data.size(); ++i) {
    CheckBuffer(data[i], len);
    array[i] = data[i];
  }
  CheckBuffer(p, len);
  CheckBuffer(q, len);
  array[data.size()] = p;
  array[data.size() + 1] = q;
  FOLIO_CHECK(pq_gen(static_cast<int>(data.size() + 2), static_cast<int>(len), array) == 0);
}

void ParityUpdate(const char* delta, uint32_t data_index, char* p, char* q, size_t len) {
  XorInto(p, delta, len);
  if (q == nullptr) return;
  CheckBuffer(q, len);
  const uint8_t c = GfPow2(data_index);
  if (len >= kGfSimdMinBytes) {
    unsigned char table[32];
    gf_vect_mul_init(c, table);
    gf_vect_mad(static_cast<int>(len), 1, 0, table,
                reinterpret_cast<unsigned char*>(const_cast<char*>(delta)),
                reinterpret_cast<unsigned char*>(q));
    return;
  }
  for (size_t i = 0; i < len; ++i) {
    const uint8_t d = static_cast<uint8_t>(delta[i]);
    q[i] = static_cast<char>(static_cast<uint8_t>(q[i]) ^ gf_mul(c, d));
  }
}

void Recover(std::span<char* const> blocks, uint32_t parity_members,
             std::span<const uint32_t> lost, size_t len) {
  FOLIO_CHECK(parity_members == 1 || parity_members == 2);
  FOLIO_CHECK(!lost.empty() && lost.size() <= parity_members);
  FOLIO_CHECK(blocks.size() > parity_members);
  const uint32_t k = static_cast<uint32_t>(blocks.size()) - parity_members;
  for (uint32_t l : lost) FOLIO_CHECK(l < blocks.size());
  if (lost.size() == 2) FOLIO_CHECK(lost[0] != lost[1]);
  if (parity_members == 1) {
    char* sources[64];
    size_t n = 0;
    for (uint32_t i = 0; i < blocks.size(); ++i) {
      if (i != lost[0]) sources[n++] = blocks[i];
    }
    XorGen({sources, n}, blocks[lost[0]], len);
    return;
  }
  FOLIO_CHECK(k >= 2);
  const bool lost_p = lost[0] == k || (lost.size() == 2 && lost[1] == k);
  const bool lost_q = lost[0] == k + 1 || (lost.size() == 2 && lost[1] == k + 1);
  if (lost_p && lost_q) {
    PqGen(blocks.first(k), blocks[k], blocks[k + 1], len);
    return;
  }
  if (lost_p && lost.size() == 1) {
    XorGen(blocks.first(k), blocks[k], len);
    return;
  }
  std::vector<uint32_t> survivors;
  const std::vector<uint8_t>& tables =
      DecodeTables(k, lost.data(), static_cast<uint32_t>(lost.size()), &survivors);
  unsigned char* src[64];
  unsigned char* dst[2];
  for (uint32_t i = 0; i < k; ++i) {
    CheckBuffer(blocks[survivors[i]], len);
    src[i] = reinterpret_cast<unsigned char*>(blocks[survivors[i]]);
  }
  for (size_t l = 0; l < lost.size(); ++l) {
    CheckBuffer(blocks[lost[l]], len);
    dst[l] = reinterpret_cast<unsigned char*>(blocks[lost[l]]);
  }
  ec_encode_data(static_cast<int>(len), static_cast<int>(k), static_cast<int>(lost.size()),
                 const_cast<unsigned char*>(tables.data()), src, dst);
}

}  // namespace folio::raid
