// Formatting a Folio FS volume: the metadata side (the engine's schema, the format record and
// the root directory). The store is formatted by its own library (fs/store/store_url.h) first,
// by the caller, so a failed store leaves the metadata untouched.
//
// Thread safety: pure functions over the engine.
#pragma once

#include <cstdint>
#include <string>

#include "meta/meta_engine.h"

namespace folio::fs {

struct FormatOptions {
  std::string name;        // volume name: also the store prefix ([A-Za-z0-9._-]{1,64})
  std::string store_url;   // dir:PATH, dev:SPEC
  uint64_t block_bytes = 4ull << 20;
  uint64_t pack_below_bytes = 64ull << 10;
  bool force = false;      // replace an existing volume
  uint32_t root_uid = 0;   // owner of the root directory
  uint32_t root_gid = 0;
  uint32_t root_mode = 0777;
  int64_t session_timeout_ms = 60000;
  int64_t deletion_grace_ms = 3600000;
};

// Checks the options (InvalidArgument naming the value and the fix).
Status ValidateFormatOptions(const FormatOptions& options);

// The volume already in the engine, if any (nullopt for an empty database). Errors: what
// the engine says (a foreign database is InvalidArgument, a newer format NotSupported).
Result<std::optional<meta::FormatRecord>> ReadFormat(meta::MetaEngine* meta);

// Creates the schema (wiping a volume there with force; Exists naming it without), writes the
// format record (a new UUID) and the root directory. Returns the record.
Result<meta::FormatRecord> FormatVolume(meta::MetaEngine* meta, const FormatOptions& options);

// A random RFC 4122 version 4 UUID in its 36-character text form.
std::string NewUuid();

}  // namespace folio::fs
