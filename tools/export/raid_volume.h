// RaidRunner: the RAID side of an exported volume. It runs pending sync actions (the bitmap
// resync after an unclean stop, the initial resync, a rebuild onto replaced members) on a
// background thread while the volume is served, takes `.control` commands that fail or
// replace members of the running array, and renders the RAID part of `.stats`.
//
// Thread safety: every method is thread-safe (control commands come from FUSE workers); the
// RaidDevice is thread-safe and its Sync runs on the runner's thread while others do I/O.
#pragma once

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/device_lock.h"
#include "cli/device_spec.h"
#include "folio/raid.h"

namespace folio::cli {

class RaidRunner {
 public:
  // REQUIRES: raid outlives this runner's StopSync().
  RaidRunner(RaidDevice* raid, const DeviceOpenOptions& options);
  ~RaidRunner();
  RaidRunner(const RaidRunner&) = delete;
  RaidRunner& operator=(const RaidRunner&) = delete;

  // Starts the background thread when a resync / repair / rebuild is pending and none runs.
  void StartPendingSync();
  // Cancels a running sync at its next checkpoint and waits for the thread.
  void StopSync();

  bool HasMember(const std::string& path) const { return raid_->SlotOf(path) >= 0; }
  // Marks the member failed; the array runs degraded.
  Status Fail(const std::string& member);
  // Fails `old_member` if it is still in the array, opens (creating when missing) and locks
  // `new_member`, puts it in the slot and starts the rebuild in the background.
  Status Replace(const std::string& old_member, const std::string& new_member);

  nlohmann::ordered_json StatsJson() const;

 private:
  void RunPending();

  RaidDevice* const raid_;
  const DeviceOpenOptions options_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> running_{false};
  mutable std::mutex mu_;
  std::thread thread_;                   // GUARDED_BY(mu_)
  std::vector<DeviceLock> added_locks_;  // GUARDED_BY(mu_): members added by Replace
  uint64_t syncs_completed_ = 0;         // GUARDED_BY(mu_)
  nlohmann::ordered_json last_sync_;     // GUARDED_BY(mu_)
  std::string last_error_;               // GUARDED_BY(mu_)
};

}  // namespace folio::cli
