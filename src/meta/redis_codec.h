// Little-endian byte records of the Redis engine's values (docs/format/meta.md, "Redis
// schema"): a writer that appends fields and a reader that takes them in order and says
// whether the record had exactly the bytes it needed.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace folio::meta {

class ByteWriter {
 public:
  ByteWriter& U8(uint8_t v) { return Raw(&v, 1); }
  ByteWriter& U32(uint32_t v) { return Le(v, 4); }
  ByteWriter& U64(uint64_t v) { return Le(v, 8); }
  ByteWriter& I64(int64_t v) { return Le(static_cast<uint64_t>(v), 8); }
  // A length-prefixed (u32) string.
  ByteWriter& Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  ByteWriter& Raw(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
    return *this;
  }
  ByteWriter& Le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  int64_t I64() { return static_cast<int64_t>(Le(8)); }
  std::string Str() {
    const uint32_t n = U32();
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  // Every field was there and nothing is left over.
  bool Done() const { return ok_ && in_.empty(); }
  bool ok() const { return ok_; }
  size_t left() const { return in_.size(); }

 private:
  uint64_t Le(int bytes) {
    if (!ok_ || in_.size() < static_cast<size_t>(bytes)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(bytes);
    return v;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace folio::meta
