// AlignedBuffer: a move-only owner of one heap block whose address is aligned (4096 by default,
// what O_DIRECT and the io layer's registered buffers want). The one type for every I/O buffer,
// superblock or bitmap image and test buffer that must be aligned; nothing else in the tree
// calls aligned_alloc / posix_memalign.
//
//   AlignedBuffer buf(64 << 10);          // 64 KiB at a 4096-aligned address, contents undefined
//   AlignedBuffer zeros = AlignedBuffer::Zeroed(4096);
//   dev->Read(0, buf.data(), buf.size());
//
// The size is rounded up to a multiple of the alignment (aligned_alloc requires it); size()
// returns the rounded size. The constructor crashes (FOLIO_CHECK) when the heap is exhausted,
// as operator new would throw; TryAllocate returns NoSpace instead for a size a user chose.
//
// Thread safety: none of its own (like std::unique_ptr); the bytes are the caller's to share.
#pragma once

#include <cstddef>
#include <span>

#include "folio/status.h"

namespace folio {

class AlignedBuffer {
 public:
  static constexpr size_t kDefaultAlignBytes = 4096;

  AlignedBuffer() = default;
  // REQUIRES: align_bytes is a power of two and a multiple of sizeof(void*).
  explicit AlignedBuffer(size_t bytes, size_t align_bytes = kDefaultAlignBytes);
  static AlignedBuffer Zeroed(size_t bytes, size_t align_bytes = kDefaultAlignBytes);
  // NoSpace naming the size when the heap says no.
  static Result<AlignedBuffer> TryAllocate(size_t bytes, size_t align_bytes = kDefaultAlignBytes);

  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { Reset(); }

  char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return data_ == nullptr; }
  explicit operator bool() const { return data_ != nullptr; }
  std::span<char> span() const { return {data_, size_}; }

  // Frees the block (if any); the buffer is empty afterwards.
  void Reset();

 private:
  AlignedBuffer(char* data, size_t size) : data_(data), size_(size) {}
  static char* Allocate(size_t* bytes, size_t align_bytes);

  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace folio
