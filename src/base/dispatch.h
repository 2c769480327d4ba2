// Dispatch: the implementation each CPU-dependent hot path runs, chosen once at process start
// from the CPU's features (CpuFeaturesOnce) and the FOLIO_* environment variables:
//
//   FOLIO_CRC      auto | hw | sw                CRC32C (base/crc32c.h)
//   FOLIO_COPY     auto | glibc | avx2 | avx2-nt | avx512 | avx512-nt | rep-movsb | neon | sve
//                                                copies into / out of folios (base/copy.h)
//   FOLIO_ATOMICS  auto | lse | llsc             arm64 atomic RMWs (base/atomics.h)
//
// `auto` (or unset) takes the measured best for this CPU. A value the CPU cannot run (hw on a
// CPU without CRC instructions, avx2 without AVX2, lse on ARMv8.0) or an unknown value is an
// error naming the variable, the value and the accepted ones: the CLI prints it as one line and
// exits 2 before doing anything else. The cache-line padding is a compile-time layout
// (base/cache_line.h), not a run-time choice, so it has no variable; DescribeDispatch reports it.
//
// Thread safety: InitDispatchFromEnvironment / ApplyDispatch only while no other thread runs
// Folio code (the start of main, or a single-threaded test); the rest are reads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/atomics.h"
#include "base/copy.h"
#include "base/cpu_features.h"
#include "base/crc32c.h"
#include "folio/status.h"

namespace folio {

struct DispatchConfig {
  CrcImpl crc = CrcImpl::kHw;
  CopyImpl copy_in = CopyImpl::kGlibc;   // into folios
  CopyImpl copy_out = CopyImpl::kGlibc;  // out of folios
  AtomicsImpl atomics = AtomicsImpl::kX86Lock;
  // The variables' values as given ("auto" when unset or empty).
  std::string crc_request = "auto";
  std::string copy_request = "auto";
  std::string atomics_request = "auto";
};

// Looks a variable up: returns its value or nullptr (std::getenv by default).
using EnvLookup = std::function<const char*(const char*)>;

// Parses the FOLIO_* variables for a CPU with features `f`. InvalidArgument (one line, e.g.
// "FOLIO_CRC=fast: must be auto, hw or sw") for an unknown or unusable value.
Result<DispatchConfig> ResolveDispatch(const CpuFeatures& f, const EnvLookup& env);

// Points every hot path at the chosen implementation. REQUIRES: each is available here.
void ApplyDispatch(const DispatchConfig& config);

// ResolveDispatch(CpuFeaturesOnce(), getenv) + ApplyDispatch; the result is kept for
// ActiveDispatch(). On error nothing is applied.
Status InitDispatchFromEnvironment();

// The implementations in force (read from each hot path) with the requests last applied
// ("auto" if none was: every hot path starts on its auto choice).
DispatchConfig ActiveDispatch();

// One row per hot path, for `folio doctor`.
struct DispatchRow {
  std::string path;      // "crc32c", "copy into folios", ...
  std::string variable;  // "FOLIO_CRC", or "" when there is no run-time choice
  std::string request;   // the variable's value ("auto"), or ""
  std::string chosen;    // "hw", "avx2-nt", "lse", "64 bytes"
  std::string detail;    // what that means here, e.g. "isa-l crc32_iscsi_01 (...)"
  std::string accepted;  // "auto, hw, sw" (values this CPU can run), or ""
};
std::vector<DispatchRow> DescribeDispatch(const DispatchConfig& config, const CpuFeatures& f);

}  // namespace folio
