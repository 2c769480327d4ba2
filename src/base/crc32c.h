// CRC32C (Castagnoli), with the implementation chosen once per process (base/dispatch.h,
// FOLIO_CRC):
//
//   hw  ISA-L's crc32_iscsi, which dispatches at run time to the fastest kernel the CPU offers:
//       x86 crc32_iscsi_00 (SSE4.2 crc32), _01 (+ PCLMULQDQ folding), _by16_10 (AVX-512 +
//       VPCLMULQDQ); arm64 crc32_iscsi_crc_ext (CRC32 instructions), _3crc_fold (CRC32 +
//       PMULL), _refl_pmull (PMULL only)
//   sw  ISA-L's table-driven crc32_iscsi_base: no CRC instructions, for comparison and for CPUs
//       without them
//
// Thread safety: Crc32c is a pure function. SetCrcImpl may only run while no other thread
// computes a CRC (at start, from ApplyDispatch, or in a single-threaded test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/cpu_features.h"

namespace folio {

enum class CrcImpl : uint8_t { kHw, kSw };

std::string_view CrcImplName(CrcImpl impl);  // "hw", "sw"

// Standard CRC32C of data (initial value 0xFFFFFFFF, final xor), chainable: pass a previous
// result as `crc` to extend it over more bytes. Runs the implementation SetCrcImpl chose
// (hw until then).
uint32_t Crc32c(const void* data, size_t len, uint32_t crc = 0);

// The same with an explicit implementation (tests and benchmarks compare them).
uint32_t Crc32cWith(CrcImpl impl, const void* data, size_t len, uint32_t crc = 0);

void SetCrcImpl(CrcImpl impl);
CrcImpl CurrentCrcImpl();

// The ISA-L kernel crc32_iscsi runs on a CPU with features `f`, e.g. "crc32_iscsi_01": ISA-L
// 2.30's dispatch rule applied to `f` (ISA-L keeps its x86 choice private; on arm64,
// crc32c_test.cc checks the rule against ISA-L's own dispatcher).
std::string IsalCrcKernel(const CpuFeatures& f);

// Whether ISA-L runs a kernel with CRC instructions there (not its table code).
bool CpuHasCrcInstructions(const CpuFeatures& f);

#if defined(__aarch64__)
// What ISA-L's arm64 dispatcher (crc32_iscsi_dispatcher) chooses on this CPU.
std::string IsalCrcDispatcherChoice();
#endif

// What the kernel uses, e.g. "sse4.2 crc32 + pclmulqdq folding".
std::string_view IsalCrcKernelDetail(std::string_view kernel);

}  // namespace folio
