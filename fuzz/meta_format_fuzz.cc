// libFuzzer target: the format record decoder (DecodeFormat, JSON; docs/format/meta.md).
//
// Oracles: a record that decodes passes ValidateFormat, and its encoding decodes again to the
// same encoding; one that does not is Corruption, or NotSupported for a newer format_version,
// with a message.
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
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto f = folio::meta::DecodeFormat(text);
  if (f.ok()) {
    Require(folio::meta::ValidateFormat(*f).ok());
    const std::string encoded = folio::meta::EncodeFormat(*f);
    auto again = folio::meta::DecodeFormat(encoded);
    Require(again.ok());
    Require(folio::meta::EncodeFormat(*again) == encoded);
  } else {
    const auto code = f.status().code();
    Require(code == folio::StatusCode::kCorruption || code == folio::StatusCode::kNotSupported);
    Require(!f.status().message().empty());
  }
  return 0;
}
