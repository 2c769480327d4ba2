#include "fs/store/object_key.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace folio::store {

std::string_view ObjectKindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kBlock: return "block";
    case ObjectKind::kPack: return "pack";
  }
  return "unknown";
}

Status ValidateKey(const ObjectKey& key) {
  if (key.kind != ObjectKind::kBlock && key.kind != ObjectKind::kPack) {
    return Status::InvalidArgument(
        fmt::format("object kind {}: must be block (1) or pack (2)", static_cast<int>(key.kind)));
  }
  if (key.id == 0) return Status::InvalidArgument(KeyText(key) + ": id 0 is never valid");
  if (key.bytes == 0 || key.bytes > kMaxObjectBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: size must be 1..{} bytes", KeyText(key), kMaxObjectBytes));
  }
  if (key.kind == ObjectKind::kPack && key.index != 0) {
    return Status::InvalidArgument(KeyText(key) + ": a pack has no block index (must be 0)");
  }
  return Status::OK();
}

std::string ObjectDirName(const ObjectKey& key) {
  return fmt::format("{}/{}/{}", key.kind == ObjectKind::kPack ? "packs" : "chunks",
                     key.id / 1000000, key.id / 1000);
}

std::string ObjectName(std::string_view prefix, const ObjectKey& key) {
  std::string leaf = key.kind == ObjectKind::kPack
                         ? fmt::format("{}_{}", key.id, key.bytes)
                         : fmt::format("{}_{}_{}", key.id, key.index, key.bytes);
  if (prefix.empty()) return fmt::format("{}/{}", ObjectDirName(key), leaf);
  return fmt::format("{}/{}/{}", prefix, ObjectDirName(key), leaf);
}

namespace {

// Parses a decimal without sign or leading zeros (except "0" itself), consuming all of text.
bool ParseDecimal(std::string_view text, uint64_t* out) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

}  // namespace

Result<ObjectKey> ParseObjectName(std::string_view name) {
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format("'{}' is not a block store object name", name));
  };
  std::vector<std::string_view> parts = Split(name, '/');
  if (parts.size() != 4) return bad();
  ObjectKey key;
  if (parts[0] == "chunks") {
    key.kind = ObjectKind::kBlock;
  } else if (parts[0] == "packs") {
    key.kind = ObjectKind::kPack;
  } else {
    return bad();
  }
  std::vector<std::string_view> leaf = Split(parts[3], '_');
  uint64_t v[3] = {0, 0, 0};
  size_t want = key.kind == ObjectKind::kBlock ? 3 : 2;
  if (leaf.size() != want) return bad();
  for (size_t i = 0; i < want; ++i) {
    if (!ParseDecimal(leaf[i], &v[i])) return bad();
  }
  key.id = v[0];
  if (key.kind == ObjectKind::kBlock) {
    if (v[1] > UINT32_MAX || v[2] > UINT32_MAX) return bad();
    key.index = static_cast<uint32_t>(v[1]);
    key.bytes = static_cast<uint32_t>(v[2]);
  } else {
    if (v[1] > UINT32_MAX) return bad();
    key.bytes = static_cast<uint32_t>(v[1]);
  }
  if (!ValidateKey(key).ok()) return bad();
  // Exactly the canonical form (the directory levels must match the id).
  if (ObjectName("", key) != name) return bad();
  return key;
}

Status ValidatePrefix(std::string_view prefix) {
  bool ok = !prefix.empty() && prefix.size() <= 64 && prefix != "." && prefix != "..";
  for (char c : prefix) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '_' || c == '-';
    ok = ok && allowed;
  }
  if (!ok) {
    return Status::InvalidArgument(fmt::format(
        "store prefix '{}': must be 1..64 characters of A-Z a-z 0-9 . _ - (e.g. the volume name)",
        prefix));
  }
  return Status::OK();
}

std::string KeyText(const ObjectKey& key) {
  if (key.kind == ObjectKind::kPack) return fmt::format("pack {} ({} bytes)", key.id, key.bytes);
  return fmt::format("block {}/{} ({} bytes)", key.id, key.index, key.bytes);
}

}  // namespace folio::store
