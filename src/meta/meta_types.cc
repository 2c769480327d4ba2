// Codecs of the records engines store as opaque bytes or text: slice records (32 bytes each,
// little-endian) and the format record (JSON). Byte tables in docs/format/meta.md.
#include "meta/meta_types.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>

namespace folio::meta {
namespace {

void Put32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void Put64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t Get32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Offsets of the slice record (docs/format/meta.md, "Slice record").
constexpr size_t kOffPos = 0;
constexpr size_t kOffLen = 4;
constexpr size_t kOffId = 8;
constexpr size_t kOffObjectBytes = 16;
constexpr size_t kOffObjectOff = 20;
constexpr size_t kOffKind = 24;
constexpr size_t kOffReserved = 25;
constexpr uint32_t kPackEntryHeaderBytes = 8;

// Why `s` is not a valid slice, or "" when it is.
std::string SliceProblem(const Slice& s) {
  const uint8_t kind = static_cast<uint8_t>(s.kind);
  if (kind < 1 || kind > 3) return fmt::format("kind {} (must be 1 blocks, 2 packed, 3 zero)", kind);
  if (s.len == 0) return "len 0 (a slice covers at least one byte)";
  if (uint64_t{s.pos} + s.len > kChunkBytes) {
    return fmt::format("pos {} + len {} is past the {}-byte chunk", s.pos, s.len, kChunkBytes);
  }
  if (s.kind == SliceKind::kZero) {
    if (Raw(s.id) != 0 || s.object_bytes != 0 || s.object_off != 0) {
      return fmt::format("zero slice with id {}, object_bytes {}, object_off {} (must be 0)",
                         Raw(s.id), s.object_bytes, s.object_off);
    }
    return "";
  }
  if (Raw(s.id) == 0) return "id 0 (only zero slices have no id)";
  if (s.object_bytes > kChunkBytes) {
    return fmt::format("object_bytes {} is larger than a chunk ({})", s.object_bytes, kChunkBytes);
  }
  if (uint64_t{s.object_off} + s.len > s.object_bytes) {
    return fmt::format("object_off {} + len {} is past object_bytes {}", s.object_off, s.len,
                       s.object_bytes);
  }
  if (s.kind == SliceKind::kPacked && s.object_off < kPackEntryHeaderBytes) {
    return fmt::format("packed slice at object_off {} (its 8-byte entry header must precede it)",
                       s.object_off);
  }
  return "";
}

}  // namespace

Status ValidateSlice(const Slice& s) {
  std::string problem = SliceProblem(s);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument("slice: " + problem);
}

void EncodeSlice(const Slice& s, char out[kSliceRecordBytes]) {
  std::memset(out, 0, kSliceRecordBytes);
  Put32(out + kOffPos, s.pos);
  Put32(out + kOffLen, s.len);
  Put64(out + kOffId, Raw(s.id));
  Put32(out + kOffObjectBytes, s.object_bytes);
  Put32(out + kOffObjectOff, s.object_off);
  out[kOffKind] = static_cast<char>(s.kind);
}

std::string EncodeSlice(const Slice& s) {
  std::string out(kSliceRecordBytes, '\0');
  EncodeSlice(s, out.data());
  return out;
}

std::string EncodeSlices(std::span<const Slice> slices) {
  std::string out(slices.size() * kSliceRecordBytes, '\0');
  for (size_t i = 0; i < slices.size(); ++i) EncodeSlice(slices[i], out.data() + i * kSliceRecordBytes);
  return out;
}

Result<std::vector<Slice>> DecodeSlices(std::string_view bytes, std::string_view what) {
  if (bytes.size() % kSliceRecordBytes != 0) {
    return Status::Corruption(fmt::format("{}: slice list of {} bytes is not a multiple of {}",
                                          what, bytes.size(), kSliceRecordBytes));
  }
  std::vector<Slice> slices;
  slices.reserve(bytes.size() / kSliceRecordBytes);
  for (size_t i = 0; i * kSliceRecordBytes < bytes.size(); ++i) {
    const char* p = bytes.data() + i * kSliceRecordBytes;
    for (size_t r = kOffReserved; r < kSliceRecordBytes; ++r) {
      if (p[r] != 0) {
        return Status::Corruption(fmt::format("{}: slice record {}: reserved byte {} is 0x{:02x} "
                                              "(must be zero)",
                                              what, i, r, static_cast<uint8_t>(p[r])));
      }
    }
    Slice s;
    s.pos = Get32(p + kOffPos);
    s.len = Get32(p + kOffLen);
    s.id = SliceId{Get64(p + kOffId)};
    s.object_bytes = Get32(p + kOffObjectBytes);
    s.object_off = Get32(p + kOffObjectOff);
    s.kind = static_cast<SliceKind>(static_cast<uint8_t>(p[kOffKind]));
    std::string problem = SliceProblem(s);
    if (!problem.empty()) {
      return Status::Corruption(fmt::format("{}: slice record {}: {}", what, i, problem));
    }
    slices.push_back(s);
  }
  return slices;
}

// ---- format record --------------------------------------------------------------------------

namespace {

using Json = nlohmann::json;

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n;          // continuation bytes
    uint8_t lo = 0x80;  // range of the first continuation byte
    uint8_t hi = 0xbf;
    if (c < 0x80) {
      n = 0;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    if (s.size() - i - 1 < n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & 0xc0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

bool ValidUuid(std::string_view u) {
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const char c = u[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

std::string FormatProblem(const FormatRecord& f) {
  if (f.name.empty() || f.name.size() > 255 || !ValidUtf8(f.name)) {
    return "name must be 1..255 bytes of UTF-8";
  }
  if (!ValidUuid(f.uuid)) return fmt::format("uuid '{}' is not a 36-character text UUID", f.uuid);
  if (f.format_version < 1 || f.format_version > kFormatVersion) {
    return fmt::format("format_version {} (this build knows 1..{})", f.format_version,
                       kFormatVersion);
  }
  if (f.block_bytes < (64u << 10) || f.block_bytes > (16u << 20) ||
      (f.block_bytes & (f.block_bytes - 1)) != 0) {
    return fmt::format("block_bytes {} must be a power of two from 64K to 16M", f.block_bytes);
  }
  if (f.pack_below_bytes > f.block_bytes) {
    return fmt::format("pack_below_bytes {} is larger than block_bytes {}", f.pack_below_bytes,
                       f.block_bytes);
  }
  if (f.store_url.empty() || !ValidUtf8(f.store_url)) return "store_url must be non-empty UTF-8";
  if (f.session_timeout_ms <= 0) {
    return fmt::format("session_timeout_ms {} must be positive", f.session_timeout_ms);
  }
  if (f.deletion_grace_ms < 0) {
    return fmt::format("deletion_grace_ms {} must not be negative", f.deletion_grace_ms);
  }
  return "";
}

// Reads key `k` of `j` into `out`; "" on success, else the problem.
template <typename T>
std::string Field(const Json& j, const char* k, T* out) {
  auto it = j.find(k);
  if (it == j.end()) return fmt::format("missing key \"{}\"", k);
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return fmt::format("\"{}\" must be a string", k);
    *out = it->template get<std::string>();
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!it->is_number_unsigned()) return fmt::format("\"{}\" must be a non-negative integer", k);
    const uint64_t v = it->template get<uint64_t>();
    if (v > std::numeric_limits<T>::max()) return fmt::format("\"{}\" {} is out of range", k, v);
    *out = static_cast<T>(v);
  } else {
    if (!it->is_number_integer()) return fmt::format("\"{}\" must be an integer", k);
    if (it->is_number_unsigned() && it->template get<uint64_t>() > uint64_t{INT64_MAX}) {
      return fmt::format("\"{}\" is out of range", k);
    }
    *out = it->template get<T>();
  }
  return "";
}

// Every key but format_version; "" on success, else the first problem.
std::string Fields(const Json& j, FormatRecord* f) {
  std::string p = Field(j, "name", &f->name);
  if (p.empty()) p = Field(j, "uuid", &f->uuid);
  if (p.empty()) p = Field(j, "block_bytes", &f->block_bytes);
  if (p.empty()) p = Field(j, "pack_below_bytes", &f->pack_below_bytes);
  if (p.empty()) p = Field(j, "store_url", &f->store_url);
  if (p.empty()) p = Field(j, "create_ns", &f->create_ns);
  if (p.empty()) p = Field(j, "session_timeout_ms", &f->session_timeout_ms);
  if (p.empty()) p = Field(j, "deletion_grace_ms", &f->deletion_grace_ms);
  return p;
}

}  // namespace

Status ValidateFormat(const FormatRecord& f) {
  std::string problem = FormatProblem(f);
  if (problem.empty()) return Status::OK();
  return Status::InvalidArgument("format record: " + problem);
}

std::string EncodeFormat(const FormatRecord& f) {
  Json j = Json::object();
  j["name"] = f.name;
  j["uuid"] = f.uuid;
  j["format_version"] = f.format_version;
  j["block_bytes"] = f.block_bytes;
  j["pack_below_bytes"] = f.pack_below_bytes;
  j["store_url"] = f.store_url;
  j["create_ns"] = f.create_ns;
  j["session_timeout_ms"] = f.session_timeout_ms;
  j["deletion_grace_ms"] = f.deletion_grace_ms;
  // Invalid UTF-8 (which ValidateFormat refuses before any engine stores a record) is replaced
  // rather than thrown: encoding never fails.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<FormatRecord> DecodeFormat(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption("format record: not a JSON object");
  }
  FormatRecord f;
  // The version first: a newer record may have other keys, and its refusal should say so.
  std::string problem = Field(j, "format_version", &f.format_version);
  if (problem.empty() && f.format_version > kFormatVersion) {
    return Status::NotSupported(fmt::format(
        "format record: format_version {} is newer than this build of Folio reads (1..{}); "
        "use a newer folio",
        f.format_version, kFormatVersion));
  }
  if (problem.empty()) problem = Fields(j, &f);
  if (problem.empty()) problem = FormatProblem(f);
  if (!problem.empty()) return Status::Corruption("format record: " + problem);
  return f;
}

std::string_view CounterName(Counter c) {
  switch (c) {
    case Counter::kNextInode: return "next_inode";
    case Counter::kNextSlice: return "next_slice";
    case Counter::kNextSession: return "next_session";
    case Counter::kUsedBytes: return "used_bytes";
    case Counter::kUsedInodes: return "used_inodes";
  }
  return "unknown";
}

}  // namespace folio::meta
