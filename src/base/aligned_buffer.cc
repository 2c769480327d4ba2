#include "base/aligned_buffer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "base/units.h"

namespace folio {

char* AlignedBuffer::Allocate(size_t* bytes, size_t align_bytes) {
  FOLIO_CHECK_MSG(align_bytes >= sizeof(void*) && (align_bytes & (align_bytes - 1)) == 0,
                  "AlignedBuffer: alignment must be a power of two >= sizeof(void*)");
  if (*bytes > SIZE_MAX - align_bytes) return nullptr;  // rounding up would wrap
  const size_t rounded = (std::max<size_t>(*bytes, 1) + align_bytes - 1) / align_bytes * align_bytes;
  *bytes = rounded;
  return static_cast<char*>(std::aligned_alloc(align_bytes, rounded));
}

AlignedBuffer::AlignedBuffer(size_t bytes, size_t align_bytes) {
  data_ = Allocate(&bytes, align_bytes);
  FOLIO_CHECK_MSG(data_ != nullptr, "AlignedBuffer: out of memory");
  size_ = bytes;
}

AlignedBuffer AlignedBuffer::Zeroed(size_t bytes, size_t align_bytes) {
  AlignedBuffer buf(bytes, align_bytes);
  std::memset(buf.data_, 0, buf.size_);
  return buf;
}

Result<AlignedBuffer> AlignedBuffer::TryAllocate(size_t bytes, size_t align_bytes) {
  const size_t asked = bytes;
  char* p = Allocate(&bytes, align_bytes);
  if (p == nullptr) {
    return Status::NoSpace("out of memory for a " + FormatSize(asked) + " buffer");
  }
  return AlignedBuffer(p, bytes);
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void AlignedBuffer::Reset() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace folio
