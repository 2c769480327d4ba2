// Seeds of seeded tests and tools: one parser (decimal, 0x hex or 0-prefixed octal, the whole
// text, 64 bits) and one source of fresh random seeds.
//
// Thread safety: pure functions (RandomSeed reads std::random_device).
#pragma once

#include <cstdint>
#include <string_view>

#include "folio/status.h"

namespace folio {

// Parses `text` as strtoull base 0 does, but all of it: "12345", "0x5eed", "0755".
// InvalidArgument naming `what` and the text for anything else (empty, a sign, trailing
// characters, more than 64 bits).
Result<uint64_t> ParseSeed(std::string_view text, std::string_view what);

// A fresh 64-bit seed from std::random_device.
uint64_t RandomSeed();

}  // namespace folio
