// raid:PATH,PATH,... volumes for `folio export`: members locked and opened, the array
// assembled from their superblocks, and a pending resync or rebuild (after an unclean stop, or
// a replaced member) run on a background thread while the volume is served.
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "export/device_spec.h"
#include "folio/raid.h"
#include "fuse/log.h"

namespace folio::cli {

namespace {

using Json = nlohmann::ordered_json;

// Owns the background sync of one RAID volume.
class RaidRunner {
 public:
  explicit RaidRunner(RaidDevice* raid) : raid_(raid) {}
  ~RaidRunner() { StopSync(); }

  // Starts a thread that runs the pending resync / rebuild actions until none is left.
  void StartPendingSync() {
    thread_ = std::thread([this] { RunPending(); });
  }

  void StopSync() {
    cancel_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  Json StatsJson() const {
    const RaidStatus st = raid_->Describe();
    Json j;
    j["uuid"] = st.array_uuid;
    j["level"] = std::string(RaidLevelName(st.level));
    j["layout"] = std::string(RaidLayoutName(st.layout));
    j["state"] = st.state;
    j["chunk_bytes"] = st.chunk_bytes;
    j["unit_bytes"] = st.unit_bytes;
    j["array_bytes"] = st.array_bytes;
    j["events"] = st.events;
    j["failed"] = st.failed;
    j["dirty_regions"] = st.dirty_regions;
    j["resync_regions"] = st.resync_regions;
    j["sync"] = Json{{"action", st.sync.action},
                     {"position_bytes", st.sync.position_bytes},
                     {"total_bytes", st.sync.total_bytes},
                     {"done_bytes", st.sync.done_bytes},
                     {"speed_bytes_per_s", st.sync.speed_bytes_per_s},
                     {"eta_s", st.sync.eta_s},
                     {"mismatches", st.sync.mismatches}};
    {
      std::lock_guard<std::mutex> lock(mu_);
      j["syncs_completed"] = syncs_completed_;
      j["last_sync_error"] = last_error_;
    }
    const RaidStats rs = raid_->raid_stats();
    Json members = Json::array();
    for (const RaidMemberStatus& m : st.members) {
      Json mj{
          {"slot", m.slot}, {"name", m.name}, {"health", std::string(MemberHealthName(m.health))}};
      for (const RaidMemberStats& ms : rs.members) {
        if (ms.slot != m.slot) continue;
        mj["read_requests"] = ms.io.read_requests;
        mj["read_bytes"] = ms.io.read_bytes;
        mj["write_requests"] = ms.io.write_requests;
        mj["write_bytes"] = ms.io.write_bytes;
        mj["read_merges"] = ms.io.read_merges;
        mj["write_merges"] = ms.io.write_merges;
      }
      members.push_back(std::move(mj));
    }
    j["members"] = std::move(members);
    j["full_stripe_writes"] = rs.full_stripe_writes;
    j["rmw_writes"] = rs.rmw_writes;
    j["rcw_writes"] = rs.rcw_writes;
    j["degraded_reads"] = rs.degraded_reads;
    j["degraded_writes"] = rs.degraded_writes;
    j["read_errors_corrected"] = rs.read_errors_corrected;
    j["bitmap_writes"] = rs.bitmap_writes;
    return j;
  }

 private:
  void RunPending() {
    for (int round = 0; round < 4 && !cancel_.load(); ++round) {
      const std::string action = raid_->Describe().sync.action;
      RaidSyncAction a;
      if (action == "resync") {
        a = RaidSyncAction::kResync;
      } else if (action == "rebuild") {
        a = RaidSyncAction::kRebuild;
      } else if (action == "repair") {
        a = RaidSyncAction::kRepair;
      } else {
        return;  // idle, or a check nobody waits for
      }
      fuse::Log("raid: " + action + " started");
      RaidSyncOptions o;
      o.cancel = &cancel_;
      Result<RaidSyncReport> r = raid_->Sync(a, o);
      std::lock_guard<std::mutex> lock(mu_);
      if (!r.ok()) {
        last_error_ = r.status().ToString();
        fuse::Log("raid: " + action + " failed: " + last_error_);
        return;
      }
      if (!r->completed) return;  // cancelled at a checkpoint: resumes at the next assembly
      ++syncs_completed_;
      fuse::Log("raid: " + action + " done (" + std::to_string(r->done_bytes >> 20) + " MiB, " +
                std::to_string(r->mismatches) + " mismatches)");
    }
  }

  RaidDevice* const raid_;
  std::atomic<bool> cancel_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  uint64_t syncs_completed_ = 0;  // GUARDED_BY(mu_)
  std::string last_error_;        // GUARDED_BY(mu_)
};

}  // namespace

Result<OpenedVolume> OpenRaidVolume(const DeviceSpec& spec) {
  OpenedVolume v;
  v.spec = spec;
  std::vector<RaidMember> members;
  for (const std::string& path : spec.paths) {
    FOLIO_ASSIGN_OR_RETURN(DeviceLock lock, LockDevicePath(path));
    v.locks.push_back(std::move(lock));
    FileDeviceOptions o;
    o.direct = true;
    FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<BlockDevice> dev, OpenFileDevice(path, o));
    members.push_back(RaidMember{path, std::move(dev)});
  }
  RaidOptions ro;
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<RaidDevice> raid,
                         RaidDevice::Assemble(std::move(members), ro));
  auto runner = std::make_shared<RaidRunner>(raid.get());
  runner->StartPendingSync();
  RaidDevice* raw = raid.get();
  v.device = std::move(raid);
  v.raid_stats = [runner] { return runner->StatsJson(); };
  v.stop = [runner, raw]() -> Status {
    runner->StopSync();
    return raw->Stop();
  };
  return v;
}

}  // namespace folio::cli
