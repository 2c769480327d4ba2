// RunBench: the body of `folio bench` once its flags are valid: loads the job files, makes
// the data files, runs every job under every engine side by side on the same file and data,
// prints the tables (or fio-shaped JSON) and writes the plot.
//
// Thread safety: called once from the main thread; runs worker threads internally.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/engine_spec.h"

namespace folio::bench {

struct BenchConfig {
  std::vector<EngineSpec> engines;
  uint64_t cache_bytes = 0;
  std::string dir;                    // parent of the temp data directory
  bool json = false;
  std::string plot_path;              // empty: no plot
  std::vector<std::string> jobfiles;
  std::optional<uint64_t> seed;       // default: random, printed
};

inline constexpr uint64_t kMaxTotalFileBytes = 8ull << 30;

// Returns the process exit code (0, 1 runtime failure, 2 usage error, 130 interrupted);
// errors are printed as one line on stderr.
int RunBench(const BenchConfig& config);

}  // namespace folio::bench
