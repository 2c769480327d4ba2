#include "raid/raid_report.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "base/units.h"

namespace folio::cli {
namespace {

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string Sizes(const HistogramSnapshot& h) {
  std::string out;
  for (const HistogramSnapshot::Bucket& b : h.NonEmpty()) {
    out += "  " + FormatSize(b.lo) + (b.hi != b.lo ? "+" : "") + " x" + std::to_string(b.count);
  }
  return out.empty() ? "  -" : out;
}

Json SizesJson(const HistogramSnapshot& h) {
  Json j = Json::object();
  for (const HistogramSnapshot::Bucket& b : h.NonEmpty()) j[std::to_string(b.lo)] = b.count;
  return j;
}

char HealthChar(MemberHealth h) {
  switch (h) {
    case MemberHealth::kInSync: return 'U';
    case MemberHealth::kRebuilding: return 'R';
    default: return '_';
  }
}

}  // namespace

std::string UnitName(uint64_t unit_bytes) {
  return unit_bytes == 0 ? "dynamic" : FormatSize(unit_bytes);
}

std::string StatusText(const RaidStatus& st) {
  std::string map;
  uint32_t in_sync = 0;
  for (const RaidMemberStatus& m : st.members) {
    map += HealthChar(m.health);
    in_sync += m.health == MemberHealth::kInSync;
  }
  std::string out = std::string(RaidLevelName(st.level)) + " " + st.array_uuid + ": " + st.state +
                    ", " + std::to_string(in_sync) + " of " + std::to_string(st.member_count) +
                    " members in sync [" + map + "]\n";
  out += "  size " + FormatSize(st.array_bytes) + ", chunk " + FormatSize(st.chunk_bytes) +
         ", unit " + UnitName(st.unit_bytes);
  if (st.level == RaidLevel::kRaid5 || st.level == RaidLevel::kRaid6) {
    out += ", layout " + std::string(RaidLayoutName(st.layout));
  }
  out += ", member data " + FormatSize(st.member_data_bytes) + " at offset " +
         FormatSize(st.data_offset_bytes) + ", events " + std::to_string(st.events) + "\n";
  for (const RaidMemberStatus& m : st.members) {
    out += Printf("  slot %-2u %-10s %s\n", m.slot, std::string(MemberHealthName(m.health)).c_str(),
                  m.name.empty() ? "(no member)" : m.name.c_str());
  }
  const RaidSyncProgress& s = st.sync;
  if (s.action == "idle") {
    out += "  sync: idle\n";
  } else {
    const double pct = s.total_bytes ? 100.0 * static_cast<double>(s.position_bytes) /
                                           static_cast<double>(s.total_bytes)
                                     : 0;
    out += Printf("  %s: %.1f%% (%s of %s)", s.action.c_str(), pct,
                  FormatSize(s.position_bytes).c_str(), FormatSize(s.total_bytes).c_str());
    if (s.speed_bytes_per_s > 0) {
      out += Printf(" speed %s/s eta %.1fs",
                    FormatSize(static_cast<uint64_t>(s.speed_bytes_per_s)).c_str(), s.eta_s);
      if (s.updated_unix_ms != 0) {
        const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        const double age_s =
            std::max(0.0, static_cast<double>(now_ms - static_cast<int64_t>(s.updated_unix_ms)) /
                              1e3);
        out += Printf(" (checkpoint %.1fs ago)", age_s);
      }
    }
    out += "\n";
  }
  if (st.level != RaidLevel::kRaid0) {
    out += "  bitmap: " + std::to_string(st.dirty_regions) + " dirty, " +
           std::to_string(st.resync_regions) + " to resync, " +
           FormatSize(st.bitmap_region_bytes) + " regions\n";
  }
  return out;
}

Json StatusJson(const RaidStatus& st) {
  Json j;
  j["array_uuid"] = st.array_uuid;
  j["level"] = std::string(RaidLevelName(st.level));
  j["layout"] = std::string(RaidLayoutName(st.layout));
  j["state"] = st.state;
  j["clean"] = st.clean;
  j["member_count"] = st.member_count;
  j["failed"] = st.failed;
  j["chunk_bytes"] = st.chunk_bytes;
  j["unit"] = UnitName(st.unit_bytes);
  j["array_bytes"] = st.array_bytes;
  j["member_data_bytes"] = st.member_data_bytes;
  j["data_offset_bytes"] = st.data_offset_bytes;
  j["events"] = st.events;
  j["dirty_regions"] = st.dirty_regions;
  j["resync_regions"] = st.resync_regions;
  j["bitmap_region_bytes"] = st.bitmap_region_bytes;
  j["rebuild_checkpoint_bytes"] = st.rebuild_checkpoint;
  j["sync"] = Json{{"action", st.sync.action},
                   {"position_bytes", st.sync.position_bytes},
                   {"total_bytes", st.sync.total_bytes},
                   {"speed_bytes_per_s", st.sync.speed_bytes_per_s},
                   {"eta_s", st.sync.eta_s},
                   {"mismatches", st.sync.mismatches}};
  if (st.sync.updated_unix_ms != 0) j["sync"]["updated_unix_ms"] = st.sync.updated_unix_ms;
  Json members = Json::array();
  for (const RaidMemberStatus& m : st.members) {
    members.push_back(Json{{"slot", m.slot},
                           {"name", m.name},
                           {"uuid", m.member_uuid},
                           {"health", std::string(MemberHealthName(m.health))}});
  }
  j["members"] = std::move(members);
  return j;
}

std::string SyncReportText(const RaidSyncReport& r, uint64_t members) {
  const double mbps = r.seconds > 0 ? static_cast<double>(r.done_bytes) / r.seconds / 1e6 : 0;
  std::string out = Printf("%s %s: %s visited per member in %.2fs (%.1f MB/s per member, %s "
                           "in all), unit %s, window %s\n",
                           r.action.c_str(), r.completed ? "complete" : "stopped",
                           FormatSize(r.done_bytes).c_str(), r.seconds, mbps,
                           FormatSize(r.done_bytes * members).c_str(),
                           UnitName(r.unit_bytes).c_str(), FormatSize(r.window_bytes).c_str());
  out += Printf("  mismatches: %" PRIu64 " of %" PRIu64 " stripe units", r.mismatches, r.stripes);
  if (r.repaired) out += Printf(", %" PRIu64 " rewritten", r.repaired);
  if (r.unsynced) {
    out += Printf(", %" PRIu64 " could not be made consistent (a member is missing where an "
                  "unclean stop left parity untrusted)", r.unsynced);
  }
  if (!r.mismatched_stripes.empty()) {
    out += " (stripes";
    for (uint64_t s : r.mismatched_stripes) out += " " + std::to_string(s);
    out += ")";
  }
  // Parity is timed by the wall clock (a thread CPU clock read is a ~1.3 us syscall, as long as
  // the parity of a small stripe), so on a loaded machine it can exceed the CPU time.
  out += Printf("\n  cpu: %.3fs; parity code: %.3fs wall clock\n", r.cpu_seconds, r.parity_seconds);
  if (!r.completed) {
    out += "  stopped at " + FormatSize(r.checkpoint_bytes) +
           "; run the command again to resume from there\n";
  }
  return out;
}

Json SyncReportJson(const RaidSyncReport& r) {
  Json j;
  j["action"] = r.action;
  j["completed"] = r.completed;
  j["mismatches"] = r.mismatches;
  j["mismatched_stripes"] = r.mismatched_stripes;
  j["repaired"] = r.repaired;
  j["unsynced"] = r.unsynced;
  j["stripes"] = r.stripes;
  j["start_bytes"] = r.start_bytes;
  j["checkpoint_bytes"] = r.checkpoint_bytes;
  j["done_bytes"] = r.done_bytes;
  j["unit"] = UnitName(r.unit_bytes);
  j["window_bytes"] = r.window_bytes;
  j["seconds"] = r.seconds;
  j["mb_per_s"] = r.seconds > 0 ? static_cast<double>(r.done_bytes) / r.seconds / 1e6 : 0;
  j["cpu_seconds"] = r.cpu_seconds;
  j["parity_seconds"] = r.parity_seconds;
  return j;
}

std::string MemberSummaryText(const RaidMemberStats& m) {
  const DeviceStatsSnapshot& s = m.io;
  std::string out = "Total (" + m.name + "):\n";
  out += Printf(" Reads Completed: %8" PRIu64 ", %10" PRIu64 "KiB\t Writes Completed: %8" PRIu64
                ", %10" PRIu64 "KiB\n",
                s.read_requests, s.read_bytes / 1024, s.write_requests, s.write_bytes / 1024);
  out += Printf(" Read Merges:     %8" PRIu64 "              \t Write Merges:     %8" PRIu64 "\n",
                s.read_merges, s.write_merges);
  out += " Read sizes:" + Sizes(s.read_request_bytes) + "\n";
  out += " Write sizes:" + Sizes(s.write_request_bytes) + "\n";
  return out;
}

std::string IoSummaryText(const RaidStats& s) {
  std::string out;
  for (const RaidMemberStats& m : s.members) out += MemberSummaryText(m);
  out += Printf("stripe writes: %" PRIu64 " full, %" PRIu64 " read-modify-write, %" PRIu64
                " reconstruct-write, %" PRIu64 " degraded; degraded reads %" PRIu64
                ", read errors corrected %" PRIu64 "\n",
                s.full_stripe_writes, s.rmw_writes, s.rcw_writes, s.degraded_writes,
                s.degraded_reads, s.read_errors_corrected);
  const double cpu = static_cast<double>(s.cpu_ns) / 1e9;
  const double parity = static_cast<double>(s.parity_ns) / 1e9;
  out += Printf("cpu: %.3fs in the RAID I/O path; parity code: %.3fs wall clock\n", cpu, parity);
  return out;
}

Json IoSummaryJson(const RaidStats& s) {
  Json members = Json::array();
  for (const RaidMemberStats& m : s.members) members.push_back(MemberSummaryJson(m));
  Json j;
  j["members"] = std::move(members);
  j["full_stripe_writes"] = s.full_stripe_writes;
  j["rmw_writes"] = s.rmw_writes;
  j["rcw_writes"] = s.rcw_writes;
  j["degraded_writes"] = s.degraded_writes;
  j["degraded_reads"] = s.degraded_reads;
  j["read_errors_corrected"] = s.read_errors_corrected;
  j["bitmap_writes"] = s.bitmap_writes;
  j["stripe_cache_waits"] = s.stripe_cache_waits;
  j["stripe_cache_in_arena"] = s.stripe_cache_in_arena;
  j["stripe_buffers_from_heap"] = s.stripe_buffers_from_heap;
  j["cpu_seconds"] = static_cast<double>(s.cpu_ns) / 1e9;
  j["parity_seconds"] = static_cast<double>(s.parity_ns) / 1e9;
  return j;
}

Json MemberSummaryJson(const RaidMemberStats& m) {
  const DeviceStatsSnapshot& s = m.io;
  Json j;
  j["name"] = m.name;
  j["slot"] = m.slot;
  j["reads_completed"] = s.read_requests;
  j["read_kib"] = s.read_bytes / 1024;
  j["writes_completed"] = s.write_requests;
  j["write_kib"] = s.write_bytes / 1024;
  j["read_merges"] = s.read_merges;
  j["write_merges"] = s.write_merges;
  j["read_sizes"] = SizesJson(s.read_request_bytes);
  j["write_sizes"] = SizesJson(s.write_request_bytes);
  return j;
}

}  // namespace folio::cli
