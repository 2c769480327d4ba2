#include "base/crc32c.h"

#include <isa-l/crc.h>

namespace folio {

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
  // crc32_iscsi takes and returns the raw (non-inverted) register.
  return ~crc32_iscsi(const_cast<unsigned char*>(static_cast<const unsigned char*>(data)),
                      static_cast<int>(len), ~crc);
}

}  // namespace folio
