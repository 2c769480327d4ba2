// Little-endian fixed-width encoding of the store's on-disk formats.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace folio::store {

inline void PutLe16(char* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void PutLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void PutLe64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline uint16_t GetLe16(const char* p) {
  uint16_t v = 0;
  for (int i = 1; i >= 0; --i) v = static_cast<uint16_t>(v << 8 | static_cast<uint8_t>(p[i]));
  return v;
}
inline uint32_t GetLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace folio::store
