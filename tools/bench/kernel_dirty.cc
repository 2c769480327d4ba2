#include "bench/kernel_dirty.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "base/units.h"

namespace folio::bench {
namespace {

// The value of the line "name N" in vmstat, or nullopt.
std::optional<uint64_t> VmstatValue(std::string_view vmstat, std::string_view name) {
  size_t pos = 0;
  while (pos < vmstat.size()) {
    size_t end = vmstat.find('\n', pos);
    if (end == std::string_view::npos) end = vmstat.size();
    std::string_view line = vmstat.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= name.size() || line.substr(0, name.size()) != name ||
        line[name.size()] != ' ') {
      continue;
    }
    std::string_view num = line.substr(name.size() + 1);
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || p != num.data() + num.size()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

// A sysctl's share of the cgroup's limit: bytes when set, else ratio percent.
uint64_t ShareOf(uint64_t limit, uint64_t ratio, uint64_t bytes) {
  return bytes != 0 ? bytes : limit / 100 * ratio;
}

std::string SysctlText(const char* name, uint64_t ratio, uint64_t bytes) {
  return bytes != 0 ? fmt::format("vm.{}_bytes {}", name, FormatSize(bytes))
                    : fmt::format("vm.{}_ratio {}", name, ratio);
}

uint64_t ReadSysctl(const char* path) {
  std::ifstream in(path);
  uint64_t v = 0;
  in >> v;
  return in ? v : 0;
}

}  // namespace

Result<KernelDirtyThresholds> ParseKernelDirtyThresholds(std::string_view vmstat,
                                                         uint64_t page_bytes,
                                                         const DirtySysctls& sysctls,
                                                         int cgroup_version,
                                                         uint64_t cgroup_limit_bytes) {
  const std::optional<uint64_t> bg = VmstatValue(vmstat, "nr_dirty_background_threshold");
  const std::optional<uint64_t> limit = VmstatValue(vmstat, "nr_dirty_threshold");
  if (!bg || !limit) {
    return Status::InvalidArgument(
        fmt::format("/proc/vmstat: no {} line", !bg ? "nr_dirty_background_threshold"
                                                    : "nr_dirty_threshold"));
  }
  KernelDirtyThresholds t;
  t.background_bytes = *bg * page_bytes;
  t.limit_bytes = *limit * page_bytes;
  t.source = fmt::format(
      "the kernel's own (/proc/vmstat nr_dirty_background_threshold, nr_dirty_threshold: {} "
      "and {} of the machine's dirtyable memory",
      SysctlText("dirty_background", sysctls.background_ratio, sysctls.background_bytes),
      SysctlText("dirty", sysctls.ratio, sysctls.bytes));
  if (cgroup_version == 2 && cgroup_limit_bytes > 0) {
    t.background_bytes = std::min(
        t.background_bytes,
        ShareOf(cgroup_limit_bytes, sysctls.background_ratio, sysctls.background_bytes));
    t.limit_bytes =
        std::min(t.limit_bytes, ShareOf(cgroup_limit_bytes, sysctls.ratio, sysctls.bytes));
    t.source += fmt::format(", lowered to the same shares of the cgroup v2 memory.max {})",
                            FormatSize(cgroup_limit_bytes));
  } else if (cgroup_version == 1) {
    t.source += "; a cgroup v1 memory cgroup limits no dirty memory)";
  } else {
    t.source += ")";
  }
  if (t.background_bytes >= t.limit_bytes) {
    // The kernel keeps the background threshold below the limit (half of it) too.
    t.background_bytes = t.limit_bytes / 2;
  }
  if (t.limit_bytes < 2 * page_bytes) {
    return Status::InvalidArgument(
        fmt::format("/proc/vmstat: nr_dirty_threshold {} pages is too small to match", *limit));
  }
  return t;
}

Result<KernelDirtyThresholds> ReadKernelDirtyThresholds(int cgroup_version,
                                                        uint64_t cgroup_limit_bytes) {
  std::ifstream in("/proc/vmstat");
  if (!in) return Status::NotSupported("/proc/vmstat: cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  DirtySysctls s;
  s.background_ratio = ReadSysctl("/proc/sys/vm/dirty_background_ratio");
  s.background_bytes = ReadSysctl("/proc/sys/vm/dirty_background_bytes");
  s.ratio = ReadSysctl("/proc/sys/vm/dirty_ratio");
  s.bytes = ReadSysctl("/proc/sys/vm/dirty_bytes");
  const long page = sysconf(_SC_PAGESIZE);
  return ParseKernelDirtyThresholds(text.str(), page > 0 ? static_cast<uint64_t>(page) : 4096, s,
                                    cgroup_version, cgroup_limit_bytes);
}

}  // namespace folio::bench
