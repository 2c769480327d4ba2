// Parity arithmetic for RAID 5 and 6 on ISA-L: P is the XOR of the data blocks, Q is
// sum(g^i * D_i) in GF(2^8) with generator g = 2 and polynomial 0x11d (Linux md's and ISA-L
// pq_gen's Q). Reconstruction of one lost block (XOR) and of any two lost blocks of a RAID 6
// stripe (data, P or Q) through a decode matrix and ISA-L's ec_encode_data.
//
// Blocks of one stripe slice are passed as a span of pointers ordered
//   [D_0, D_1, ..., D_{k-1}, P]      (RAID 5)
//   [D_0, D_1, ..., D_{k-1}, P, Q]   (RAID 6)
//
// Buffer rules (ISA-L's): every pointer aligned to kParityAlignBytes, len a multiple of it.
//
// Thread safety: pure functions; the RAID 6 decode tables are cached per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace folio::raid {

inline constexpr size_t kParityAlignBytes = 32;

// dest = XOR of sources (a copy when there is one source). dest must not alias a source.
// REQUIRES: sources non-empty.
void XorGen(std::span<char* const> sources, char* dest, size_t len);

// dest ^= src.
void XorInto(char* dest, const char* src, size_t len);

// P and Q of k >= 2 data blocks.
void PqGen(std::span<char* const> data, char* p, char* q, size_t len);

// Read-modify-write of one data block: delta = old ^ new of data block `data_index`;
// P ^= delta and, when q is non-null, Q ^= g^data_index * delta.
void ParityUpdate(const char* delta, uint32_t data_index, char* p, char* q, size_t len);

// Rebuilds the blocks listed in `lost` (indices into `blocks`, distinct, at most
// parity_members of them) from the others, which must hold consistent contents.
// REQUIRES: blocks.size() == k + parity_members, parity_members 1 or 2, k >= 1 (RAID 5) or
// k >= 2 (RAID 6).
void Recover(std::span<char* const> blocks, uint32_t parity_members,
             std::span<const uint32_t> lost, size_t len);

// GF(2^8) helpers (the field of Q), exposed for tests.
uint8_t GfMul(uint8_t a, uint8_t b);
uint8_t GfPow2(uint32_t exponent);  // g^exponent, g = 2

}  // namespace folio::raid
