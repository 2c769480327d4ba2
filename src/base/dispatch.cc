#include "base/dispatch.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <string_view>

#include "base/cache_line.h"
#include "base/copy_kernels.h"

namespace folio {

namespace {

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::string Request(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v == nullptr || *v == '\0' ? "auto" : v;
}

Status Refuse(const char* variable, const std::string& value, const std::string& why,
              const std::vector<std::string>& usable) {
  return Status::InvalidArgument(std::string(variable) + "=" + value + ": " + why + "; use " +
                                 Join(usable));
}

std::vector<std::string> UsableCrc(const CpuFeatures& f) {
  if (CpuHasCrcInstructions(f)) return {"auto", "hw", "sw"};
  return {"auto", "sw"};
}

std::vector<std::string> UsableCopy(const CpuFeatures& f) {
  std::vector<std::string> out{"auto"};
  for (CopyImpl impl : CopyImplsOfThisIsa()) {
    if (CopyImplAvailable(impl, f)) out.emplace_back(CopyImplName(impl));
  }
  return out;
}

std::vector<std::string> UsableAtomics(const CpuFeatures& f) {
  std::vector<std::string> out{"auto"};
  for (AtomicsImpl impl : {AtomicsImpl::kLse, AtomicsImpl::kLlsc}) {
    if (AtomicsImplAvailable(impl, f)) out.emplace_back(AtomicsImplName(impl));
  }
  return out;
}

Status ResolveCrc(const CpuFeatures& f, DispatchConfig* c) {
  const std::string& v = c->crc_request;
  if (v == "auto") {
    c->crc = CrcImpl::kHw;  // ISA-L falls back to its table code where the CPU has no CRC
  } else if (v == "sw") {
    c->crc = CrcImpl::kSw;
  } else if (v == "hw") {
    if (!CpuHasCrcInstructions(f)) {
      return Refuse("FOLIO_CRC", v,
                    f.arch == CpuArch::kArm64 ? "this CPU has no CRC32 or PMULL instructions"
                                              : "this CPU has no SSE4.2 crc32 instruction",
                    UsableCrc(f));
    }
    c->crc = CrcImpl::kHw;
  } else {
    return Status::InvalidArgument("FOLIO_CRC=" + v + ": must be auto, hw or sw");
  }
  return Status::OK();
}

Status ResolveCopy(const CpuFeatures& f, DispatchConfig* c) {
  const std::string& v = c->copy_request;
  if (v == "auto") {
    c->copy_in = AutoFolioCopyIn(f);
    c->copy_out = AutoFolioCopyOut(f);
    return Status::OK();
  }
  std::optional<CopyImpl> impl = ParseCopyImpl(v);
  if (!impl) {
    std::vector<std::string> all{"auto"};
    for (CopyImpl k : kAllCopyImpls) all.emplace_back(CopyImplName(k));
    return Status::InvalidArgument("FOLIO_COPY=" + v + ": must be " + Join(all));
  }
  if (!CopyImplAvailable(*impl, f)) {
    return Refuse("FOLIO_COPY", v,
                  "this " + std::string(CpuArchName(f.arch)) + " CPU cannot run that kernel",
                  UsableCopy(f));
  }
  c->copy_in = c->copy_out = *impl;
  return Status::OK();
}

Status ResolveAtomics(const CpuFeatures& f, DispatchConfig* c) {
  const std::string& v = c->atomics_request;
  if (v == "auto") {
    c->atomics = AutoAtomics(f);
    return Status::OK();
  }
  AtomicsImpl impl;
  if (v == "lse") {
    impl = AtomicsImpl::kLse;
  } else if (v == "llsc") {
    impl = AtomicsImpl::kLlsc;
  } else {
    return Status::InvalidArgument("FOLIO_ATOMICS=" + v + ": must be auto, lse or llsc");
  }
  if (!AtomicsImplAvailable(impl, f)) {
    std::string why;
    if (f.arch != CpuArch::kArm64) {
      why = "only arm64 chooses (x86-64 atomics are lock-prefixed instructions)";
    } else if (impl == AtomicsImpl::kLse) {
      why = "this CPU has no LSE atomics (ARMv8.0)";
    } else {
      why = "this binary was built with inline LSE atomics";
    }
    return Refuse("FOLIO_ATOMICS", v, why, UsableAtomics(f));
  }
  c->atomics = impl;
  return Status::OK();
}

std::mutex g_requests_mu;
DispatchConfig g_requests;  // GUARDED_BY(g_requests_mu): only the *_request fields are used

}  // namespace

Result<DispatchConfig> ResolveDispatch(const CpuFeatures& f, const EnvLookup& env) {
  DispatchConfig c;
  c.crc_request = Request(env, "FOLIO_CRC");
  c.copy_request = Request(env, "FOLIO_COPY");
  c.atomics_request = Request(env, "FOLIO_ATOMICS");
  for (Status s : {ResolveCrc(f, &c), ResolveCopy(f, &c), ResolveAtomics(f, &c)}) {
    if (!s.ok()) return s;
  }
  return c;
}

void ApplyDispatch(const DispatchConfig& config) {
  SetCrcImpl(config.crc);
  SetCopyImpls(config.copy_in, config.copy_out);
  SetAtomicsImpl(config.atomics);
  std::lock_guard<std::mutex> lock(g_requests_mu);
  g_requests = config;
}

Status InitDispatchFromEnvironment() {
  Result<DispatchConfig> c =
      ResolveDispatch(CpuFeaturesOnce(), [](const char* name) { return std::getenv(name); });
  if (!c.ok()) return c.status();
  ApplyDispatch(*c);
  return Status::OK();
}

DispatchConfig ActiveDispatch() {
  DispatchConfig c;
  {
    std::lock_guard<std::mutex> lock(g_requests_mu);
    c = g_requests;
  }
  c.crc = CurrentCrcImpl();
  c.copy_in = CurrentFolioCopyIn();
  c.copy_out = CurrentFolioCopyOut();
  c.atomics = CurrentAtomicsImpl();
  return c;
}

size_t CompilerDestructiveInterferenceBytes() {
#ifdef __cpp_lib_hardware_interference_size
  return std::hardware_destructive_interference_size;
#else
  return 0;  // the compiler does not say (clang 14 with libstdc++, the fuzz build)
#endif
}

std::vector<DispatchRow> DescribeDispatch(const DispatchConfig& c, const CpuFeatures& f) {
  std::vector<DispatchRow> rows;
  {
    DispatchRow r{"crc32c", "FOLIO_CRC", c.crc_request, std::string(CrcImplName(c.crc)), "",
                  Join(UsableCrc(f))};
    if (c.crc == CrcImpl::kHw) {
      const std::string kernel = IsalCrcKernel(f);
      r.detail = "isa-l crc32_iscsi -> " + kernel + " (" +
                 std::string(IsalCrcKernelDetail(kernel)) + ")";
    } else {
      r.detail = "isa-l crc32_iscsi_base (table lookup)";
    }
    rows.push_back(r);
  }
  auto copy_detail = [](CopyImpl impl) -> std::string {
    switch (impl) {
      case CopyImpl::kGlibc: return "memcpy (glibc's own ifunc dispatch)";
      case CopyImpl::kAvx2: return "avx2 32-byte loads / stores";
      case CopyImpl::kAvx2Nt:
        return "avx2 non-temporal stores from " + std::to_string(copy_internal::kNtMinBytes / 1024) +
               " KiB, glibc below";
      case CopyImpl::kAvx512: return "avx512f 64-byte loads / stores";
      case CopyImpl::kAvx512Nt:
        return "avx512f non-temporal stores from " +
               std::to_string(copy_internal::kNtMinBytes / 1024) + " KiB, glibc below";
      case CopyImpl::kRepMovsb: return "rep movsb";
      case CopyImpl::kNeon: return "neon 64-byte ld1 / st1";
      case CopyImpl::kSve: return "sve predicated ld1b / st1b";
    }
    return "";
  };
  std::string in_detail = copy_detail(c.copy_in);
  if (c.copy_request == "auto" && c.copy_in == CopyImpl::kAvx2Nt && f.avx512f && IsAmdX86(f)) {
    in_detail += " (not avx512-nt: slower on AMD, docs/cpu-dispatch.md)";
  }
  rows.push_back({"copy into folios", "FOLIO_COPY", c.copy_request,
                  std::string(CopyImplName(c.copy_in)), in_detail, Join(UsableCopy(f))});
  rows.push_back({"copy out of folios", "FOLIO_COPY", c.copy_request,
                  std::string(CopyImplName(c.copy_out)), copy_detail(c.copy_out),
                  Join(UsableCopy(f))});
  rows.push_back({"atomics", f.arch == CpuArch::kArm64 ? "FOLIO_ATOMICS" : "",
                  f.arch == CpuArch::kArm64 ? c.atomics_request : "",
                  std::string(AtomicsImplName(c.atomics)),
                  std::string(AtomicsBuildDescription(CurrentAtomicsBuild())),
                  f.arch == CpuArch::kArm64 ? Join(UsableAtomics(f)) : ""});
  std::string line = "detected " + std::to_string(f.cache_line_bytes) + " (" +
                     f.cache_line_source + "); compiler's destructive interference size " +
                     std::to_string(CompilerDestructiveInterferenceBytes());
  if (f.cache_line_bytes > kFalseSharingBytes) {
    line += "; WARNING: the line is larger than the padding, hot structures may share lines";
  }
  rows.push_back({"false-sharing padding", "", "", std::to_string(kFalseSharingBytes) + " bytes",
                  line, ""});
  return rows;
}

}  // namespace folio
