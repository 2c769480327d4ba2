#include "base/dispatch.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace folio {
namespace {

// An environment of exactly these variables.
EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// A CPU of this ISA with no optional feature at all.
CpuFeatures BareCpu() {
  CpuFeatures f;
  f.arch = CpuFeaturesOnce().arch;
  return f;
}

std::string ErrorOf(const CpuFeatures& f, std::map<std::string, std::string> vars) {
  Result<DispatchConfig> c = ResolveDispatch(f, Env(std::move(vars)));
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

TEST(DispatchTest, UnsetOrEmptyMeansAuto) {
  const CpuFeatures& f = CpuFeaturesOnce();
  for (const auto& vars : {std::map<std::string, std::string>{},
                           std::map<std::string, std::string>{{"FOLIO_CRC", ""},
                                                              {"FOLIO_COPY", ""},
                                                              {"FOLIO_ATOMICS", ""}}}) {
    Result<DispatchConfig> c = ResolveDispatch(f, Env(vars));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->crc_request, "auto");
    EXPECT_EQ(c->crc, CrcImpl::kHw);
    EXPECT_EQ(c->copy_request, "auto");
    EXPECT_EQ(c->copy_in, AutoFolioCopyIn(f));
    EXPECT_EQ(c->copy_out, AutoFolioCopyOut(f));
    EXPECT_EQ(c->atomics, AutoAtomics(f));
  }
}

TEST(DispatchTest, ExplicitChoices) {
  const CpuFeatures& f = CpuFeaturesOnce();
  Result<DispatchConfig> c =
      ResolveDispatch(f, Env({{"FOLIO_CRC", "sw"}, {"FOLIO_COPY", "glibc"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->crc, CrcImpl::kSw);
  EXPECT_EQ(c->crc_request, "sw");
  EXPECT_EQ(c->copy_in, CopyImpl::kGlibc);
  EXPECT_EQ(c->copy_out, CopyImpl::kGlibc);
  if (CpuHasCrcInstructions(f)) {
    c = ResolveDispatch(f, Env({{"FOLIO_CRC", "hw"}}));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->crc, CrcImpl::kHw);
  }
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    if (!CopyImplAvailable(impl, f)) continue;
    c = ResolveDispatch(f, Env({{"FOLIO_COPY", std::string(CopyImplName(impl))}}));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->copy_in, impl);
    EXPECT_EQ(c->copy_out, impl);
  }
}

TEST(DispatchTest, UnknownValuesNameTheVariableAndTheChoices) {
  const CpuFeatures& f = CpuFeaturesOnce();
  EXPECT_EQ(ErrorOf(f, {{"FOLIO_CRC", "fast"}}), "FOLIO_CRC=fast: must be auto, hw or sw");
  EXPECT_EQ(ErrorOf(f, {{"FOLIO_COPY", "turbo"}}),
            "FOLIO_COPY=turbo: must be auto, glibc, avx2, avx2-nt, avx512, avx512-nt, rep-movsb, "
            "neon or sve");
  EXPECT_EQ(ErrorOf(f, {{"FOLIO_ATOMICS", "tso"}}),
            "FOLIO_ATOMICS=tso: must be auto, lse or llsc");
  EXPECT_EQ(ErrorOf(f, {{"FOLIO_CRC", "HW"}}), "FOLIO_CRC=HW: must be auto, hw or sw");
}

// A choice this CPU cannot run is refused with what it can run instead.
TEST(DispatchTest, ChoicesTheCpuCannotRunAreRefused) {
  const CpuFeatures bare = BareCpu();
  EXPECT_NE(ErrorOf(bare, {{"FOLIO_CRC", "hw"}}).find("; use auto or sw"), std::string::npos)
      << ErrorOf(bare, {{"FOLIO_CRC", "hw"}});
  EXPECT_EQ(ErrorOf(bare, {{"FOLIO_CRC", "sw"}}), "");
#if defined(__x86_64__)
  EXPECT_EQ(ErrorOf(bare, {{"FOLIO_COPY", "avx2-nt"}}),
            "FOLIO_COPY=avx2-nt: this x86_64 CPU cannot run that kernel; use auto, glibc or "
            "rep-movsb");
  for (const char* kernel : {"avx512", "avx512-nt"}) {
    EXPECT_EQ(ErrorOf(bare, {{"FOLIO_COPY", kernel}}),
              std::string("FOLIO_COPY=") + kernel +
                  ": this x86_64 CPU cannot run that kernel; use auto, glibc or rep-movsb");
  }
  // An AVX2 CPU without AVX-512 (Zen 3): the AVX-512 kernels are refused, naming the AVX2 ones.
  CpuFeatures avx2_only = bare;
  avx2_only.avx2 = avx2_only.os_avx = true;
  EXPECT_EQ(ErrorOf(avx2_only, {{"FOLIO_COPY", "avx512-nt"}}),
            "FOLIO_COPY=avx512-nt: this x86_64 CPU cannot run that kernel; use auto, glibc, "
            "avx2, avx2-nt or rep-movsb");
  CpuFeatures avx512 = avx2_only;
  avx512.avx512f = avx512.os_avx512 = true;
  Result<DispatchConfig> c = ResolveDispatch(avx512, Env({{"FOLIO_COPY", "avx512-nt"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->copy_in, CopyImpl::kAvx512Nt);
  EXPECT_EQ(c->copy_out, CopyImpl::kAvx512Nt);
  EXPECT_NE(ErrorOf(bare, {{"FOLIO_COPY", "neon"}}).find("cannot run that kernel"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(bare, {{"FOLIO_ATOMICS", "lse"}}),
            "FOLIO_ATOMICS=lse: only arm64 chooses (x86-64 atomics are lock-prefixed "
            "instructions); use auto");
#elif defined(__aarch64__)
  EXPECT_EQ(ErrorOf(bare, {{"FOLIO_COPY", "sve"}}),
            "FOLIO_COPY=sve: this arm64 CPU cannot run that kernel; use auto or glibc");
  EXPECT_EQ(ErrorOf(bare, {{"FOLIO_ATOMICS", "lse"}}),
            "FOLIO_ATOMICS=lse: this CPU has no LSE atomics (ARMv8.0); use auto or llsc");
  Result<DispatchConfig> c = ResolveDispatch(bare, Env({{"FOLIO_ATOMICS", "llsc"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->atomics, AtomicsImpl::kLlsc);
#endif
}

TEST(DispatchTest, ApplyChangesWhatRunsAndActiveDispatchReportsIt) {
  const CpuFeatures& f = CpuFeaturesOnce();
  Result<DispatchConfig> sw = ResolveDispatch(f, Env({{"FOLIO_CRC", "sw"}, {"FOLIO_COPY", "glibc"}}));
  ASSERT_TRUE(sw.ok());
  ApplyDispatch(*sw);
  DispatchConfig active = ActiveDispatch();
  EXPECT_EQ(active.crc, CrcImpl::kSw);
  EXPECT_EQ(CurrentCrcImpl(), CrcImpl::kSw);
  EXPECT_EQ(active.crc_request, "sw");
  EXPECT_EQ(active.copy_in, CopyImpl::kGlibc);
  EXPECT_EQ(active.atomics, CurrentAtomicsImpl());

  std::vector<DispatchRow> rows = DescribeDispatch(active, f);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].path, "crc32c");
  EXPECT_EQ(rows[0].variable, "FOLIO_CRC");
  EXPECT_EQ(rows[0].chosen, "sw");
  EXPECT_EQ(rows[1].path, "copy into folios");
  EXPECT_EQ(rows[1].chosen, "glibc");
  EXPECT_EQ(rows[3].path, "atomics");
  EXPECT_EQ(rows[4].path, "false-sharing padding");

  Result<DispatchConfig> autos = ResolveDispatch(f, Env({}));
  ASSERT_TRUE(autos.ok());
  ApplyDispatch(*autos);
  EXPECT_EQ(CurrentCrcImpl(), CrcImpl::kHw);
  EXPECT_EQ(CurrentFolioCopyIn(), AutoFolioCopyIn(f));
  rows = DescribeDispatch(ActiveDispatch(), f);
  EXPECT_NE(rows[0].detail.find(IsalCrcKernel(f)), std::string::npos) << rows[0].detail;
}

}  // namespace
}  // namespace folio
