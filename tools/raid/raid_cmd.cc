#include "raid/raid_cmd.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/device_lock.h"
#include "base/progress.h"
#include "base/units.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "cli/export_control.h"
#include "fuse/export_names.h"
#include "raid/raid_report.h"

namespace folio::cli {
namespace {

struct RaidArgs {
  std::vector<std::string> members;
  bool json = false;
  bool wait = false;
  // create
  std::string level = "5";
  std::string layout = "left-symmetric";
  std::string chunk = "64K";
  std::string unit = "dynamic";
  std::string size;
  std::string bitmap_region;
  bool assume_clean = false;
  bool force = false;
  // sync
  std::string window = "md";
  uint64_t speed_min_kib = 1000;
  uint64_t speed_max_kib = 0;
  std::string for_duration;
  std::string unit_override;
  // fail / replace
  std::string member;
  std::string old_member;
  int slot = -1;
  std::string new_member;
  // io
  bool buffered = false;
  std::string engine = "auto";
};

Result<uint64_t> ParseUnit(const std::string& text, const std::string& flag) {
  if (text == "dynamic") return uint64_t{0};
  FOLIO_ASSIGN_OR_RETURN(uint64_t u, ParseSize(text, flag));
  if (!IsPowerOfTwo(u) || u < 4096) {
    return Status::InvalidArgument(flag + " " + text +
                                   ": must be dynamic or a power of two of at least 4K (e.g. 16K)");
  }
  return u;
}

Result<DeviceOpenOptions> IoOptions(const RaidArgs& a) {
  DeviceOpenOptions o;
  o.direct = !a.buffered;
  if (a.engine == "auto") {
    o.engine = FileEngine::kAuto;
  } else if (a.engine == "uring") {
    o.engine = FileEngine::kUring;
  } else if (a.engine == "sync") {
    o.engine = FileEngine::kSync;
  } else {
    return Status::InvalidArgument("--engine " + a.engine + ": must be auto, uring or sync");
  }
  if (!a.unit_override.empty()) {
    FOLIO_ASSIGN_OR_RETURN(uint64_t u, ParseUnit(a.unit_override, "--unit"));
    o.raid.unit_bytes = u;
  }
  return o;
}

// The same I/O options, for looking at members without writing or locking them.
DeviceOpenOptions ReadOnly(DeviceOpenOptions o) {
  o.read_only = true;
  return o;
}

// An assembled array and the member locks it needs.
struct Assembled {
  std::vector<DeviceLock> locks;
  std::unique_ptr<RaidDevice> raid;
};

// force: a forced assembly (raid resync --force only; see RaidAssembleOptions).
Result<Assembled> AssembleMembers(const RaidArgs& a, bool force = false) {
  FOLIO_ASSIGN_OR_RETURN(DeviceOpenOptions o, IoOptions(a));
  Assembled out;
  FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members, OpenMembers(a.members, o, &out.locks));
  FOLIO_ASSIGN_OR_RETURN(out.raid, RaidDevice::Assemble(std::move(members), o.raid,
                                                        RaidAssembleOptions{.force = force}));
  return out;
}

// What a forced assembly took back, one line each.
std::string ForcedText(const std::vector<RaidForcedMember>& forced) {
  std::string out;
  for (const RaidForcedMember& f : forced) {
    out += "forced back into slot " + std::to_string(f.slot) + ": " + f.name + " (" +
           std::to_string(f.events_behind) + " superblock update(s) behind: events " +
           std::to_string(f.events) + ", array at " + std::to_string(f.events + f.events_behind) +
           "); every region marked for resync\n";
  }
  return out;
}

Json ForcedJson(const std::vector<RaidForcedMember>& forced) {
  Json j = Json::array();
  for (const RaidForcedMember& f : forced) {
    j.push_back({{"slot", f.slot}, {"name", f.name}, {"events", f.events},
                 {"events_behind", f.events_behind}});
  }
  return j;
}

Result<RaidSyncOptions> SyncOptions(const RaidArgs& a) {
  RaidSyncOptions o;
  if (a.window != "md") {
    FOLIO_ASSIGN_OR_RETURN(o.window_bytes, ParseSize(a.window, "--sync-window"));
    if (o.window_bytes < 4096) {
      return Status::InvalidArgument("--sync-window " + a.window +
                                     ": must be md or a size of at least 4K");
    }
  }
  o.speed_limit_min_kib = a.speed_min_kib;
  o.speed_limit_max_kib = a.speed_max_kib;
  if (!a.for_duration.empty()) {
    FOLIO_ASSIGN_OR_RETURN(uint64_t us, ParseDurationUs(a.for_duration, "--for"));
    o.max_seconds = static_cast<double>(us) / 1e6;
  }
  return o;
}

int Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : RuntimeError("folio raid", "stdout: write failed");
}

// Runs a sync action with a progress line on a terminal (off with --json).
Result<RaidSyncReport> RunSyncWithProgress(RaidDevice* raid, RaidSyncAction action,
                                           RaidSyncOptions options, bool json) {
  ProgressOptions po;
  po.mode = json ? ProgressMode::kOff : ProgressMode::kAuto;
  po.unit = ProgressUnit::kBytes;
  ProgressReporter progress(std::string(RaidSyncActionName(action)),
                            raid->Describe().member_data_bytes, po);
  options.progress = [&](const RaidSyncProgress& p) {
    progress.SetDetail(p.mismatches ? std::to_string(p.mismatches) + " mismatches" : "");
    progress.Update(p.position_bytes);
  };
  auto report = raid->Sync(action, options);
  progress.Finish();
  return report;
}

// A device that carries a Folio RAID superblock (of any array) is not overwritten without
// --force: InvalidArgument naming it, its array and slot. OK when it carries none.
Status CheckNotAnArrayMember(const std::string& path, const DeviceOpenOptions& io) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> dev, OpenMembers({path}, ReadOnly(io), nullptr));
  auto label = ReadRaidMemberLabel(path, dev[0].device.get());
  if (label.ok()) {
    return Status::InvalidArgument(path + " belongs to " +
                                   std::string(RaidLevelName(label->level)) + " array " +
                                   label->array_uuid + " (slot " + std::to_string(label->slot) +
                                   "); use --force to overwrite it");
  }
  return label.status().code() == StatusCode::kNotFound ? Status::OK() : label.status();
}

// Removes the member files a failed create made, so that a refused create leaves nothing.
class CreatedFiles {
 public:
  void Add(const std::string& path) { paths_.push_back(path); }
  void Keep() { paths_.clear(); }
  ~CreatedFiles() {
    for (const std::string& p : paths_) (void)unlink(p.c_str());
  }

 private:
  std::vector<std::string> paths_;
};

int RunCreate(const RaidArgs& a) {
  const std::string prefix = "folio raid create";
  // Every option first: nothing is created or opened before they are all good.
  RaidCreateOptions co;
  auto level = ParseRaidLevel(a.level);
  if (!level.ok()) return ExitWithStatus(prefix, level.status());
  co.level = *level;
  auto layout = ParseRaidLayout(a.layout);
  if (!layout.ok()) return ExitWithStatus(prefix, layout.status());
  co.layout = *layout;
  auto chunk = ParseSize(a.chunk, "--chunk");
  if (!chunk.ok()) return ExitWithStatus(prefix, chunk.status());
  if (!IsPowerOfTwo(*chunk) || *chunk < kRaidMinChunkBytes || *chunk > kRaidMaxChunkBytes) {
    return UsageError(prefix, "--chunk " + a.chunk +
                                  ": must be a power of two between 4K and 4M (e.g. 64K)");
  }
  co.chunk_bytes = *chunk;
  auto unit = ParseUnit(a.unit, "--unit");
  if (!unit.ok()) return ExitWithStatus(prefix, unit.status());
  if (*unit > co.chunk_bytes) {
    return UsageError(prefix, "--unit " + a.unit + ": larger than the chunk (" + a.chunk +
                                  "); must be 4K..chunk or dynamic");
  }
  co.unit_bytes = *unit;
  co.assume_clean = a.assume_clean;
  uint64_t size = 0;
  if (!a.size.empty()) {
    auto s = ParseSize(a.size, "--size");
    if (!s.ok()) return ExitWithStatus(prefix, s.status());
    if (*s == 0 || *s % 4096 != 0) {
      return UsageError(prefix, "--size " + a.size + ": must be a non-zero multiple of 4K");
    }
    size = *s;
  }
  if (!a.bitmap_region.empty()) {
    auto r = ParseSize(a.bitmap_region, "--bitmap-region");
    if (!r.ok()) return ExitWithStatus(prefix, r.status());
    if (!IsPowerOfTwo(*r) || *r < co.chunk_bytes) {
      return UsageError(prefix, "--bitmap-region " + a.bitmap_region +
                                    ": must be a power of two of at least the chunk (" + a.chunk +
                                    ")");
    }
    co.bitmap_region_bytes = *r;
  }
  auto io = IoOptions(a);
  if (!io.ok()) return ExitWithStatus(prefix, io.status());

  // The members as they are: which exist, their sizes (regular files; a block device's is
  // known once opened, and Create checks it), which are missing and need --size.
  std::set<std::string> seen;
  std::vector<bool> exists(a.members.size());
  uint64_t smallest = 0;
  std::string smallest_name;
  for (size_t i = 0; i < a.members.size(); ++i) {
    const std::string& path = a.members[i];
    if (!seen.insert(path).second) return UsageError(prefix, "member " + path + " is listed twice");
    struct stat st;
    uint64_t bytes = 0;
    if (stat(path.c_str(), &st) == 0) {
      exists[i] = true;
      if (S_ISREG(st.st_mode)) bytes = std::max<uint64_t>(static_cast<uint64_t>(st.st_size), 1);
    } else if (size == 0) {
      return UsageError(prefix, "member " + path + ": no such file; give --size to create it");
    } else {
      bytes = size;
    }
    if (bytes != 0 && (smallest == 0 || bytes < smallest)) {
      smallest = bytes;
      smallest_name = path;
    }
  }
  Status valid = ValidateRaidCreate(co, static_cast<uint32_t>(a.members.size()), smallest,
                                    smallest_name);
  if (!valid.ok()) return ExitWithStatus(prefix, valid);
  // A member of an array (this one or another) is not overwritten without --force.
  for (size_t i = 0; i < a.members.size() && !a.force; ++i) {
    if (!exists[i]) continue;
    Status free_to_use = CheckNotAnArrayMember(a.members[i], *io);
    if (!free_to_use.ok()) return ExitWithStatus(prefix, free_to_use);
  }

  CreatedFiles created;
  for (size_t i = 0; i < a.members.size(); ++i) {
    if (!exists[i]) created.Add(a.members[i]);
  }
  std::vector<DeviceLock> locks;
  DeviceOpenOptions create_io = *io;
  create_io.create_bytes = size;
  auto members = OpenMembers(a.members, create_io, &locks);
  if (!members.ok()) return ExitWithStatus(prefix, members.status());
  auto raid = RaidDevice::Create(std::move(*members), co, io->raid);
  if (!raid.ok()) return ExitWithStatus(prefix, raid.status());
  created.Keep();
  std::string out;
  Json j;
  if (a.wait && !a.assume_clean && co.level != RaidLevel::kRaid0) {
    auto report = RunSyncWithProgress(raid->get(), RaidSyncAction::kResync, {}, a.json);
    if (!report.ok()) return ExitWithStatus(prefix, report.status());
    out += SyncReportText(*report, (*raid)->Describe().member_count);
    j["resync"] = SyncReportJson(*report);
  }
  const RaidStatus st = (*raid)->Describe();
  Status stop = (*raid)->Stop();
  if (!stop.ok()) return ExitWithStatus(prefix, stop);
  if (a.json) {
    j["status"] = StatusJson(st);
    return Print(j.dump(2) + "\n");
  }
  out = StatusText(st) + out;
  if (st.resync_regions > 0) {
    out += "initial resync pending: run 'folio raid resync";
    for (const std::string& m : a.members) out += " " + m;
    out += "' (or create with --wait, or --assume-clean for zeroed members)\n";
  }
  return Print(out);
}

// Reads the superblocks and bitmaps without the members' locks and without writing, so it
// works (and changes nothing) while another process runs the array, e.g. a resync.
int RunStatus(const RaidArgs& a) {
  const std::string prefix = "folio raid status";
  auto io = IoOptions(a);
  if (!io.ok()) return ExitWithStatus(prefix, io.status());
  auto members = OpenMembers(a.members, ReadOnly(*io), nullptr);
  if (!members.ok()) return ExitWithStatus(prefix, members.status());
  auto st = RaidDevice::Inspect(std::move(*members));
  if (!st.ok()) return ExitWithStatus(prefix, st.status());
  std::string holder;
  for (const std::string& m : a.members) {
    holder = LockHolder(m);
    if (!holder.empty()) break;
  }
  if (holder.empty()) {
    // Nobody runs the array: a speed in the superblocks is from a run that died.
    st->sync.speed_bytes_per_s = 0;
    st->sync.eta_s = 0;
    st->sync.updated_unix_ms = 0;
  }
  if (a.json) {
    Json j = StatusJson(*st);
    j["in_use_by"] = holder.empty() ? Json(nullptr) : Json(holder);
    return Print(j.dump(2) + "\n");
  }
  std::string out = StatusText(*st);
  if (!holder.empty()) out += "  in use by " + holder + "\n";
  return Print(out);
}

int RunSync(const RaidArgs& a, RaidSyncAction action) {
  const std::string prefix = "folio raid " + std::string(RaidSyncActionName(action));
  auto options = SyncOptions(a);
  if (!options.ok()) return ExitWithStatus(prefix, options.status());
  auto arr = AssembleMembers(a, action == RaidSyncAction::kResync && a.force);
  if (!arr.ok()) return ExitWithStatus(prefix, arr.status());
  const RaidStatus assembled = arr->raid->Describe();
  const std::vector<RaidForcedMember>& forced = assembled.forced;
  if (!forced.empty() && assembled.failed > 0) {
    // Degraded: a resync has nothing to check parity against. The regions stay marked until
    // the failed slots are rebuilt.
    Status stop = arr->raid->Stop();
    if (!stop.ok()) return ExitWithStatus(prefix, stop);
    if (a.json) {
      Json j;
      j["forced"] = ForcedJson(forced);
      j["resync"] = nullptr;
      j["status"] = StatusJson(assembled);
      return Print(j.dump(2) + "\n");
    }
    return Print(ForcedText(forced) + "no resync: the array is degraded (" +
                 std::to_string(assembled.failed) + " failed); replace the failed slot(s) "
                 "('folio raid replace --slot N --new PATH') and rebuild\n" +
                 StatusText(assembled));
  }
  // Printed before the resync runs: the members' superblocks already say so.
  if (!a.json && !forced.empty()) {
    const int rc = Print(ForcedText(forced));
    if (rc != kExitOk) return rc;
  }
  auto report = RunSyncWithProgress(arr->raid.get(), action, *options, a.json);
  if (!report.ok()) return ExitWithStatus(prefix, report.status());
  const RaidStatus st = arr->raid->Describe();
  const RaidStats io = arr->raid->raid_stats();
  Status stop = arr->raid->Stop();
  if (!stop.ok()) return ExitWithStatus(prefix, stop);
  if (a.json) {
    Json j = SyncReportJson(*report);
    if (action == RaidSyncAction::kResync) j["forced"] = ForcedJson(forced);
    j["status"] = StatusJson(st);
    j["io"] = IoSummaryJson(io);
    return Print(j.dump(2) + "\n");
  }
  return Print(SyncReportText(*report, st.member_count) + StatusText(st) + IoSummaryText(io));
}

// `fail` / `replace` on members a running `folio export` holds: the command goes to the
// export's control file (cli/export_control.h), which runs it on the served volume. Returns
// -1 when no export holds them (the caller reports its own error).
int ForwardToExport(const std::string& prefix, const RaidArgs& a, const ControlCommand& command) {
  const std::optional<ExportProcess> to = FindExportHolding(a.members);
  if (!to) return -1;
  const Status sent = SendControlCommand(*to, command);
  if (!sent.ok()) return ExitWithStatus(prefix, sent);
  const std::string text = FormatControlCommand(command);
  if (a.json) {
    Json j;
    j["forwarded_to_export"] = {{"pid", to->pid}, {"mount", to->mountpoint}, {"command", text}};
    return Print(j.dump(2) + "\n");
  }
  return Print("sent '" + text + "' to the folio export holding the members (process " +
               std::to_string(to->pid) + ", mounted at " + to->mountpoint + "); see " +
               to->mountpoint + "/" + fuse::kStatsName + "\n");
}

int RunFail(const RaidArgs& a) {
  const std::string prefix = "folio raid fail";
  auto arr = AssembleMembers(a);
  if (!arr.ok() && arr.status().code() == StatusCode::kBusy) {
    const int rc = ForwardToExport(prefix, a, ControlCommand::Fail(ResolvedPath(a.member)));
    if (rc >= 0) return rc;
  }
  if (!arr.ok()) return ExitWithStatus(prefix, arr.status());
  const int slot = arr->raid->SlotOf(a.member);
  if (slot < 0) {
    return UsageError(prefix, "--member " + a.member + ": not an active member of this array "
                              "(see folio raid status)");
  }
  Status st = arr->raid->FailMember(static_cast<uint32_t>(slot));
  if (!st.ok()) return ExitWithStatus(prefix, st);
  const RaidStatus status = arr->raid->Describe();
  return Print(a.json ? StatusJson(status).dump(2) + "\n" : StatusText(status));
}

int RunReplace(const RaidArgs& a) {
  const std::string prefix = "folio raid replace";
  if (a.new_member.empty()) return UsageError(prefix, "--new PATH is required");
  if ((a.old_member.empty()) == (a.slot < 0)) {
    return UsageError(prefix, "give the member to replace: --old PATH or --slot N");
  }
  auto io = IoOptions(a);
  if (!io.ok()) return ExitWithStatus(prefix, io.status());
  // The new member is checked as create checks its members, before anything is assembled
  // (or forwarded to an export).
  struct stat new_st;
  const bool new_exists = stat(a.new_member.c_str(), &new_st) == 0;
  for (const std::string& m : a.members) {
    struct stat st;
    if (m == a.new_member || (new_exists && stat(m.c_str(), &st) == 0 &&
                              st.st_dev == new_st.st_dev && st.st_ino == new_st.st_ino)) {
      return UsageError(prefix, "--new " + a.new_member + ": is one of the members listed; "
                                "give a device that is not in the array");
    }
  }
  if (new_exists && !a.force) {
    Status free_to_use = CheckNotAnArrayMember(a.new_member, *io);
    if (!free_to_use.ok()) return ExitWithStatus(prefix, free_to_use);
  }
  auto arr = AssembleMembers(a);
  if (!arr.ok() && arr.status().code() == StatusCode::kBusy && !a.old_member.empty()) {
    const int rc = ForwardToExport(
        prefix, a, ControlCommand::Replace(ResolvedPath(a.old_member), ResolvedPath(a.new_member)));
    if (rc >= 0) return rc;
  }
  if (!arr.ok()) return ExitWithStatus(prefix, arr.status());
  RaidDevice* raid = arr->raid.get();
  int slot = a.slot;
  if (!a.old_member.empty()) {
    slot = raid->SlotOf(a.old_member);
    if (slot < 0) {
      return UsageError(prefix, "--old " + a.old_member + ": not a member of this array (no "
                                "readable superblock); use --slot N (see folio raid status)");
    }
  }
  RaidStatus st = raid->Describe();
  if (static_cast<uint32_t>(slot) >= st.member_count) {
    return UsageError(prefix, "--slot " + std::to_string(slot) + ": the array has " +
                                  std::to_string(st.member_count) + " slots");
  }
  // The new member is opened (created if missing) and checked before the old slot is failed:
  // a replace refused here changes nothing (and removes a file it made).
  CreatedFiles created;
  if (!new_exists) created.Add(a.new_member);
  DeviceOpenOptions new_io = *io;
  new_io.create_bytes = st.data_offset_bytes + st.member_data_bytes;
  auto fresh = OpenMembers({a.new_member}, new_io, &arr->locks);
  if (!fresh.ok()) return ExitWithStatus(prefix, fresh.status());
  Status usable = raid->CheckReplacement(static_cast<uint32_t>(slot), (*fresh)[0]);
  if (!usable.ok()) return ExitWithStatus(prefix, usable);
  if (st.members[slot].health == MemberHealth::kInSync ||
      st.members[slot].health == MemberHealth::kRebuilding) {
    Status f = raid->FailMember(static_cast<uint32_t>(slot));
    if (!f.ok()) return ExitWithStatus(prefix, f);
  }
  Status r = raid->ReplaceMember(static_cast<uint32_t>(slot), std::move((*fresh)[0]));
  if (!r.ok()) return ExitWithStatus(prefix, r);
  created.Keep();
  std::string out;
  Json j;
  if (a.wait) {
    auto report = RunSyncWithProgress(raid, RaidSyncAction::kRebuild, {}, a.json);
    if (!report.ok()) return ExitWithStatus(prefix, report.status());
    out += SyncReportText(*report, st.member_count);
    j["rebuild"] = SyncReportJson(*report);
  }
  st = raid->Describe();
  Status stop = raid->Stop();
  if (!stop.ok()) return ExitWithStatus(prefix, stop);
  if (a.json) {
    j["status"] = StatusJson(st);
    return Print(j.dump(2) + "\n");
  }
  out += StatusText(st);
  if (!a.wait) out += "rebuild pending: run 'folio raid rebuild' with the new member list\n";
  return Print(out);
}

void AddIoOptions(CLI::App* sub, RaidArgs* a) {
  sub->add_flag("--buffered", a->buffered, "Open members without O_DIRECT");
  sub->add_option("--engine", a->engine, "auto, uring or sync")->default_str("auto");
}

void AddSyncOptions(CLI::App* sub, RaidArgs* a) {
  sub->add_option("--sync-window", a->window,
                  "Sync bytes in flight per member: md (32 units, md's rule) or a size")
      ->default_str("md");
  sub->add_option("--speed-min", a->speed_min_kib,
                  "KiB/s per member guaranteed while other I/O runs (md's speed_limit_min)")
      ->default_str("1000");
  sub->add_option("--speed-max", a->speed_max_kib,
                  "KiB/s per member ceiling, 0 = none (md's speed_limit_max)")
      ->default_str("0");
  sub->add_option("--for", a->for_duration, "Stop at a checkpoint after this long (resumable)");
  sub->add_option("--unit", a->unit_override, "Stripe unit for this run: 4K..chunk or dynamic");
}

CLI::App* AddMembers(CLI::App* sub, RaidArgs* a) {
  sub->add_option("members", a->members, "Member paths")->required();
  sub->add_flag("--json", a->json, "Print JSON");
  AddIoOptions(sub, a);
  return sub;
}

}  // namespace

Command RegisterRaidCommands(CLI::App& root) {
  auto a = std::make_shared<RaidArgs>();
  CLI::App* raid = root.add_subcommand("raid", "RAID 0/1/5/6 volumes over files or devices");
  raid->require_subcommand(1);

  CLI::App* create = AddMembers(raid->add_subcommand("create", "Create an array"), a.get());
  create->add_option("--level", a->level, "0, 1, 5 or 6")->default_str("5");
  create->add_option("--layout", a->layout, "RAID 5/6 parity layout")
      ->default_str("left-symmetric");
  create->add_option("--chunk", a->chunk, "Chunk size, 4K..4M")->default_str("64K");
  create->add_option("--unit", a->unit, "Stripe unit: 4K..chunk or dynamic")
      ->default_str("dynamic");
  create->add_option("--size", a->size, "Size of member files to create");
  create->add_option("--bitmap-region", a->bitmap_region, "Bytes per write-intent bit");
  create->add_flag("--assume-clean", a->assume_clean, "Skip the initial resync");
  create->add_flag("--wait", a->wait, "Run the initial resync now, with a progress bar");
  create->add_flag("--force", a->force,
                   "Overwrite members that carry a Folio RAID superblock (of any array)");

  CLI::App* status = AddMembers(raid->add_subcommand("status", "Show an array's state"), a.get());
  CLI::App* check = AddMembers(raid->add_subcommand("check", "Scrub: count parity mismatches"),
                               a.get());
  CLI::App* repair = AddMembers(raid->add_subcommand("repair", "Rewrite mismatching parity"),
                                a.get());
  CLI::App* resync = AddMembers(raid->add_subcommand("resync", "Resync the dirty regions"),
                                a.get());
  CLI::App* rebuild = AddMembers(raid->add_subcommand("rebuild", "Rebuild replaced members"),
                                 a.get());
  // A sync runs in this process and only while it lives (it stops at a checkpoint when
  // interrupted, and resumes from there), so these commands always run it to the end (or
  // --for) in the foreground, with a progress bar on a terminal: there is no --wait.
  for (CLI::App* s : {check, repair, resync, rebuild}) {
    AddSyncOptions(s, a.get());
    s->footer("Runs in the foreground until done or --for, with a progress bar on a terminal; "
              "interrupted, it resumes from its last checkpoint. 'folio raid status' shows its "
              "position, speed and ETA from another shell.");
  }
  resync->add_flag("--force", a->force,
                   "Forced assembly (as mdadm --assemble --force) when too few members are in "
                   "sync: take back the most recently failed members whose only difference is "
                   "that failure, then resync everything (README: 'Forced assembly')");
  CLI::App* fail = AddMembers(raid->add_subcommand("fail", "Mark a member failed"), a.get());
  fail->add_option("--member", a->member, "The member to fail")->required();
  CLI::App* replace = AddMembers(raid->add_subcommand("replace", "Replace a member"), a.get());
  replace->add_option("--old", a->old_member, "The member to replace");
  replace->add_option("--slot", a->slot, "The slot to replace (when the old member is gone)");
  replace->add_option("--new", a->new_member, "The new member (created if missing)")->required();
  replace->add_flag("--wait", a->wait, "Rebuild now, with a progress bar");
  replace->add_flag("--force", a->force,
                    "Use a new member that carries a Folio RAID superblock (of any array)");
  Command bench = AddResyncBenchCommand(*raid);

  auto run = [a, create, status, check, repair, resync, rebuild, fail, replace, bench]() {
    if (create->parsed()) return RunCreate(*a);
    if (status->parsed()) return RunStatus(*a);
    if (check->parsed()) return RunSync(*a, RaidSyncAction::kCheck);
    if (repair->parsed()) return RunSync(*a, RaidSyncAction::kRepair);
    if (resync->parsed()) return RunSync(*a, RaidSyncAction::kResync);
    if (rebuild->parsed()) return RunSync(*a, RaidSyncAction::kRebuild);
    if (fail->parsed()) return RunFail(*a);
    if (replace->parsed()) return RunReplace(*a);
    if (bench.app->parsed()) return bench.run();
    return UsageError("folio raid", "no raid command given; run 'folio raid --help'");
  };
  return Command{raid, run};
}

}  // namespace folio::cli
