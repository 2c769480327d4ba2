// `folio doctor`: what this machine offers for Folio, read from the real interfaces.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "base/cache_line.h"
#include "base/cpu_features.h"
#include "base/dispatch.h"
#include "base/units.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "core_commands.h"
#include "doctor_probe.h"

namespace folio::cli {

namespace {

using Json = nlohmann::ordered_json;

constexpr char kThpDir[] = "/sys/kernel/mm/transparent_hugepage";
constexpr char kHugetlbDir[] = "/sys/kernel/mm/hugepages";

struct DoctorArgs {
  std::string dir = "/tmp";
  bool json = false;
};

Json ChoiceOrAbsent(const std::string& path) {
  std::optional<std::string> v = ReadSysfsChoice(path);
  return v ? Json(*v) : Json("absent");
}

Json ProbeResult(const Status& s, std::string_view ok_detail) {
  return Json{{"ok", s.ok()}, {"detail", s.ok() ? std::string(ok_detail)
                                               : OneLine(s.message())}};
}

Json SystemJson() {
  Json j;
  j["page_size_bytes"] = sysconf(_SC_PAGESIZE);
  j["cpus_online"] = sysconf(_SC_NPROCESSORS_ONLN);
  struct sysinfo si;
  if (sysinfo(&si) == 0) {
    j["memory_total_bytes"] = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    j["memory_free_bytes"] = static_cast<uint64_t>(si.freeram) * si.mem_unit;
  } else {
    j["memory_total_bytes"] = "absent";
    j["memory_free_bytes"] = "absent";
  }
  return j;
}

Json ThpJson() {
  const std::string dir = kThpDir;
  Json j;
  j["enabled"] = ChoiceOrAbsent(dir + "/enabled");
  j["defrag"] = ChoiceOrAbsent(dir + "/defrag");
  j["shmem_enabled"] = ChoiceOrAbsent(dir + "/shmem_enabled");
  Json sizes = Json::object();
  for (const std::string& entry : ListNumberedEntries(dir, "hugepages-", "kB")) {
    sizes[entry] = ChoiceOrAbsent(dir + "/" + entry + "/enabled");
  }
  j["sizes"] = sizes;
  return j;
}

Json HugetlbJson() {
  std::map<std::string, uint64_t> meminfo = ReadMeminfo();
  auto field = [&](const char* name, uint64_t mult) {
    auto it = meminfo.find(name);
    return it == meminfo.end() ? Json("absent") : Json(it->second * mult);
  };
  Json j;
  j["pages_total"] = field("HugePages_Total", 1);
  j["pages_free"] = field("HugePages_Free", 1);
  j["page_size_bytes"] = field("Hugepagesize", 1024);
  Json pools = Json::object();
  for (const std::string& entry : ListNumberedEntries(kHugetlbDir, "hugepages-", "kB")) {
    std::optional<std::string> v =
        ReadSmallFile(std::string(kHugetlbDir) + "/" + entry + "/nr_hugepages");
    pools[entry] = v ? Json(std::strtoull(v->c_str(), nullptr, 10)) : Json("absent");
  }
  j["pools"] = pools;
  return j;
}

Json CpuJson() {
  const CpuFeatures& f = CpuFeaturesOnce();
  Json j;
  j["arch"] = std::string(CpuArchName(f.arch));
  Json features = Json::object();
  for (const auto& [name, present] : f.List()) features[name] = present;
  j["features"] = features;
  if (f.arch == CpuArch::kX86_64) j["vendor"] = f.x86_vendor;
  if (f.arch == CpuArch::kArm64) {
    j["sve_vector_bytes"] = f.sve_vector_bytes;
    j["midr"] = f.arm_midr == 0 ? Json("absent") : Json(DescribeMidr(f.arm_midr));
  }
  j["cache_line_bytes"] = f.cache_line_bytes;
  j["cache_line_source"] = f.cache_line_source;
  j["false_sharing_padding_bytes"] = kFalseSharingBytes;
  j["compiler_destructive_interference_bytes"] = CompilerDestructiveInterferenceBytes();
  return j;
}

// Which implementation each hot path runs (base/dispatch.h), and why.
Json DispatchJson() {
  Json rows = Json::array();
  for (const DispatchRow& r : DescribeDispatch(ActiveDispatch(), CpuFeaturesOnce())) {
    Json row{{"path", r.path}, {"chosen", r.chosen}, {"detail", r.detail}};
    if (!r.variable.empty()) {
      row["variable"] = r.variable;
      row["request"] = r.request;
      row["accepted"] = r.accepted;
    }
    rows.push_back(row);
  }
  return rows;
}

Json DoctorJson(const DoctorArgs& args) {
  Json j;
  j["folio_version"] = std::string(kVersion);
  j["system"] = SystemJson();
  j["thp"] = ThpJson();
  j["hugetlb"] = HugetlbJson();
  j["io_uring"] = ProbeResult(ProbeIoUring(args.dir),
                              "wrote and read back 4K through an io_uring file device");
  j["o_direct"] = ProbeResult(ProbeODirect(args.dir), "wrote and read back 4K aligned");
  j["o_direct"]["dir"] = args.dir;
  j["fuse"] = ProbeResult(ProbeDevFuse(), "/dev/fuse opened read-write");
  j["cpu"] = CpuJson();
  j["dispatch"] = DispatchJson();
  return j;
}

std::string Show(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

std::string ShowBytes(const Json& v) {
  return v.is_number_unsigned() || v.is_number_integer() ? FormatSize(v.get<uint64_t>()) : Show(v);
}

void Row(std::string_view name, const std::string& value) {
  std::printf("  %-30.*s %s\n", static_cast<int>(name.size()), name.data(), value.c_str());
}

std::string ShowProbe(const Json& p) {
  return (p["ok"].get<bool>() ? "ok (" : "FAILED (") + p["detail"].get<std::string>() + ")";
}

void PrintTable(const Json& j) {
  std::printf("folio doctor (folio %s)\n\nSystem\n", j["folio_version"].get<std::string>().c_str());
  const Json& sys = j["system"];
  Row("page size", ShowBytes(sys["page_size_bytes"]));
  Row("CPUs online", Show(sys["cpus_online"]));
  Row("memory", ShowBytes(sys["memory_total_bytes"]) + " total, " +
                    ShowBytes(sys["memory_free_bytes"]) + " free");
  std::printf("\nTransparent huge pages (%s)\n", kThpDir);
  for (const char* k : {"enabled", "defrag", "shmem_enabled"}) Row(k, Show(j["thp"][k]));
  for (const auto& [size, v] : j["thp"]["sizes"].items()) Row(size + "/enabled", Show(v));
  std::printf("\nHugetlb pages\n");
  const Json& h = j["hugetlb"];
  Row("HugePages_Total", Show(h["pages_total"]));
  Row("HugePages_Free", Show(h["pages_free"]));
  Row("Hugepagesize", ShowBytes(h["page_size_bytes"]));
  for (const auto& [pool, v] : h["pools"].items()) Row(pool + "/nr_hugepages", Show(v));
  std::printf("\nI/O\n");
  Row("io_uring", ShowProbe(j["io_uring"]));
  Row("O_DIRECT in " + j["o_direct"]["dir"].get<std::string>(), ShowProbe(j["o_direct"]));
  Row("/dev/fuse", ShowProbe(j["fuse"]));
  const Json& cpu = j["cpu"];
  std::printf("\nCPU (%s)\n", cpu["arch"].get<std::string>().c_str());
  if (cpu.contains("vendor")) Row("vendor", cpu["vendor"].get<std::string>());
  for (const auto& [name, v] : cpu["features"].items()) Row(name, Show(v));
  if (cpu.contains("sve_vector_bytes") && cpu["sve_vector_bytes"].get<uint64_t>() > 0) {
    Row("sve vector length", std::to_string(cpu["sve_vector_bytes"].get<uint64_t>()) + " bytes");
  }
  if (cpu.contains("midr")) Row("midr", Show(cpu["midr"]));
  Row("cache line", std::to_string(cpu["cache_line_bytes"].get<uint64_t>()) + " bytes (from " +
                        cpu["cache_line_source"].get<std::string>() + ")");
  std::printf("\nDispatch (set with the FOLIO_* variables; see README)\n");
  for (const Json& r : j["dispatch"]) {
    std::string value = r["chosen"].get<std::string>();
    if (r.contains("variable")) {
      value += "  [" + r["variable"].get<std::string>() + "=" + r["request"].get<std::string>() +
               "; " + r["accepted"].get<std::string>() + "]";
    }
    Row(r["path"].get<std::string>(), value);
    Row("", r["detail"].get<std::string>());
  }
}

int RunDoctor(const DoctorArgs& args) {
  Status dir_ok = CheckDirectoryFlag("--dir", args.dir, "/tmp");
  if (!dir_ok.ok()) return UsageError("folio doctor", dir_ok.message());
  Json j = DoctorJson(args);
  if (args.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintTable(j);
  }
  return std::fflush(stdout) == 0 ? kExitOk : RuntimeError("folio doctor", "stdout: write failed");
}

}  // namespace

Command AddDoctorCommand(CLI::App& root) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* sub = root.add_subcommand(
      "doctor", "Report what this machine offers for Folio: page size, THP and hugetlb, "
                "io_uring, O_DIRECT, /dev/fuse, CPU features and the implementation each "
                "CPU-dependent hot path chose (FOLIO_CRC, FOLIO_COPY, FOLIO_ATOMICS).");
  sub->add_option("--dir", args->dir, "Directory in which to test O_DIRECT and io_uring")
      ->default_str("/tmp")
      ->type_name("DIR");
  sub->add_flag("--json", args->json, "Print a JSON object instead of a table");
  return Command{sub, [args] { return RunDoctor(*args); }};
}

}  // namespace folio::cli
