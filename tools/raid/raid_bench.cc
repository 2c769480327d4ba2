// `folio raid resync-bench`: the md raid5 seed experiment. A RAID 5 over temp files (optionally
// behind the FaultDevice's spinning-disk latency model) is resynced once per stripe unit, with
// --content random: the members full of random data, so every stripe's parity is rewritten (an
// initial resync of used disks), or --content consistent: parity already right, so the resync
// only reads (a resync after an unclean stop). Each run reports MB/s per member, CPU, and the
// per-member request summary.
// Around it, in the same run: a member's own sequential bandwidth, alone and with all members
// streaming at once (the ceiling when member files share one disk), full-stripe sequential
// write throughput, and sequential reads healthy and degraded.
#include <CLI/CLI.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "base/units.h"
#include "bench/datafile.h"
#include "cli/cli_util.h"
#include "cli/device_spec.h"
#include "folio/arena.h"
#include "folio/fault_device.h"
#include "raid/raid_cmd.h"
#include "raid/raid_report.h"

namespace folio::cli {
namespace {

struct ResyncBenchArgs {
  uint32_t members = 4;
  std::string size = "256M";
  std::string units = "4K,16K,64K,dynamic";
  std::string chunk = "64K";
  std::string window = "md";
  std::string model = "none";
  std::string dir = "/tmp";
  std::string content = "random";
  bool json = false;
  bool buffered = false;
};

// Set by SIGINT / SIGTERM while the bench runs (bench::StopSignal): every phase stops at its
// next request or checkpoint, and the member files are removed on the way out.
const std::atomic<bool>* g_stop = nullptr;

bool Stopped() { return g_stop != nullptr && g_stop->load(); }

Status Interrupted() { return Status::Again("interrupted"); }

void FillRandom(char* p, uint64_t len, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i + 8 <= len; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
}

// Sequential I/O over [offset, offset + bytes) in req-byte requests, depth in flight.
// Returns the seconds it took.
Result<double> Sequential(BlockDevice* dev, IoOp op, uint64_t offset, uint64_t bytes,
                          uint64_t req, uint32_t depth, uint64_t seed) {
  struct Slot {
    IoRequest io;
    AlignedBuffer buf;
  };
  std::vector<std::unique_ptr<Slot>> slots;
  for (uint32_t i = 0; i < depth; ++i) {
    auto s = std::make_unique<Slot>();
    s->buf = AlignedBuffer(req);
    s->io.completed.store(true);
    slots.push_back(std::move(s));
  }
  const uint64_t t0 = MonotonicNowNs();
  uint64_t next = offset, end = offset + bytes, in_flight = 0, counter = seed;
  while (next < end || in_flight > 0) {
    if (Stopped()) next = end;  // drain what is in flight, then report the interruption
    std::vector<IoRequest*> batch;
    for (auto& s : slots) {
      if (!s->io.completed.load()) continue;
      if (s->io.length != 0) {
        if (!s->io.status.ok()) return s->io.status;
        --in_flight;
        s->io.length = 0;
      }
      if (next >= end) continue;
      const uint64_t n = std::min(req, end - next);
      if (op == IoOp::kWrite) FillRandom(s->buf.data(), n, ++counter);
      s->io.Reset(op, next, n, s->buf.data());
      batch.push_back(&s->io);
      next += n;
      ++in_flight;
    }
    if (!batch.empty()) FOLIO_RETURN_IF_ERROR(dev->Submit(batch));
    if (in_flight > 0) {
      auto polled = dev->Poll(1);
      if (!polled.ok()) return polled.status();
    }
  }
  if (Stopped()) return Interrupted();
  if (op == IoOp::kWrite) FOLIO_RETURN_IF_ERROR(dev->Flush());
  return SecondsSince(t0);
}

double MBps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0;
}

class Bench {
 public:
  Bench(const ResyncBenchArgs& a, std::string dir) : a_(a), dir_(std::move(dir)) {}

  Status Setup() {
    FOLIO_ASSIGN_OR_RETURN(member_bytes_, ParseSize(a_.size, "--size"));
    FOLIO_ASSIGN_OR_RETURN(chunk_, ParseSize(a_.chunk, "--chunk"));
    FOLIO_ASSIGN_OR_RETURN(model_, LatencyModel::Parse(a_.model));
    if (a_.window != "md") {
      FOLIO_ASSIGN_OR_RETURN(window_, ParseSize(a_.window, "--window"));
    }
    if (a_.members < 3 || a_.members > kRaidMaxMembers) {
      return Status::InvalidArgument("--members " + std::to_string(a_.members) +
                                     ": RAID 5 needs 3 to 32");
    }
    if (member_bytes_ < (2ull << 20) || member_bytes_ % (1 << 20) != 0) {
      return Status::InvalidArgument("--size " + a_.size + ": must be a multiple of 1M, >= 2M");
    }
    std::string rest = a_.units;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string u = rest.substr(0, comma);
      if (u == "dynamic") {
        units_.push_back(0);
      } else {
        FOLIO_ASSIGN_OR_RETURN(uint64_t b, ParseSize(u, "--units"));
        if (!IsPowerOfTwo(b) || b < 4096 || b > chunk_) {
          return Status::InvalidArgument("--units " + u + ": each unit must be dynamic or a "
                                         "power of two in 4K..chunk (" + a_.chunk + ")");
        }
        units_.push_back(b);
      }
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    if (units_.empty()) return Status::InvalidArgument("--units: give at least one unit");
    if (a_.content != "random" && a_.content != "consistent") {
      return Status::InvalidArgument("--content " + a_.content + ": must be random or consistent");
    }
    for (uint32_t i = 0; i < a_.members; ++i) paths_.push_back(dir_ + "/m" + std::to_string(i));
    // The stripe cache takes its buffers from a folio arena, as it would under the page cache.
    ArenaOptions ao;
    ao.capacity_bytes = 64ull << 20;
    auto arena = FolioArena::Create(ao);
    if (arena.ok()) arena_ = std::move(arena).value();
    return Status::OK();
  }

  // Opens the members (behind the latency model when one is asked for).
  Result<std::vector<RaidMember>> Members(bool raw, std::vector<DeviceLock>* locks) {
    DeviceOpenOptions o;
    o.direct = !a_.buffered;
    o.create_bytes = member_bytes_;
    FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members, OpenMembers(paths_, o, locks));
    if (raw || model_.kind == LatencyModel::Kind::kNone) return members;
    for (RaidMember& m : members) {
      auto f = FaultDevice::Wrap(std::move(m.device));
      f->SetCrashTracking(false);
      f->SetLatency(model_);
      m.device = std::move(f);
    }
    return members;
  }

  // Fills every member with random bytes (raw, not timed): parity is then wrong everywhere.
  Status Scramble(uint64_t seed) {
    std::vector<DeviceLock> locks;
    FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members, Members(true, &locks));
    for (size_t i = 0; i < members.size(); ++i) {
      FOLIO_RETURN_IF_ERROR(Sequential(members[i].device.get(), IoOp::kWrite, 0, member_bytes_,
                                       1 << 20, 8, seed * 100 + i)
                                .status());
    }
    return Status::OK();
  }

  Result<std::unique_ptr<RaidDevice>> CreateArray(uint64_t unit, bool assume_clean,
                                                  std::vector<DeviceLock>* locks) {
    FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members, Members(false, locks));
    RaidCreateOptions co;
    co.level = RaidLevel::kRaid5;
    co.chunk_bytes = chunk_;
    co.unit_bytes = unit;
    co.assume_clean = assume_clean;
    RaidOptions o;
    o.arena = arena_.get();
    return RaidDevice::Create(std::move(members), co, o);
  }

  Status Run() {
    FOLIO_RETURN_IF_ERROR(MeasureMember());
    FOLIO_RETURN_IF_ERROR(MeasureArrayIo());
    for (uint64_t unit : units_) {
      FOLIO_RETURN_IF_ERROR(MeasureResync(unit));
      if (Stopped()) return Interrupted();
    }
    return Status::OK();
  }

  Status MeasureMember() {
    std::vector<DeviceLock> locks;
    FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> members, Members(false, &locks));
    BlockDevice* m0 = members[0].device.get();
    FOLIO_ASSIGN_OR_RETURN(double w, Sequential(m0, IoOp::kWrite, 0, member_bytes_, 1 << 20, 8, 1));
    FOLIO_ASSIGN_OR_RETURN(double r, Sequential(m0, IoOp::kRead, 0, member_bytes_, 1 << 20, 8, 1));
    member_write_ = MBps(member_bytes_, w);
    member_read_ = MBps(member_bytes_, r);
    FOLIO_ASSIGN_OR_RETURN(together_write_, Together(members, IoOp::kWrite));
    FOLIO_ASSIGN_OR_RETURN(together_read_, Together(members, IoOp::kRead));
    return Status::OK();
  }

  // Every member streamed at once, one thread each (as a resync or a full-stripe write drives
  // them): the slowest member's MB/s.
  Result<double> Together(std::vector<RaidMember>& members, IoOp op) {
    std::vector<Result<double>> secs(members.size(), Status::OK());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < members.size(); ++i) {
      threads.emplace_back([&, i] {
        secs[i] = Sequential(members[i].device.get(), op, 0, member_bytes_, 1 << 20, 8, 10 + i);
      });
    }
    for (std::thread& t : threads) t.join();
    double slowest = 0;
    for (Result<double>& r : secs) {
      if (!r.ok()) return r.status();
      slowest = std::max(slowest, *r);
    }
    return MBps(member_bytes_, slowest);
  }

  Status MeasureArrayIo() {
    std::vector<DeviceLock> locks;
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RaidDevice> raid, CreateArray(0, true, &locks));
    const uint64_t bytes = raid->size_bytes();
    const uint64_t stripe = (a_.members - 1) * chunk_;
    const uint64_t req = std::max<uint64_t>(stripe, (4ull << 20) / stripe * stripe);
    FOLIO_ASSIGN_OR_RETURN(double w, Sequential(raid.get(), IoOp::kWrite, 0, bytes, req, 4, 7));
    full_stripe_write_ = MBps(bytes, w);
    // Reads in whole stripes too: a degraded stripe split between two requests would be read
    // (and its members' heads moved back) once per request, as the stripe cache keeps no data.
    FOLIO_ASSIGN_OR_RETURN(double r, Sequential(raid.get(), IoOp::kRead, 0, bytes, req, 4, 0));
    healthy_read_ = MBps(bytes, r);
    FOLIO_RETURN_IF_ERROR(raid->FailMember(0));
    FOLIO_ASSIGN_OR_RETURN(double d, Sequential(raid.get(), IoOp::kRead, 0, bytes, req, 4, 0));
    degraded_read_ = MBps(bytes, d);
    return raid->Stop();
  }

  Status MeasureResync(uint64_t unit) {
    // Consistent: MeasureArrayIo wrote the whole array through the RAID, parity included.
    if (a_.content == "random") FOLIO_RETURN_IF_ERROR(Scramble(unit + 3));
    std::vector<DeviceLock> locks;
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RaidDevice> raid, CreateArray(unit, false, &locks));
    raid->ResetStats();
    RaidSyncOptions so;
    so.window_bytes = window_;
    so.speed_limit_min_kib = 0;
    so.cancel = g_stop;
    FOLIO_ASSIGN_OR_RETURN(RaidSyncReport rep, raid->Sync(RaidSyncAction::kResync, so));
    Json r;
    r["unit"] = UnitName(unit);
    r["window_bytes"] = rep.window_bytes;
    r["seconds"] = rep.seconds;
    r["mb_per_s"] = MBps(rep.done_bytes, rep.seconds);
    const double gib = static_cast<double>(rep.done_bytes) * a_.members / (1ull << 30);
    r["cpu_percent"] = rep.seconds > 0 ? 100.0 * rep.cpu_seconds / rep.seconds : 0;
    r["cpu_s_per_gib"] = gib > 0 ? rep.cpu_seconds / gib : 0;
    r["parity_s_per_gib"] = gib > 0 ? rep.parity_seconds / gib : 0;
    r["vs_members_together_read"] =
        together_read_ > 0 ? MBps(rep.done_bytes, rep.seconds) / together_read_ : 0;
    r["stripes_rewritten"] = rep.repaired;
    Json members = Json::array();
    std::string summary;
    for (const RaidMemberStats& m : raid->raid_stats().members) {
      members.push_back(MemberSummaryJson(m));
      summary += MemberSummaryText(m);
    }
    r["members"] = std::move(members);
    summaries_.push_back(summary);
    results_.push_back(std::move(r));
    return raid->Stop();
  }

  Json ToJson() const {
    Json j;
    j["level"] = "raid5";
    j["members"] = a_.members;
    j["member_bytes"] = member_bytes_;
    j["chunk_bytes"] = chunk_;
    j["window"] = a_.window;
    j["model"] = model_.ToString();
    j["content"] = a_.content;
    j["member_write_mb_per_s"] = member_write_;
    j["member_read_mb_per_s"] = member_read_;
    j["members_together_write_mb_per_s"] = together_write_;
    j["members_together_read_mb_per_s"] = together_read_;
    j["full_stripe_write_mb_per_s"] = full_stripe_write_;
    j["full_stripe_write_vs_members"] = FullStripeRatio(member_write_);
    j["full_stripe_write_vs_members_together"] = FullStripeRatio(together_write_);
    j["healthy_read_mb_per_s"] = healthy_read_;
    j["degraded_read_mb_per_s"] = degraded_read_;
    j["results"] = results_;
    return j;
  }

  std::string ToText() const {
    char line[512];
    std::string out;
    std::snprintf(line, sizeof(line),
                  "resync-bench: raid5, %u members x %s, chunk %s, window %s, model %s, "
                  "content %s, in %s\n",
                  a_.members, FormatSize(member_bytes_).c_str(), FormatSize(chunk_).c_str(),
                  a_.window.c_str(), model_.ToString().c_str(), a_.content.c_str(),
                  dir_.c_str());
    out += line;
    std::snprintf(line, sizeof(line),
                  "member alone: write %.0f MB/s, read %.0f MB/s (sequential, 1M requests)\n"
                  "members together: write %.0f MB/s, read %.0f MB/s per member (all %u at once)\n"
                  "full-stripe write: %.0f MB/s = %.2f x (members - 1) x member alone, "
                  "%.2f x (members - 1) x members together\n"
                  "sequential read (whole stripes): healthy %.0f MB/s, degraded (member 0 "
                  "failed) %.0f MB/s\n\n",
                  member_write_, member_read_, together_write_, together_read_, a_.members,
                  full_stripe_write_, FullStripeRatio(member_write_),
                  FullStripeRatio(together_write_), healthy_read_, degraded_read_);
    out += line;
    out += "(vs together: resync MB/s per member over the members-together read MB/s)\n";
    out += a_.content == "random" ? "resync (random members, every parity unit rewritten):\n"
                                  : "resync (parity consistent, reads only):\n";
    out += "unit      window     MB/s/member  vs together   CPU %   CPU s/GiB   parity s/GiB"
           "   seconds\n";
    for (const Json& r : results_) {
      std::snprintf(line, sizeof(line), "%-9s %-10s %11.1f %11.2fx %7.1f %11.3f %14.3f %9.2f\n",
                    r["unit"].get<std::string>().c_str(),
                    FormatSize(r["window_bytes"].get<uint64_t>()).c_str(),
                    r["mb_per_s"].get<double>(), r["vs_members_together_read"].get<double>(),
                    r["cpu_percent"].get<double>(),
                    r["cpu_s_per_gib"].get<double>(), r["parity_s_per_gib"].get<double>(),
                    r["seconds"].get<double>());
      out += line;
    }
    for (size_t i = 0; i < results_.size(); ++i) {
      out += "\nper-member requests, unit " + results_[i]["unit"].get<std::string>() + ":\n";
      out += summaries_[i];
    }
    return out;
  }

 private:
  const ResyncBenchArgs a_;
  const std::string dir_;
  uint64_t member_bytes_ = 0;
  uint64_t chunk_ = 0;
  uint64_t window_ = 0;
  LatencyModel model_;
  std::unique_ptr<FolioArena> arena_;  // outlives every array (each lives in one Measure call)
  std::vector<uint64_t> units_;
  std::vector<std::string> paths_;
  double FullStripeRatio(double member_mb_per_s) const {
    return member_mb_per_s > 0 ? full_stripe_write_ / ((a_.members - 1) * member_mb_per_s) : 0;
  }

  double member_write_ = 0, member_read_ = 0, full_stripe_write_ = 0;
  double together_write_ = 0, together_read_ = 0;
  double healthy_read_ = 0, degraded_read_ = 0;
  std::vector<Json> results_;
  std::vector<std::string> summaries_;
};

int RunResyncBench(const ResyncBenchArgs& a) {
  const std::string prefix = "folio raid resync-bench";
  Status d = CheckDirectoryFlag("--dir", a.dir, "/tmp");
  if (!d.ok()) return ExitWithStatus(prefix, d);
  std::string tmpl = a.dir + "/folio-resync-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return RuntimeError(prefix, a.dir + ": cannot create a temp directory: " + strerror(errno));
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  bench::StopSignal stop;
  g_stop = stop.flag();
  struct ClearStop {
    ~ClearStop() { g_stop = nullptr; }
  } clear_stop;
  Bench bench(a, tmpl);
  Status st = bench.Setup();
  if (!st.ok()) return ExitWithStatus(prefix, st);
  st = bench.Run();
  if (Stopped()) {
    PrintError(prefix, "interrupted; temporary files removed");
    return 130;  // 128 + SIGINT, as `folio bench` exits when interrupted
  }
  if (!st.ok()) return ExitWithStatus(prefix, st);
  const std::string out = a.json ? bench.ToJson().dump(2) + "\n" : bench.ToText();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : RuntimeError(prefix, "stdout: write failed");
}

}  // namespace

Command AddResyncBenchCommand(CLI::App& raid) {
  auto a = std::make_shared<ResyncBenchArgs>();
  CLI::App* sub = raid.add_subcommand(
      "resync-bench", "Resync a RAID 5 over temp files at several stripe units and compare");
  sub->add_option("--members", a->members, "Members of the RAID 5")->default_str("4");
  sub->add_option("--size", a->size, "Bytes per member file")->default_str("256M");
  sub->add_option("--units", a->units, "Stripe units to compare")
      ->default_str("4K,16K,64K,dynamic");
  sub->add_option("--chunk", a->chunk, "Chunk size")->default_str("64K");
  sub->add_option("--window", a->window, "Sync window: md (32 units) or a size")
      ->default_str("md");
  sub->add_option("--model", a->model, "Member latency model: none, hdd, hdd:SEEK_US:MBPS")
      ->default_str("none");
  sub->add_option("--dir", a->dir, "Directory for the member files")->default_str("/tmp");
  sub->add_option("--content", a->content,
                  "random (every parity unit rewritten) or consistent (reads only)")
      ->default_str("random");
  sub->add_flag("--buffered", a->buffered, "Open members without O_DIRECT");
  sub->add_flag("--json", a->json, "Print JSON");
  return Command{sub, [a] { return RunResyncBench(*a); }};
}

}  // namespace folio::cli
