#include "base/crc32c.h"

#include <isa-l/crc.h>

#include <atomic>
#include <climits>

#if defined(__aarch64__)
// ISA-L's aarch64 multibinary: crc32_iscsi jumps through the pointer its dispatcher returns.
// The dispatcher and the kernels are exported (not declared in crc.h).
extern "C" {
void* crc32_iscsi_dispatcher(void);
unsigned int crc32_iscsi_crc_ext(unsigned char*, int, unsigned int);
unsigned int crc32_iscsi_3crc_fold(unsigned char*, int, unsigned int);
unsigned int crc32_iscsi_refl_pmull(unsigned char*, int, unsigned int);
}
#endif

namespace folio {

namespace {

using IsalCrcFn = unsigned int (*)(unsigned char*, int, unsigned int);

// Set before other threads run (see the header); relaxed loads suffice: the pointer is the
// only datum and the functions it names are immutable code.
std::atomic<IsalCrcFn> g_crc_fn{&crc32_iscsi};

IsalCrcFn FnOf(CrcImpl impl) { return impl == CrcImpl::kHw ? &crc32_iscsi : &crc32_iscsi_base; }

uint32_t Run(IsalCrcFn fn, const void* data, size_t len, uint32_t crc) {
  // ISA-L takes and returns the raw (non-inverted) register, and an int length.
  auto* p = const_cast<unsigned char*>(static_cast<const unsigned char*>(data));
  uint32_t reg = ~crc;
  constexpr size_t kMaxPiece = size_t{1} << 30;
  while (len > kMaxPiece) {
    reg = fn(p, static_cast<int>(kMaxPiece), reg);
    p += kMaxPiece;
    len -= kMaxPiece;
  }
  return ~fn(p, static_cast<int>(len), reg);
}

}  // namespace

std::string_view CrcImplName(CrcImpl impl) { return impl == CrcImpl::kHw ? "hw" : "sw"; }

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
  return Run(g_crc_fn.load(std::memory_order_relaxed), data, len, crc);
}

uint32_t Crc32cWith(CrcImpl impl, const void* data, size_t len, uint32_t crc) {
  return Run(FnOf(impl), data, len, crc);
}

void SetCrcImpl(CrcImpl impl) { g_crc_fn.store(FnOf(impl), std::memory_order_relaxed); }

CrcImpl CurrentCrcImpl() {
  return g_crc_fn.load(std::memory_order_relaxed) == &crc32_iscsi ? CrcImpl::kHw : CrcImpl::kSw;
}

std::string IsalCrcKernel(const CpuFeatures& f) {
  switch (f.arch) {
    case CpuArch::kX86_64:
      // ISA-L 2.30 crc_multibinary.asm (mbin_dispatch_init_clmul): SSE4.2 -> _00,
      // + PCLMULQDQ -> _01, + AVX2 and the Ice Lake AVX-512 set (VPCLMULQDQ, VAES, GFNI, ...)
      // -> _by16_10.
      if (!f.sse42) return "crc32_iscsi_base";
      if (!f.pclmulqdq) return "crc32_iscsi_00";
      if (f.avx512_icl) return "crc32_iscsi_by16_10";
      return "crc32_iscsi_01";
    case CpuArch::kArm64: {
      // ISA-L 2.30 crc/aarch64/crc_aarch64_dispatcher.c: CRC32 on Neoverse-N1, Cortex-A57 or
      // Cortex-A72 -> crc_ext; else CRC32 + PMULL -> 3crc_fold; PMULL alone -> refl_pmull.
      const bool arm_ltd = ((f.arm_midr >> 24) & 0xff) == 0x41;
      const unsigned part = static_cast<unsigned>((f.arm_midr >> 4) & 0xfff);
      if (f.arm_crc32 && arm_ltd && (part == 0xd0c || part == 0xd07 || part == 0xd08)) {
        return "crc32_iscsi_crc_ext";
      }
      if (f.arm_crc32 && f.arm_pmull) return "crc32_iscsi_3crc_fold";
      if (f.arm_pmull) return "crc32_iscsi_refl_pmull";
      return "crc32_iscsi_base";
    }
    case CpuArch::kOther: break;
  }
  return "crc32_iscsi_base";
}

bool CpuHasCrcInstructions(const CpuFeatures& f) { return IsalCrcKernel(f) != "crc32_iscsi_base"; }

#if defined(__aarch64__)
std::string IsalCrcDispatcherChoice() {
  void* chosen = crc32_iscsi_dispatcher();
  if (chosen == reinterpret_cast<void*>(&crc32_iscsi_crc_ext)) return "crc32_iscsi_crc_ext";
  if (chosen == reinterpret_cast<void*>(&crc32_iscsi_3crc_fold)) return "crc32_iscsi_3crc_fold";
  if (chosen == reinterpret_cast<void*>(&crc32_iscsi_refl_pmull)) return "crc32_iscsi_refl_pmull";
  if (chosen == reinterpret_cast<void*>(&crc32_iscsi_base)) return "crc32_iscsi_base";
  return "unknown";
}
#endif

std::string_view IsalCrcKernelDetail(std::string_view kernel) {
  if (kernel == "crc32_iscsi_00") return "sse4.2 crc32, 3 streams";
  if (kernel == "crc32_iscsi_01") return "sse4.2 crc32 + pclmulqdq folding";
  if (kernel == "crc32_iscsi_by16_10") return "avx-512 vpclmulqdq folding";
  if (kernel == "crc32_iscsi_crc_ext") return "arm64 crc32c instructions";
  if (kernel == "crc32_iscsi_3crc_fold") return "arm64 crc32c, 3 streams + pmull folding";
  if (kernel == "crc32_iscsi_refl_pmull") return "arm64 pmull folding";
  if (kernel == "crc32_iscsi_base") return "table lookup (no CRC instructions)";
  return "unknown";
}

}  // namespace folio
