// libFuzzer target: the slice record decoder (DecodeSlices, docs/format/meta.md).
//
// Oracles: a list that decodes re-encodes to exactly the input bytes (every field is encoded,
// reserved bytes must be zero) and every slice in it passes ValidateSlice; a list that does
// not decode is Corruption naming the record it was given.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "meta/meta_types.h"

namespace {
void Require(bool cond) {
  if (!cond) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto slices = folio::meta::DecodeSlices(bytes, "inode 7 chunk 2");
  if (slices.ok()) {
    Require(folio::meta::EncodeSlices(*slices) == bytes);
    for (const auto& s : *slices) Require(folio::meta::ValidateSlice(s).ok());
  } else {
    Require(slices.status().code() == folio::StatusCode::kCorruption);
    Require(slices.status().message().find("inode 7 chunk 2") != std::string_view::npos);
  }
  return 0;
}
