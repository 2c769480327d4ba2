// MemoryCgroup: the memory cgroup `folio bench` runs the kernel engine in, so the kernel's page
// cache gets the same memory as Folio's (--cache) instead of the whole machine's.
//
// The cgroup is a child of this process's own memory cgroup, named folio-bench.PID:
//   cgroup v1  (the memory controller mounted on its own, e.g. /sys/fs/cgroup/memory):
//              memory.limit_in_bytes = limit, then memory.memsw.limit_in_bytes = limit when the
//              kernel has swap accounting (so swap cannot stretch it; this machine has no swap)
//   cgroup v2  (the unified hierarchy, when memory is enabled for this cgroup's children):
//              memory.max = limit, memory.swap.max = 0 when present
// v1 is used when the memory controller is mounted as v1 (it cannot be on both). Page cache is
// charged to the cgroup of the task that brings a page in, and the limit makes the kernel
// reclaim within the cgroup, so a file twice the limit read inside it is re-read from disk.
// Pages cached before the process joined stay charged elsewhere: the engine drops the file's
// pages (fdatasync + POSIX_FADV_DONTNEED) after Join(), and pre_read runs inside.
//
// Join() moves the whole process (cgroup.procs, every thread) in; Leave() moves it back. Empty()
// reclaims what is charged (v1 memory.force_empty, v2 memory.reclaim) so the next run starts
// cold. The destructor leaves, empties and removes the cgroup; StopSignal turns SIGINT into an
// orderly return, so it runs then too. Cgroups left by a killed bench (folio-bench.PID of a
// dead PID) are removed by the next Create().
//
// Thread safety: used from the bench's main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "folio/status.h"

namespace folio::bench {

class MemoryCgroup {
 public:
  // Creates and limits the cgroup. NotSupported (the message says why and what would make it
  // work: root, a memory controller) when this machine or user cannot.
  static Result<std::unique_ptr<MemoryCgroup>> Create(uint64_t limit_bytes);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  Status Join();
  Status Leave();
  // Reclaims the pages charged to the cgroup. REQUIRES: not joined. Best effort: anonymous
  // pages without swap stay (they are small: thread stacks, buffers).
  void Empty();
  // Resets the peak usage (v1) so PeakBytes() covers the next run.
  void ResetPeak();

  uint64_t limit_bytes() const { return limit_bytes_; }
  int version() const { return version_; }  // 1 or 2
  const std::string& path() const { return path_; }
  // "cgroup v1 memory.limit_in_bytes" / "cgroup v2 memory.max".
  std::string LimitName() const;
  uint64_t UsageBytes() const;
  // Highest usage since ResetPeak (v1 memory.max_usage_in_bytes, v2 memory.peak); 0 if unknown.
  uint64_t PeakBytes() const;

 private:
  MemoryCgroup(int version, std::string path, std::string home, uint64_t limit_bytes)
      : version_(version), path_(std::move(path)), home_(std::move(home)),
        limit_bytes_(limit_bytes) {}
  const int version_;
  const std::string path_;  // the cgroup's directory
  const std::string home_;  // the cgroup this process came from (Leave() returns to it)
  const uint64_t limit_bytes_;
  bool joined_ = false;
};

}  // namespace folio::bench
