#include "raid/parity.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/test_seed.h"

namespace folio::raid {
namespace {

// Byte-wise reference GF(2^8) arithmetic, polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d),
// independent of ISA-L.
uint8_t RefMul(uint8_t a, uint8_t b) {
  uint8_t r = 0;
  while (b) {
    if (b & 1) r ^= a;
    const bool carry = a & 0x80;
    a = static_cast<uint8_t>(a << 1);
    if (carry) a ^= 0x1d;
    b >>= 1;
  }
  return r;
}

uint8_t RefPow2(uint32_t e) {
  uint8_t v = 1;
  for (uint32_t i = 0; i < e; ++i) v = RefMul(v, 2);
  return v;
}

// The parity kernels need 64-byte (cache line) alignment, not 4K.
AlignedBuffer Alloc(size_t len) { return AlignedBuffer(len, 64); }

// A stripe slice: k data blocks + parity blocks, filled with random bytes.
struct Slice {
  std::vector<AlignedBuffer> bufs;
  std::vector<char*> ptrs;
  Slice(size_t n, size_t len, std::mt19937_64& rng) {
    for (size_t i = 0; i < n; ++i) {
      bufs.push_back(Alloc(len));
      for (size_t b = 0; b < len; ++b) bufs.back().data()[b] = static_cast<char>(rng());
      ptrs.push_back(bufs.back().data());
    }
  }
};

void RefParity(const Slice& s, uint32_t k, size_t len, std::vector<uint8_t>* p,
               std::vector<uint8_t>* q) {
  p->assign(len, 0);
  q->assign(len, 0);
  for (uint32_t i = 0; i < k; ++i) {
    const uint8_t c = RefPow2(i);
    for (size_t b = 0; b < len; ++b) {
      const uint8_t d = static_cast<uint8_t>(s.ptrs[i][b]);
      (*p)[b] ^= d;
      (*q)[b] ^= RefMul(c, d);
    }
  }
}

constexpr size_t kLens[] = {32, 64, 96, 4096};

TEST(Parity, GfHelpersMatchReference) {
  for (int a = 0; a < 256; a += 7) {
    for (int b = 0; b < 256; b += 3) {
      ASSERT_EQ(GfMul(a, b), RefMul(a, b)) << a << "*" << b;
    }
  }
  for (uint32_t e = 0; e < 300; ++e) ASSERT_EQ(GfPow2(e), RefPow2(e)) << e;
}

TEST(Parity, XorAndPqMatchReference) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (size_t len : kLens) {
    for (uint32_t k = 1; k <= 12; ++k) {
      Slice s(k + 2, len, rng);
      std::vector<uint8_t> p, q;
      RefParity(s, k, len, &p, &q);
      XorGen({s.ptrs.data(), k}, s.ptrs[k], len);
      ASSERT_EQ(0, std::memcmp(s.ptrs[k], p.data(), len)) << "xor k=" << k << " len=" << len;
      if (k < 2) continue;
      std::memset(s.ptrs[k], 0, len);
      PqGen({s.ptrs.data(), k}, s.ptrs[k], s.ptrs[k + 1], len);
      ASSERT_EQ(0, std::memcmp(s.ptrs[k], p.data(), len)) << "P k=" << k << " len=" << len;
      ASSERT_EQ(0, std::memcmp(s.ptrs[k + 1], q.data(), len)) << "Q k=" << k << " len=" << len;
    }
  }
}

TEST(Parity, XorIntoAndParityUpdate) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (size_t len : kLens) {
    const uint32_t k = 5;
    Slice s(k + 2, len, rng);
    PqGen({s.ptrs.data(), k}, s.ptrs[k], s.ptrs[k + 1], len);
    for (uint32_t d = 0; d < k; ++d) {
      // New contents of block d; delta = old ^ new.
      Slice fresh(1, len, rng);
      AlignedBuffer delta = Alloc(len);
      std::memcpy(delta.data(), s.ptrs[d], len);
      XorInto(delta.data(), fresh.ptrs[0], len);
      std::memcpy(s.ptrs[d], fresh.ptrs[0], len);
      ParityUpdate(delta.data(), d, s.ptrs[k], s.ptrs[k + 1], len);
      std::vector<uint8_t> p, q;
      RefParity(s, k, len, &p, &q);
      ASSERT_EQ(0, std::memcmp(s.ptrs[k], p.data(), len)) << "d=" << d << " len=" << len;
      ASSERT_EQ(0, std::memcmp(s.ptrs[k + 1], q.data(), len)) << "d=" << d << " len=" << len;
    }
  }
}

// Every single lost block (RAID 5 and 6) and every pair (RAID 6) is rebuilt exactly.
TEST(Parity, RecoverEveryLostSetAgainstReference) {
  const uint64_t seed = TestSeed();
  FOLIO_SEED_TRACE(seed);
  std::mt19937_64 rng(seed);
  for (size_t len : kLens) {
    for (uint32_t parity = 1; parity <= 2; ++parity) {
      for (uint32_t k = parity == 1 ? 1 : 2; k <= 8; ++k) {
        Slice s(k + parity, len, rng);
        if (parity == 1) {
          XorGen({s.ptrs.data(), k}, s.ptrs[k], len);
        } else {
          PqGen({s.ptrs.data(), k}, s.ptrs[k], s.ptrs[k + 1], len);
        }
        std::vector<std::vector<char>> good;
        for (char* p : s.ptrs) good.emplace_back(p, p + len);
        const uint32_t n = k + parity;
        for (uint32_t a = 0; a < n; ++a) {
          for (uint32_t b = a; b < n; ++b) {
            if (parity == 1 && b != a) continue;
            std::vector<uint32_t> lost = {a};
            if (b != a) lost.push_back(b);
            if (b != a && rng() % 2) std::swap(lost[0], lost[1]);  // order must not matter
            for (uint32_t l : lost) std::memset(s.ptrs[l], 0xA5, len);
            Recover(s.ptrs, parity, lost, len);
            for (uint32_t i = 0; i < n; ++i) {
              ASSERT_EQ(0, std::memcmp(s.ptrs[i], good[i].data(), len))
                  << "block " << i << " lost {" << a << "," << b << "} k=" << k
                  << " parity=" << parity << " len=" << len;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace folio::raid
