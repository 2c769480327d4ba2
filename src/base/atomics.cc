#include "base/atomics.h"

#include "base/check.h"

#if defined(__aarch64__) && !defined(__ARM_FEATURE_ATOMICS)
// libgcc's outline-atomics switch (lse-init.c): hidden, so it links from libgcc.a into this
// binary, like the helpers that read it.
extern "C" bool __aarch64_have_lse_atomics;
#endif

namespace folio {

std::string_view AtomicsImplName(AtomicsImpl impl) {
  switch (impl) {
    case AtomicsImpl::kX86Lock: return "x86-lock";
    case AtomicsImpl::kLse: return "lse";
    case AtomicsImpl::kLlsc: return "llsc";
  }
  return "unknown";
}

AtomicsBuild CurrentAtomicsBuild() {
#if defined(__x86_64__)
  return AtomicsBuild::kX86Lock;
#elif defined(__aarch64__) && defined(__ARM_FEATURE_ATOMICS)
  return AtomicsBuild::kArmInlineLse;
#elif defined(__aarch64__)
  // GCC defines no macro for -moutline-atomics; this file's build flags are the project's, and
  // atomics_test.cc checks the helpers really are what runs (the libgcc switch takes effect).
  return AtomicsBuild::kArmOutline;
#else
  return AtomicsBuild::kOther;
#endif
}

std::string_view AtomicsBuildDescription(AtomicsBuild build) {
  switch (build) {
    case AtomicsBuild::kX86Lock: return "lock-prefixed instructions";
    case AtomicsBuild::kArmOutline:
      return "outline atomics: libgcc __aarch64_* helpers pick LSE or LL/SC at run time";
    case AtomicsBuild::kArmInlineLse:
      return "inline LSE (built for ARMv8.1+: SIGILL on ARMv8.0)";
    case AtomicsBuild::kOther: return "compiler default";
  }
  return "unknown";
}

AtomicsImpl CurrentAtomicsImpl() {
#if defined(__aarch64__) && defined(__ARM_FEATURE_ATOMICS)
  return AtomicsImpl::kLse;
#elif defined(__aarch64__)
  return __aarch64_have_lse_atomics ? AtomicsImpl::kLse : AtomicsImpl::kLlsc;
#else
  return AtomicsImpl::kX86Lock;
#endif
}

bool AtomicsImplAvailable(AtomicsImpl impl, const CpuFeatures& f) {
#if defined(__aarch64__) && defined(__ARM_FEATURE_ATOMICS)
  return impl == AtomicsImpl::kLse && f.arm_lse;
#elif defined(__aarch64__)
  return impl == AtomicsImpl::kLlsc || (impl == AtomicsImpl::kLse && f.arm_lse);
#else
  (void)f;
  return impl == AtomicsImpl::kX86Lock;
#endif
}

AtomicsImpl AutoAtomics(const CpuFeatures& f) {
#if defined(__aarch64__)
  return f.arm_lse ? AtomicsImpl::kLse : AtomicsImpl::kLlsc;
#else
  (void)f;
  return AtomicsImpl::kX86Lock;
#endif
}

void SetAtomicsImpl(AtomicsImpl impl) {
  FOLIO_CHECK(AtomicsImplAvailable(impl, CpuFeaturesOnce()));
#if defined(__aarch64__) && !defined(__ARM_FEATURE_ATOMICS)
  __aarch64_have_lse_atomics = impl == AtomicsImpl::kLse;
#endif
}

}  // namespace folio
