// CRC32C throughput per implementation (FOLIO_CRC: hw = ISA-L's dispatched kernel, sw = its
// table code) for folio sizes 4 KiB .. 2 MiB and a few small records. Bytes/s is the figure.
//
//   base_bench --benchmark_filter=Crc32c --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "base/crc32c.h"

namespace folio {
namespace {

void BM_Crc32c(benchmark::State& state, CrcImpl impl) {
  const size_t len = static_cast<size_t>(state.range(0));
  std::vector<unsigned char> buf(len + 64);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = Crc32cWith(impl, buf.data(), len, crc);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
  state.SetLabel(impl == CrcImpl::kHw ? IsalCrcKernel(CpuFeaturesOnce()) : "crc32_iscsi_base");
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {64, 512, 4096, 65536, 2 << 20}) b->Arg(n);
}

BENCHMARK_CAPTURE(BM_Crc32c, hw, CrcImpl::kHw)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Crc32c, sw, CrcImpl::kSw)->Apply(Sizes);

}  // namespace
}  // namespace folio
