// How this build performs atomic read-modify-writes (std::atomic fetch_add, exchange,
// compare_exchange), and on arm64 the run-time choice between LSE and LL/SC.
//
//   x86-64  lock-prefixed instructions; nothing to choose
//   arm64   Debian's GCC builds with -moutline-atomics (its default): every RMW calls a libgcc
//           helper (__aarch64_ldadd8_acq_rel, __aarch64_cas4_acq, ...) that branches on
//           __aarch64_have_lse_atomics, which libgcc sets at start from HWCAP_ATOMICS. So an
//           ARMv8.1+ CPU runs single LSE instructions (ldadd, cas, swp), an ARMv8.0 CPU
//           (Cortex-A53) runs exclusive-load / store-conditional loops, from the same binary.
//           A build for -march=armv8.1-a would inline LSE and die with SIGILL on ARMv8.0: it is
//           reported as such (and `make test-arm64` checks the binaries have no inline LSE).
//
// Thread safety: SetAtomicsImpl may only run while no other thread exists (start of main or a
// single-threaded test); the rest are reads.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/cpu_features.h"

namespace folio {

enum class AtomicsImpl : uint8_t { kX86Lock, kLse, kLlsc };

std::string_view AtomicsImplName(AtomicsImpl impl);  // "x86-lock", "lse", "llsc"

enum class AtomicsBuild : uint8_t { kX86Lock, kArmOutline, kArmInlineLse, kOther };
// How this binary was compiled to issue atomics.
AtomicsBuild CurrentAtomicsBuild();
std::string_view AtomicsBuildDescription(AtomicsBuild build);

// The implementation RMWs run right now.
AtomicsImpl CurrentAtomicsImpl();
// Whether impl can run here: x86-lock on x86; on an outline-atomics arm64 build, llsc always
// and lse when the CPU has it; an inline arm64 build only what it was compiled for.
bool AtomicsImplAvailable(AtomicsImpl impl, const CpuFeatures& f);
// What `auto` is: the CPU's best (lse when present).
AtomicsImpl AutoAtomics(const CpuFeatures& f);
// Makes RMWs use impl (arm64 outline builds: sets libgcc's __aarch64_have_lse_atomics).
// REQUIRES: AtomicsImplAvailable(impl, CpuFeaturesOnce()) (checked); no other thread running.
void SetAtomicsImpl(AtomicsImpl impl);

}  // namespace folio
