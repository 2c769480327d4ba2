// EngineSpec: one `--engine` choice of `folio bench`: `limit` (memcpy from / to an anonymous
// buffer: the ceiling of a cached run), the kernel (pread / pwrite on the file, buffered, or
// O_DIRECT through io_uring as the job says), `kernel:4k` (the kernel with the job's pre-read
// made without readahead, so its page cache holds the file in 4 KiB folios), `fio` (the job run by Debian's fio binary, its
// JSON parsed) or Folio with a folio policy (4k, fixed:SIZE, dynamic). Parsing is pure so the
// CLI can reject a bad list before any work starts.
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "folio/status.h"

namespace folio::bench {

struct EngineSpec {
  enum class Kind { kKernel, kKernel4k, kFolio4k, kFolioFixed, kFolioDynamic, kLimit, kFio } kind =
      Kind::kKernel;
  uint64_t fixed_bytes = 0;  // kFolioFixed: a power of two from 4K to 2M

  bool is_folio() const {
    return kind == Kind::kFolio4k || kind == Kind::kFolioFixed || kind == Kind::kFolioDynamic;
  }
  // Runs on the file itself through the kernel (kernel, fio): needs a file, not a raid: / mem:
  // device, and runs at equal memory in the bench's memory cgroup.
  bool uses_kernel_page_cache() const {
    return kind == Kind::kKernel || kind == Kind::kKernel4k || kind == Kind::kFio;
  }
  // "kernel", "kernel:4k", "folio:4k", "folio:fixed:64k", "folio:dynamic", "limit", "fio".
  std::string Name() const;
  // The folio policy's name as PageCache prints it ("4k", "fixed:64K", "dynamic"), or
  // "kernel" / "kernel:4k" / "limit" / "fio".
  std::string PolicyName() const;
  bool operator==(const EngineSpec&) const = default;
};

inline constexpr std::string_view kDefaultEngines =
    "limit,kernel,folio:4k,folio:fixed:64k,folio:dynamic";

// Parses one engine name. The error names the value and lists the choices.
Result<EngineSpec> ParseEngine(std::string_view text);
// Parses a comma-separated list (no empty items, no duplicates).
Result<std::vector<EngineSpec>> ParseEngineList(std::string_view text);

}  // namespace folio::bench
