// `folio fs bench`'s report: the table with ratios and target verdicts, the JSON, the plot.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "bench/plot.h"
#include "bench/report.h"
#include "fs/fs_bench.h"

namespace folio::cli {

namespace {

const char* const kTargets[] = {kTargetFolio, kTargetExt4, kTargetPll};

double Ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

const FsPhaseResult* Find(const FsBenchReport& r, const std::string& name) {
  for (const FsPhaseResult& p : r.phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string FormatRatio(double v) { return v > 0 ? fmt::format("{:.2f}x", v) : "-"; }

// The per-row target: what the issue asks of this phase, met or not.
std::string RowTarget(const FsPhaseResult& p) {
  const double folio = p.Median(kTargetFolio);
  const double pll = p.Median(kTargetPll);
  const double ext4 = p.Median(kTargetExt4);
  std::string s;
  const bool md_rate = p.name.starts_with("md-create") || p.name.starts_with("md-stat") ||
                       p.name.starts_with("md-unlink");
  if (md_rate && pll > 0) {
    s = Ratio(folio, pll) >= 1 ? ">=1x pll: met" : ">=1x pll: NOT met";
  } else if (p.name.starts_with("randread-4k-cached") && ext4 > 0) {
    s = Ratio(folio, ext4) >= 0.8 ? ">=0.8x ext4: met" : ">=0.8x ext4: NOT met";
  }
  if (pll > 0 && folio > 0 && Ratio(folio, pll) < 0.5) {
    s += std::string(s.empty() ? "" : "; ") + "below 0.5x pll";
  }
  return s;
}

}  // namespace

std::string FormatFsBenchValue(double v) {
  if (v <= 0) return "-";
  if (v < 1000) return fmt::format("{:.0f}", v);
  return bench::FormatIops(v);
}

double FsPhaseResult::Median(const std::string& target) const {
  auto it = runs.find(target);
  if (it == runs.end() || it->second.empty()) return 0;
  std::vector<double> v = it->second;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<FsTargetVerdict> JudgeTargets(const FsBenchReport& r) {
  std::vector<FsTargetVerdict> out;
  {
    FsTargetVerdict v{"create / stat / unlink at least passthrough_ll's rate", true, ""};
    for (const char* op : {"create", "stat", "unlink"}) {
      for (const char* t : {"1t", "4t"}) {
        const FsPhaseResult* p = Find(r, fmt::format("md-{}-{}", op, t));
        if (p == nullptr) continue;
        const double ratio = Ratio(p->Median(kTargetFolio), p->Median(kTargetPll));
        v.met = v.met && ratio >= 1;
        v.detail += fmt::format("{}{} {} {:.3f}x", v.detail.empty() ? "" : ", ", op, t, ratio);
      }
    }
    out.push_back(v);
  }
  {
    const FsPhaseResult* on = Find(r, "smallfiles-write");
    const FsPhaseResult* off = Find(r, "smallfiles-write-nopack");
    FsTargetVerdict v{"small files written with packing at least 2x without", false, ""};
    if (on != nullptr && off != nullptr) {
      const double a = on->Median(kTargetFolio), b = off->Median(kTargetFolio);
      v.met = Ratio(a, b) >= 2;
      v.detail = fmt::format("{:.0f} vs {:.0f} files/s: {:.2f}x", a, b, Ratio(a, b));
    }
    out.push_back(v);
  }
  {
    FsTargetVerdict v{"cached 4 KiB random reads at least 0.8x ext4", true, ""};
    for (const char* t : {"1t", "4t"}) {
      const FsPhaseResult* p = Find(r, fmt::format("randread-4k-cached-{}", t));
      if (p == nullptr) continue;
      const double ratio = Ratio(p->Median(kTargetFolio), p->Median(kTargetExt4));
      v.met = v.met && ratio >= 0.8;
      v.detail += fmt::format("{}{} {:.3f}x", v.detail.empty() ? "" : ", ", t, ratio);
    }
    out.push_back(v);
  }
  {
    FsTargetVerdict v{"no phase below 0.5x passthrough_ll", true, ""};
    for (const FsPhaseResult& p : r.phases) {
      const double pll = p.Median(kTargetPll);
      if (pll <= 0) continue;
      const double ratio = Ratio(p.Median(kTargetFolio), pll);
      if (ratio < 0.5) {
        v.met = false;
        v.detail += fmt::format("{}{} {:.2f}x", v.detail.empty() ? "below: " : ", ", p.name,
                                ratio);
      }
    }
    if (v.met) v.detail = "every phase at 0.5x or more";
    out.push_back(v);
  }
  return out;
}

std::string FormatFsBenchTable(const FsBenchReport& r, const FsBenchConfig& c) {
  std::string out;
  out += fmt::format("\nfolio fs bench: cache {}, {} s per I/O phase, {} metadata entries, {} "
                     "small files{}; load average at start {}\n",
                     FormatSize(c.cache_bytes), c.runtime_s, c.md_files, c.small_files,
                     c.repeat > 1 ? fmt::format(", medians of {} runs", c.repeat) : "",
                     r.load);
  const std::string hdr = fmt::format("{:<26} {:<8} {:>8} {:>8} {:>8} {:>10} {:>9}  {}", "phase",
                                      "unit", "folio", "ext4", "pll", "folio/ext4", "folio/pll",
                                      "target");
  out += hdr + "\n" + std::string(hdr.size() + 12, '-') + "\n";
  for (const FsPhaseResult& p : r.phases) {
    const double f = p.Median(kTargetFolio), e = p.Median(kTargetExt4),
                 l = p.Median(kTargetPll);
    out += fmt::format("{:<26} {:<8} {:>8} {:>8} {:>8} {:>10} {:>9}  {}\n", p.name, p.unit,
                       FormatFsBenchValue(f), FormatFsBenchValue(e), FormatFsBenchValue(l), FormatRatio(Ratio(f, e)),
                       FormatRatio(Ratio(f, l)), RowTarget(p));
    if (!p.objects.empty()) {
      std::string objs;
      for (const char* t : kTargets) {
        auto it = p.objects.find(t);
        if (it != p.objects.end()) {
          objs += fmt::format("{}{} {}", objs.empty() ? "" : ", ", t, it->second);
        }
      }
      out += fmt::format("{:<26} objects in the store: {}\n", "", objs);
    }
  }
  out += "\ntargets (measured, not asserted):\n";
  for (const FsTargetVerdict& v : JudgeTargets(r)) {
    out += fmt::format("  {:<56} {:<8} {}\n", v.name, v.met ? "met" : "NOT met", v.detail);
  }
  out += "\nfairness:\n";
  for (const std::string& f : r.fairness) out += "  - " + f + "\n";
  std::vector<std::string> notes;
  for (const FsPhaseResult& p : r.phases) {
    for (const std::string& n : p.notes) {
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    }
  }
  if (!notes.empty()) {
    out += "notes:\n";
    for (const std::string& n : notes) out += "  - " + n + "\n";
  }
  out += "The machine is shared: absolute numbers are noisy; compare the ratios of one run.\n";
  return out;
}

std::string FsBenchJson(const FsBenchReport& r, const FsBenchConfig& c) {
  nlohmann::ordered_json root;
  root["command"] = r.command;
  root["load_average"] = r.load;
  root["config"] = {{"cache_bytes", c.cache_bytes},
                    {"runtime_s", c.runtime_s},
                    {"md_files", c.md_files},
                    {"small_files", c.small_files},
                    {"repeat", c.repeat},
                    {"quick", c.quick},
                    {"store", c.store.empty() ? "dir: (in the temp directory)" : c.store}};
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const FsPhaseResult& p : r.phases) {
    nlohmann::ordered_json j;
    j["phase"] = p.name;
    j["group"] = p.group;
    j["unit"] = p.unit;
    j["threads"] = p.threads;
    nlohmann::ordered_json values, runs;
    for (const char* t : kTargets) {
      if (p.runs.count(t) == 0) continue;
      values[t] = p.Median(t);
      runs[t] = p.runs.at(t);
    }
    j["values"] = values;
    j["runs"] = runs;
    j["ratios"] = {{"folio/ext4", Ratio(p.Median(kTargetFolio), p.Median(kTargetExt4))},
                   {"folio/passthrough_ll", Ratio(p.Median(kTargetFolio), p.Median(kTargetPll))}};
    if (!p.objects.empty()) j["objects"] = p.objects;
    j["target"] = RowTarget(p);
    j["notes"] = p.notes;
    phases.push_back(j);
  }
  root["phases"] = phases;
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const FsTargetVerdict& v : JudgeTargets(r)) {
    targets.push_back({{"target", v.name}, {"met", v.met}, {"detail", v.detail}});
  }
  root["targets"] = targets;
  root["fairness"] = r.fairness;
  return root.dump(2) + "\n";
}

std::string FsBenchPlotSvg(const FsBenchReport& r) {
  bench::BarChart chart;
  chart.title = "folio fs bench";
  chart.subtitle = "throughput relative to ext4 (ext4 = 1; higher is better)";
  chart.y_label = "x ext4";
  chart.series = {kTargetFolio, kTargetExt4, kTargetPll};
  chart.ratios = true;
  for (const FsPhaseResult& p : r.phases) {
    const double ext4 = p.Median(kTargetExt4);
    if (ext4 <= 0) continue;
    chart.groups.push_back(p.name);
    std::vector<double> row;
    for (const char* t : kTargets) {
      const double v = p.Median(t);
      row.push_back(v > 0 ? v / ext4 : -1);
    }
    chart.values.push_back(row);
  }
  chart.footnote = "load average at start " + r.load + "; " + r.command;
  return bench::RenderBarChartSvg(chart);
}

}  // namespace folio::cli
