// libFuzzer target: the RAID superblock decoder and the assembly decision.
//
// Input: up to 8 member headers, 4096 bytes each (the last one zero-padded). Each header is
// decoded as read, and again with its CRC recomputed so that mutations reach the range checks.
// Oracles: a header that decodes re-encodes to the same bytes (except a header without per-slot
// rebuild positions, whose rebuilding slots decode at rebuild_checkpoint: it re-encodes with
// them, and that encoding is stable); the assembly decision over the decodable headers never
// crashes and, when it succeeds, keeps its invariants.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "folio/raid.h"
#include "raid/assembly.h"
#include "raid/superblock.h"

namespace {

using folio::raid::MemberHeader;
using folio::raid::SuperblockBlock;

void Reseal(SuperblockBlock* b) {
  std::memset(b->data() + 12, 0, 4);
  const uint32_t crc = folio::Crc32c(b->data(), b->size());
  for (int i = 0; i < 4; ++i) (*b)[12 + i] = static_cast<char>(crc >> (8 * i));
}

void Require(bool cond) {
  if (!cond) std::abort();
}

uint64_t Get64(const SuperblockBlock& b, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[off + i]);
  return v;
}

// A block of a build before per-slot rebuild positions (offset 720, 32 x 8 bytes, all zero)
// with an array-wide rebuild_checkpoint (offset 152) its rebuilding slots decode at.
bool LegacyRebuild(const SuperblockBlock& b) {
  for (size_t s = 0; s < 32; ++s) {
    if (Get64(b, 720 + 8 * s) != 0) return false;
  }
  return Get64(b, 152) != 0;
}

// decoded re-encodes to `block` (or, for a legacy block, to a stable encoding).
void CheckRoundTrip(const folio::raid::Superblock& decoded, const SuperblockBlock& block,
                    const std::string& name, uint64_t device_bytes) {
  const SuperblockBlock again = folio::raid::EncodeSuperblock(decoded);
  if (again == block) return;
  Require(LegacyRebuild(block));
  auto twice = folio::raid::DecodeSuperblock(again, name, device_bytes);
  Require(twice.ok() && folio::raid::EncodeSuperblock(*twice) == again);
}

void CheckPlan(const folio::raid::AssemblyPlan& plan, size_t inputs) {
  const auto& ref = plan.reference;
  Require(plan.members.size() == inputs);
  Require(plan.slot_member.size() == ref.member_count);
  const uint32_t needed = ref.member_count - folio::RaidFailureTolerance(ref.level,
                                                                         ref.member_count);
  Require(plan.in_sync >= needed);
  Require(plan.in_sync + plan.rebuilding + plan.missing <= ref.member_count);
  for (uint32_t s = 0; s < ref.member_count; ++s) {
    const int m = plan.slot_member[s];
    if (m < 0) continue;
    Require(static_cast<size_t>(m) < inputs);
    Require(plan.members[m].slot == static_cast<int>(s));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<MemberHeader> headers;
  for (size_t off = 0, i = 0; off < size && i < 8; off += folio::raid::kSuperblockBytes, ++i) {
    SuperblockBlock block{};
    std::memcpy(block.data(), data + off,
                std::min<size_t>(folio::raid::kSuperblockBytes, size - off));
    const std::string name = "m" + std::to_string(i);
    const uint64_t device_bytes = (i % 2) ? 0 : (256ull << 20);
    auto raw = folio::raid::DecodeSuperblock(block, name, device_bytes);
    if (raw.ok()) CheckRoundTrip(*raw, block, name, device_bytes);
    Reseal(&block);
    auto sealed = folio::raid::DecodeSuperblock(block, name, device_bytes);
    if (sealed.ok()) {
      CheckRoundTrip(*sealed, block, name, device_bytes);
    } else {
      Require(sealed.status().code() == folio::StatusCode::kCorruption);
      Require(sealed.status().message().find(name) != std::string_view::npos);
    }
    headers.push_back({name, std::move(sealed)});
  }
  if (headers.empty()) return 0;
  auto plan = folio::raid::DecideAssembly(headers);
  if (plan.ok()) {
    CheckPlan(*plan, headers.size());
  } else {
    Require(!plan.status().message().empty());
  }
  // Forced: never needed when the plain assembly starts; otherwise only failed members of
  // slots they still own come back, each behind the reference.
  auto forced = folio::raid::DecideAssembly(headers, {.force = true});
  Require(forced.ok() || !plan.ok());
  if (forced.ok()) {
    CheckPlan(*forced, headers.size());
    Require(plan.ok() == forced->forced.empty());
    for (const folio::raid::ForcedMember& f : forced->forced) {
      const auto& sb = *headers[static_cast<size_t>(f.member)].superblock;
      Require(sb.role == f.slot && forced->slot_member[f.slot] == f.member);
      Require(forced->reference.slot_uuids[f.slot] == sb.member_uuid);
      Require(sb.events < forced->reference.events);
    }
  } else {
    Require(!forced.status().message().empty());
  }
  return 0;
}
