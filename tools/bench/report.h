// Reports of `folio bench`: the side-by-side table per job (human), fio's JSON shape
// (--output-format=json), and the values both are computed from.
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/engine.h"
#include "bench/engine_spec.h"
#include "bench/jobfile.h"
#include "bench/workload.h"

namespace folio::bench {

// One engine's run of one job.
struct RunResult {
  JobSpec job;
  EngineSpec engine;
  std::string file;          // the data file
  bool file_created = false; // a temp file made for the job (vs the job's filename)
  bool on_device = false;    // `file` is the --device spec the run used
  TimedRun timed;
  bool has_folio = false;
  FolioRunStats folio;
  MemoryReport memory;
  int64_t device_read_bytes = -1;  // over the timed region; -1 = not counted
  std::vector<std::string> notes;
  // Engine::kernel_folios(): the census, or (kernel_folios_error) why it is not known.
  std::optional<KernelFolioCensus> kernel_folios;
  std::string kernel_folios_error;
  // With --repeat N > 1: this is the median-IOPS run of the engine's N runs of the job, and
  // round_iops holds every run's IOPS in the order they ran (empty for a single run).
  std::vector<double> round_iops;

  uint64_t ops() const { return timed.read.ops + timed.write.ops; }
  uint64_t bytes() const { return timed.read.bytes + timed.write.bytes; }
  double iops() const;
  double bytes_per_s() const;
  double cpu_s_per_gib() const;  // 0 when nothing moved
  // Read and write latencies together.
  HistogramSnapshot latency_ns() const;
  // 1 - device read bytes / bytes the job read, in [0, 1]; -1 when not measured (direct=1,
  // limit, a job that does not read).
  double hit_ratio() const;
};

// One engine's runs of one job (--repeat; REQUIRES: at least one) -> the median-IOPS run
// (the lower middle one for an even count), carrying every run's IOPS in the order they ran
// in round_iops (left empty for a single run).
RunResult MedianRun(std::vector<RunResult> runs);

// "412k", "1.01M", "950".
std::string FormatIops(double iops);
// A count in three digits or so: "950", "41k", "1.2M".
std::string FormatCount(uint64_t n);

// The table of one job's runs (all of the same job), with ratio columns to the limit, kernel
// and folio:4k rows when the job has them, then a line of folio stats per folio engine, the
// runs' notes and `job_notes` (e.g. an engine skipped for this job). Ends with a blank line.
std::string FormatJobTable(const std::vector<RunResult>& runs,
                           const std::vector<std::string>& job_notes = {});
// The legend printed once after all tables.
std::string FormatLegend();

// fio's JSON shape: {"fio version", "global options", "jobs": [...]}, one job entry per run.
nlohmann::ordered_json ResultsJson(const std::vector<RunResult>& runs, uint64_t cache_bytes);

}  // namespace folio::bench
