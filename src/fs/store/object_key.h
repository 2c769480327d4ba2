// Object keys of a block store: what a stored object is (a block of a slice, or a pack of small
// files), and the names stores give objects.
//
// Names (JuiceFS's scheme, with a volume prefix so two volumes can share a pool or directory):
//
//   <prefix>/chunks/<id/1000000>/<id/1000>/<id>_<index>_<bytes>   block `index` of slice `id`
//   <prefix>/packs/<id/1000000>/<id/1000>/<id>_<bytes>            pack `id` (small files)
//
// `bytes` is the object's logical size (what Put stored and Get can read), so a reader needs no
// stat to know an object's length. The two directory levels keep at most 1000 entries per
// directory for ids below 10^9 (and stay correct above). An empty prefix drops "<prefix>/".
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio::store {

enum class ObjectKind : uint8_t { kBlock = 1, kPack = 2 };
std::string_view ObjectKindName(ObjectKind kind);  // "block", "pack"

struct ObjectKey {
  ObjectKind kind = ObjectKind::kBlock;
  uint64_t id = 0;      // slice id (kBlock) or pack id (kPack); never 0
  uint32_t index = 0;   // block index within the slice; 0 for packs
  uint32_t bytes = 0;   // logical size of the object; 1..16 MiB

  static ObjectKey Block(uint64_t slice_id, uint32_t index, uint32_t bytes) {
    return ObjectKey{ObjectKind::kBlock, slice_id, index, bytes};
  }
  static ObjectKey Pack(uint64_t pack_id, uint32_t bytes) {
    return ObjectKey{ObjectKind::kPack, pack_id, 0, bytes};
  }
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
};

// Largest object a store accepts (the largest block size a volume may be formatted with).
inline constexpr uint32_t kMaxObjectBytes = 16u << 20;

// OK, or InvalidArgument naming the key and what is wrong (id 0, bytes 0 or above 16 MiB,
// a pack with a non-zero index, an unknown kind).
Status ValidateKey(const ObjectKey& key);

// "<prefix>/chunks/0/1/1234_5_4194304" (see the header comment).
std::string ObjectName(std::string_view prefix, const ObjectKey& key);
// The part after "<prefix>/": "chunks/0/1/1234_5_4194304". Errors: InvalidArgument when the
// name is not exactly what ObjectName produces for some valid key (so a stray file is never
// mistaken for an object).
Result<ObjectKey> ParseObjectName(std::string_view name_without_prefix);

// The directory part of a name without prefix: "chunks/0/1", "packs/0/0".
std::string ObjectDirName(const ObjectKey& key);

// Prefixes must be non-empty path-safe names: [A-Za-z0-9._-]{1,64}, not "." or "..".
Status ValidatePrefix(std::string_view prefix);

// A short text for messages: "block 1234/5 (4194304 bytes)" or "pack 77 (65536 bytes)".
std::string KeyText(const ObjectKey& key);

// Stable hash for unordered containers.
struct ObjectKeyHash {
  size_t operator()(const ObjectKey& k) const {
    uint64_t h = k.id * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.index) << 8 | static_cast<uint64_t>(k.kind)) + 0x632BE59BD9B4E019ull +
         (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.bytes) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace folio::store
