// The kernel's dirty-page thresholds as they apply to the kernel engine of this run, so that
// `folio bench` can give Folio's engines the same (--folio-dirty kernel, the default when the
// kernel or fio engine runs).
//
// Why: "equal memory" caps the kernel's page cache at --cache with a memory cgroup, but how much
// of it may be dirty before writeback starts and before writers are throttled is decided
// elsewhere. The kernel computes its background threshold and dirty limit from
// vm.dirty_background_ratio / vm.dirty_ratio (or the *_bytes sysctls) of the machine's
// dirtyable memory and publishes them in /proc/vmstat (nr_dirty_background_threshold,
// nr_dirty_threshold, in pages). A cgroup v1 memory cgroup limits no dirty memory: the global
// thresholds are the kernel engine's (here 2.3G and 4.6G of a 1G cgroup: nothing is written
// back before the 30 s expiry). Under cgroup v2 the kernel also keeps a per-cgroup domain: the
// same ratios of the cgroup's memory, and the lower of the two applies; this is estimated as the
// ratios (or bytes) of memory.max, since the exact figure (the cgroup's dirtyable pages) is not
// published.
//
// Thread safety: pure functions, except ReadKernelDirtyThresholds (reads /proc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio::bench {

struct KernelDirtyThresholds {
  uint64_t background_bytes = 0;
  uint64_t limit_bytes = 0;
  std::string source;  // how they were found, for the report
};

// The vm.dirty_* sysctls (0 where unset, as the kernel keeps them).
struct DirtySysctls {
  uint64_t background_ratio = 0;
  uint64_t background_bytes = 0;
  uint64_t ratio = 0;
  uint64_t bytes = 0;
};

// From /proc/vmstat's text (the two nr_dirty_*threshold lines, in pages of page_bytes).
// cgroup_version 2 with cgroup_limit_bytes > 0 lowers each to the sysctls' share of that limit.
// InvalidArgument naming the missing line when vmstat lacks one.
Result<KernelDirtyThresholds> ParseKernelDirtyThresholds(std::string_view vmstat,
                                                         uint64_t page_bytes,
                                                         const DirtySysctls& sysctls,
                                                         int cgroup_version,
                                                         uint64_t cgroup_limit_bytes);

// Reads /proc/vmstat and /proc/sys/vm/dirty_* and calls the above. NotSupported when /proc
// cannot be read.
Result<KernelDirtyThresholds> ReadKernelDirtyThresholds(int cgroup_version,
                                                        uint64_t cgroup_limit_bytes);

}  // namespace folio::bench
