// CRC32C (Castagnoli), computed by ISA-L's crc32_iscsi, which dispatches at run time to the
// fastest kernel the CPU offers (SSE4.2 crc32 / PCLMUL / AVX-512 on x86, CRC32 on arm64).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace folio {

// Standard CRC32C of data (initial value 0xFFFFFFFF, final xor), chainable: pass a previous
// result as `crc` to extend it over more bytes.
uint32_t Crc32c(const void* data, size_t len, uint32_t crc = 0);

}  // namespace folio
