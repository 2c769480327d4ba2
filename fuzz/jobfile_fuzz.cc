// libFuzzer target for the job-file parser: parse + validate any bytes; whatever parses must
// print to canonical text that parses again to the same jobs, and whatever fails must fail
// with a one-line InvalidArgument naming the file. Never a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "bench/jobfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using folio::bench::JobFile;
  if (size > folio::bench::kJobFileBytesMax) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  folio::Result<JobFile> first = folio::bench::ParseJobFile(text, "fuzz.fio");
  if (!first.ok()) {
    FOLIO_CHECK(first.status().IsInvalidArgument());
    FOLIO_CHECK(first.status().message().starts_with("fuzz.fio:"));
    return 0;
  }
  FOLIO_CHECK(!first->jobs.empty());
  for (const folio::bench::JobSpec& j : first->jobs) {
    FOLIO_CHECK(!j.name.empty());
    FOLIO_CHECK(j.block_bytes != 0 && j.block_bytes % 512 == 0);
    FOLIO_CHECK(j.size_bytes == 0 || j.size_bytes >= j.block_bytes);
    FOLIO_CHECK(j.size_bytes != 0 || !j.filename.empty());
    FOLIO_CHECK(j.iodepth >= 1 && j.iodepth <= folio::bench::kIodepthMax);
    FOLIO_CHECK(j.numjobs >= 1 && j.numjobs <= folio::bench::kNumjobsMax);
    FOLIO_CHECK(j.rwmixread <= 100);
    FOLIO_CHECK(!j.time_based || j.runtime_us != 0);
    FOLIO_CHECK(j.loops >= 1 && j.loops <= folio::bench::kLoopsMax);
    FOLIO_CHECK(j.startdelay_us <= j.startdelay_max_us);
    FOLIO_CHECK(j.offset_percent <= 100);
    FOLIO_CHECK(j.offset_percent == 0 || j.offset_bytes == 0);
    FOLIO_CHECK(j.dist_center == -1 || (j.dist_center >= 0 && j.dist_center <= 1));
    FOLIO_CHECK(j.random_distribution != folio::bench::RandomDist::kPareto ||
                (j.dist_param > 0 && j.dist_param < 1));
    FOLIO_CHECK(j.random_distribution != folio::bench::RandomDist::kZipf ||
                (j.dist_param > 0 && j.dist_param != 1));
  }
  std::string canonical = folio::bench::JobFileToString(*first);
  folio::Result<JobFile> second = folio::bench::ParseJobFile(canonical, "fuzz.fio");
  FOLIO_CHECK_MSG(second.ok(), "canonical text of a valid job file must parse");
  FOLIO_CHECK(second->jobs.size() == first->jobs.size());
  for (size_t i = 0; i < first->jobs.size(); ++i) {
    folio::bench::JobSpec a = first->jobs[i];
    folio::bench::JobSpec b = second->jobs[i];
    a.line = b.line = 0;
    FOLIO_CHECK_MSG(a == b, "canonical text must round-trip");
  }
  // The canonical form is a fixed point.
  FOLIO_CHECK(folio::bench::JobFileToString(*second) == canonical);
  return 0;
}
