#include "export/raid_volume.h"

#include "fuse/log.h"
#include "raid/raid_report.h"

namespace folio::cli {

RaidRunner::RaidRunner(RaidDevice* raid, const DeviceOpenOptions& options)
    : raid_(raid), options_(options) {}

RaidRunner::~RaidRunner() { StopSync(); }

void RaidRunner::StartPendingSync() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_.load() || cancel_.load()) return;
  if (thread_.joinable()) thread_.join();  // a finished run
  running_.store(true);
  thread_ = std::thread([this] {
    RunPending();
    running_.store(false);
  });
}

void RaidRunner::StopSync() {
  cancel_.store(true);
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

void RaidRunner::RunPending() {
  // The array's own order (RaidDevice::PendingSync): resync, rebuild, stored repair / check.
  // A few rounds: a rebuild may follow a resync, or a replace may come during a rebuild. An
  // action that completes without making progress (a resync that must leave units unsynced:
  // members missing) is not run again.
  std::optional<RaidSyncAction> last;
  for (int round = 0; round < 6 && !cancel_.load(); ++round) {
    const std::optional<RaidSyncAction> a = raid_->PendingSync();
    if (!a.has_value() || a == last) return;
    const std::string action(RaidSyncActionName(*a));
    fuse::Log("raid: " + action + " started in the background");
    RaidSyncOptions o;
    o.cancel = &cancel_;
    Result<RaidSyncReport> r = raid_->Sync(*a, o);
    std::lock_guard<std::mutex> lock(mu_);
    if (!r.ok()) {
      last_error_ = r.status().ToString();
      fuse::Log("raid: " + action + " failed: " + last_error_);
      return;
    }
    last_sync_ = SyncReportJson(*r);
    if (!r->completed) return;  // cancelled at a checkpoint: resumes at the next assembly
    ++syncs_completed_;
    fuse::Log("raid: " + action + " done (" + std::to_string(r->done_bytes >> 20) +
              " MiB of members, " + std::to_string(r->mismatches) + " mismatches)");
    if (r->unsynced > 0) {
      last_error_ = action + ": " + std::to_string(r->unsynced) +
                    " stripe units could not be made consistent (a member is missing where an "
                    "unclean stop left parity untrusted); they stay unreadable for "
                    "reconstruction until the member is back";
      fuse::Log("raid: " + last_error_);
      last = a;
    }
  }
}

Status RaidRunner::Fail(const std::string& member) {
  const int slot = raid_->SlotOf(member);
  if (slot < 0) return Status::InvalidArgument(member + ": not an active member");
  FOLIO_RETURN_IF_ERROR(raid_->FailMember(static_cast<uint32_t>(slot)));
  fuse::Log("raid: member " + member + " marked failed; running degraded");
  return Status::OK();
}

Status RaidRunner::Replace(const std::string& old_member, const std::string& new_member) {
  const int slot = raid_->SlotOf(old_member);
  if (slot < 0) return Status::InvalidArgument(old_member + ": not a member of this array");
  const RaidStatus st = raid_->Describe();
  const MemberHealth h = st.members[slot].health;
  if (h == MemberHealth::kInSync || h == MemberHealth::kRebuilding) {
    FOLIO_RETURN_IF_ERROR(raid_->FailMember(static_cast<uint32_t>(slot)));
  }
  std::vector<DeviceLock> locks;
  DeviceOpenOptions o = options_;
  o.create_bytes = st.data_offset_bytes + st.member_data_bytes;
  FOLIO_ASSIGN_OR_RETURN(std::vector<RaidMember> fresh, OpenMembers({new_member}, o, &locks));
  FOLIO_RETURN_IF_ERROR(raid_->ReplaceMember(static_cast<uint32_t>(slot), std::move(fresh[0])));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (DeviceLock& l : locks) added_locks_.push_back(std::move(l));
  }
  fuse::Log("raid: slot " + std::to_string(slot) + ": " + old_member + " replaced by " +
            new_member + "; rebuilding");
  StartPendingSync();
  return Status::OK();
}

nlohmann::ordered_json RaidRunner::StatsJson() const {
  Json j = StatusJson(raid_->Describe());
  j["io"] = IoSummaryJson(raid_->raid_stats());
  j["background_sync_running"] = running_.load();
  std::lock_guard<std::mutex> lock(mu_);
  j["background_syncs_completed"] = syncs_completed_;
  if (!last_sync_.is_null()) j["last_background_sync"] = last_sync_;
  if (!last_error_.empty()) j["last_background_sync_error"] = last_error_;
  return j;
}

}  // namespace folio::cli
