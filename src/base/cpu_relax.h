// CpuRelax: the spin-wait hint of this ISA (x86 `pause`, arm64 `yield`), for busy-wait loops
// that poll a flag another thread will change. The one place in Folio that names these
// instructions; on other ISAs it is a compiler barrier only.
//
// Thread safety: no state.
#pragma once

namespace folio {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

}  // namespace folio
