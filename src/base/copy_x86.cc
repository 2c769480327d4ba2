// x86-64 copy kernels (base/copy_kernels.h). AVX2 code lives only in functions with
// target("avx2"), AVX-512 code only in functions with target("avx512f"); the dispatcher calls
// them only on CPUs with AVX2 and OS-saved YMM state, or AVX-512F and OS-saved ZMM / opmask
// state (CpuFeatures::avx2, ::avx512f).
#include "base/copy_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace folio::copy_internal {

namespace {

enum class Stores { kTemporal, kNonTemporal };

// n >= 64. The first and last 32 bytes are copied with unaligned stores (the last one after the
// loop, from a register loaded before it); the body with destination-aligned 32-byte stores.
template <Stores kind>
__attribute__((target("avx2"))) void CopyAvx2Body(char* d, const char* s, size_t n) {
  const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  const __m256i last = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + n - 32));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), first);
  const size_t skew = 32 - (reinterpret_cast<uintptr_t>(d) & 31);  // 1..32
  char* dp = d + skew;
  const char* sp = s + skew;
  size_t left = n - skew;
  auto store = [](char* p, __m256i v) __attribute__((target("avx2"))) {
    if constexpr (kind == Stores::kNonTemporal) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
    } else {
      _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
    }
  };
  while (left >= 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 64));
    __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 96));
    store(dp, a);
    store(dp + 32, b);
    store(dp + 64, c);
    store(dp + 96, e);
    dp += 128;
    sp += 128;
    left -= 128;
  }
  while (left >= 32) {
    store(dp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp)));
    dp += 32;
    sp += 32;
    left -= 32;
  }
  // Streaming stores are weakly ordered: fence them before anything that publishes the data.
  if constexpr (kind == Stores::kNonTemporal) _mm_sfence();
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + n - 32), last);
}

// n >= 64. The same shape with 64-byte ZMM registers: the first and last 64 bytes with
// unaligned stores, the body with stores aligned to the destination's cache line (so no store
// splits a line; a source that is not aligned like the destination splits every load).
template <Stores kind>
__attribute__((target("avx512f"))) void CopyAvx512Body(char* d, const char* s, size_t n) {
  const __m512i first = _mm512_loadu_si512(s);
  const __m512i last = _mm512_loadu_si512(s + n - 64);
  _mm512_storeu_si512(d, first);
  const size_t skew = 64 - (reinterpret_cast<uintptr_t>(d) & 63);  // 1..64
  char* dp = d + skew;
  const char* sp = s + skew;
  size_t left = n - skew;
  auto store = [](char* p, __m512i v) __attribute__((target("avx512f"))) {
    if constexpr (kind == Stores::kNonTemporal) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
    } else {
      _mm512_store_si512(p, v);
    }
  };
  while (left >= 256) {
    __m512i a = _mm512_loadu_si512(sp);
    __m512i b = _mm512_loadu_si512(sp + 64);
    __m512i c = _mm512_loadu_si512(sp + 128);
    __m512i e = _mm512_loadu_si512(sp + 192);
    store(dp, a);
    store(dp + 64, b);
    store(dp + 128, c);
    store(dp + 192, e);
    dp += 256;
    sp += 256;
    left -= 256;
  }
  while (left >= 64) {
    store(dp, _mm512_loadu_si512(sp));
    dp += 64;
    sp += 64;
    left -= 64;
  }
  // Streaming stores are weakly ordered: fence them before anything that publishes the data.
  if constexpr (kind == Stores::kNonTemporal) _mm_sfence();
  _mm512_storeu_si512(d + n - 64, last);
}

}  // namespace

void CopyAvx2(void* dst, const void* src, size_t n) {
  if (n < 64) {
    std::memcpy(dst, src, n);
    return;
  }
  CopyAvx2Body<Stores::kTemporal>(static_cast<char*>(dst), static_cast<const char*>(src), n);
}

void CopyAvx2Nt(void* dst, const void* src, size_t n) {
  if (n < kNtMinBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  CopyAvx2Body<Stores::kNonTemporal>(static_cast<char*>(dst), static_cast<const char*>(src), n);
}

void CopyAvx512(void* dst, const void* src, size_t n) {
  if (n < 64) {
    std::memcpy(dst, src, n);
    return;
  }
  CopyAvx512Body<Stores::kTemporal>(static_cast<char*>(dst), static_cast<const char*>(src), n);
}

void CopyAvx512Nt(void* dst, const void* src, size_t n) {
  if (n < kNtMinBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  CopyAvx512Body<Stores::kNonTemporal>(static_cast<char*>(dst), static_cast<const char*>(src),
                                       n);
}

void CopyRepMovsb(void* dst, const void* src, size_t n) {
  __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

}  // namespace folio::copy_internal

#endif  // __x86_64__
