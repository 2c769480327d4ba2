// libFuzzer target: the pack walker (fs/store/pack.h).
//
// Input: 8 bytes of pack id, then a pack's bytes. The pack is walked as given, and again with
// its header checksum recomputed so that mutations reach the entry checks. Oracles: a pack
// that walks clean has entries inside it, in order, each verifying alone with
// VerifyPackedEntry; rebuilding it from its entries gives the same bytes; copying every entry
// into a new pack walks clean too.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "fs/store/le.h"
#include "fs/store/pack.h"

namespace {

void Require(bool cond) {
  if (!cond) std::abort();
}

void Check(const std::string& pack, uint64_t id) {
  using namespace folio::store;
  std::vector<PackEntry> entries;
  folio::Status s = WalkPack(pack, id, "fuzz", [&](const PackEntry& e, std::string_view data) {
    Require(e.len == data.size() && e.object_off >= kPackHeaderBytes + kPackEntryHeaderBytes);
    Require(static_cast<uint64_t>(e.object_off) + e.len <= pack.size());
    entries.push_back(e);
  });
  if (!s.ok()) {
    Require(s.code() == folio::StatusCode::kCorruption);
    return;
  }
  PackBuilder again;
  for (const PackEntry& e : entries) {
    std::string_view view(pack);
    Require(VerifyPackedEntry(view.substr(e.object_off - kPackEntryHeaderBytes,
                                          kPackEntryHeaderBytes + e.len),
                              e.len, e.object_off, "fuzz")
                .ok());
    Require(again.Add(view.substr(e.object_off, e.len)) == e.object_off);
  }
  Require(again.Finish(id) == pack);
  PackBuilder copy;
  std::vector<std::pair<uint32_t, uint32_t>> moved;
  Require(CopyLiveEntries(pack, id, "fuzz", [](uint32_t) { return true; }, &copy, &moved).ok());
  Require(moved.size() == entries.size());
  Require(WalkPack(copy.Finish(id + 1), id + 1, "fuzz", nullptr).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8 || size > (1u << 20)) return 0;
  uint64_t id = folio::store::GetLe64(reinterpret_cast<const char*>(data));
  std::string pack(reinterpret_cast<const char*>(data) + 8, size - 8);
  Check(pack, id);
  if (pack.size() >= folio::store::kPackHeaderBytes) {
    folio::store::PutLe32(pack.data() + 28, folio::Crc32c(pack.data(), 28));
    Check(pack, id);
  }
  return 0;
}
