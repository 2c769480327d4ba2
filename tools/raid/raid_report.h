// Text and JSON renderings of RAID status, sync reports and per-member request statistics
// for the `folio raid` commands.
//
// The per-member summary follows blktrace's per-device "Total" block:
//   Total (/d/m0):
//    Reads Completed:      512,   131072KiB	 Writes Completed:        2,        8KiB
//    Read Merges:          480             	 Write Merges:            0
//    Read sizes:  4K x12  256K x500
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "folio/raid.h"

namespace folio::cli {

using Json = nlohmann::ordered_json;

// /proc/mdstat-like status, several lines.
std::string StatusText(const RaidStatus& st);
Json StatusJson(const RaidStatus& st);

std::string SyncReportText(const RaidSyncReport& r, uint64_t members);
Json SyncReportJson(const RaidSyncReport& r);

std::string MemberSummaryText(const RaidMemberStats& m);
Json MemberSummaryJson(const RaidMemberStats& m);

// The array's I/O since it was opened: every member's "Total" block, the stripe write modes,
// and the CPU seconds of the I/O path with parity's share.
std::string IoSummaryText(const RaidStats& s);
Json IoSummaryJson(const RaidStats& s);

// "dynamic" or a size ("16K").
std::string UnitName(uint64_t unit_bytes);

}  // namespace folio::cli
