// `folio fs bench`'s report: the table with ratios and target verdicts, the JSON, the plot.
#include <fmt/format.h>
#include <fmt/ranges.h>

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

// A target's median in a phase; 0 when the phase did not run or the target produced no figure.
double PhaseMedian(const FsBenchReport& r, const std::string& phase, const char* target) {
  for (const FsPhaseResult& p : r.phases) {
    if (p.name == phase) return p.Median(target);
  }
  return 0;
}

std::string FormatRatio(double v) { return v > 0 ? fmt::format("{:.2f}x", v) : "-"; }

// One figure: a ratio (0: not measured) that must be at least `min`.
FsVerdict Judge(double ratio, double min) {
  if (ratio <= 0) return FsVerdict::kNotMeasured;
  return ratio >= min ? FsVerdict::kMet : FsVerdict::kNotMet;
}

// The per-row target: what the issue asks of this phase, met, not met or not measured.
std::string RowTarget(const FsPhaseResult& p) {
  const double folio = p.Median(kTargetFolio);
  const double pll = p.Median(kTargetPll);
  std::string s;
  if (p.name.starts_with("md-create") || p.name.starts_with("md-stat") ||
      p.name.starts_with("md-unlink")) {
    s = std::string(">=1x pll: ") + FsVerdictName(Judge(Ratio(folio, pll), 1));
  } else if (p.name.starts_with("randread-4k-cached")) {
    s = std::string(">=0.8x ext4: ") +
        FsVerdictName(Judge(Ratio(folio, p.Median(kTargetExt4)), 0.8));
  }
  if (pll > 0 && folio > 0 && Ratio(folio, pll) < 0.5) {
    s += std::string(s.empty() ? "" : "; ") + "below 0.5x pll";
  }
  return s;
}

// A target's figures gathered one by one into its verdict (FsVerdict's rule).
struct Tally {
  int figures = 0;
  bool failed = false;
  std::vector<std::string> shown;    // the measured figures the detail lists
  std::vector<std::string> missing;  // the figures not measured

  // A figure `what`: a ratio (0: not measured) that must be at least `min`; `show` is how the
  // detail lists it when measured ("": not listed).
  void Add(const std::string& what, double ratio, double min, const std::string& show) {
    ++figures;
    const FsVerdict v = Judge(ratio, min);
    if (v == FsVerdict::kNotMeasured) {
      missing.push_back(what);
      return;
    }
    failed = failed || v == FsVerdict::kNotMet;
    if (!show.empty()) shown.push_back(show);
  }

  // The detail: `prefix` and the shown figures, then what was not measured, named, or counted
  // in `noun` when there are many.
  FsTargetVerdict Verdict(std::string name, const std::string& prefix = "",
                          const char* noun = "figures") const {
    FsTargetVerdict v{std::move(name),
                      failed            ? FsVerdict::kNotMet
                      : missing.empty() ? FsVerdict::kMet
                                        : FsVerdict::kNotMeasured,
                      ""};
    if (!shown.empty()) v.detail = prefix + fmt::format("{}", fmt::join(shown, ", "));
    if (!missing.empty()) {
      v.detail += (v.detail.empty() ? "" : "; ") + std::string("not measured: ") +
                  (missing.size() <= 6 ? fmt::format("{}", fmt::join(missing, ", "))
                                       : fmt::format("{} of {} {}", missing.size(), figures,
                                                     noun));
    }
    return v;
  }
};

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

const char* FsVerdictName(FsVerdict v) {
  switch (v) {
    case FsVerdict::kMet: return "met";
    case FsVerdict::kNotMet: return "NOT met";
    case FsVerdict::kNotMeasured: return "not measured";
  }
  return "?";
}

std::vector<FsTargetVerdict> JudgeTargets(const FsBenchReport& r) {
  std::vector<FsTargetVerdict> out;
  {
    Tally t;
    for (const char* op : {"create", "stat", "unlink"}) {
      for (const char* th : {"1t", "4t"}) {
        const std::string phase = fmt::format("md-{}-{}", op, th);
        const std::string what = fmt::format("{} {}", op, th);
        const double ratio =
            Ratio(PhaseMedian(r, phase, kTargetFolio), PhaseMedian(r, phase, kTargetPll));
        t.Add(what, ratio, 1, fmt::format("{} {:.3f}x", what, ratio));
      }
    }
    out.push_back(t.Verdict("create / stat / unlink at least passthrough_ll's rate"));
  }
  {
    Tally t;
    // Both: the writes alone (the store's puts still to come, in the background) and the
    // writes with the commit of every file to the store (what packing saves).
    for (const std::string kind : {"write", "committed"}) {
      const std::string phase = "smallfiles-" + kind;
      const double a = PhaseMedian(r, phase, kTargetFolio),
                   b = PhaseMedian(r, phase + "-nopack", kTargetFolio);
      t.Add(fmt::format("{} vs {}-nopack", phase, phase), Ratio(a, b), 2,
            fmt::format("{} {:.0f} vs {:.0f} files/s: {:.2f}x", kind, a, b, Ratio(a, b)));
    }
    out.push_back(t.Verdict("small files written with packing at least 2x without"));
  }
  {
    Tally t;
    std::vector<std::string> like;  // the like-for-like ratios, shown beside the verdict
    for (const char* th : {"1t", "4t"}) {
      const std::string phase = fmt::format("randread-4k-cached-{}", th);
      const double ratio =
          Ratio(PhaseMedian(r, phase, kTargetFolio), PhaseMedian(r, phase, kTargetExt4));
      t.Add(th, ratio, 0.8, fmt::format("{} {:.3f}x", th, ratio));
      const double small = Ratio(PhaseMedian(r, phase, kTargetFolio),
                                 PhaseMedian(r, phase, kTargetExt4SmallFolios));
      if (small > 0) like.push_back(fmt::format("{} {:.3f}x", th, small));
    }
    FsTargetVerdict v = t.Verdict("cached 4 KiB random reads at least 0.8x ext4");
    if (!like.empty()) {
      v.detail += fmt::format("; against ext4 in 4 KiB folios (as the kernel caches FUSE files): "
                              "{}", fmt::join(like, ", "));
    }
    out.push_back(v);
  }
  {
    // Every phase of a full run that has a passthrough_ll figure, and any other that has one.
    std::vector<std::string> phases = FsBenchPllPhases();
    for (const FsPhaseResult& p : r.phases) {
      if (p.Median(kTargetPll) > 0 && std::ranges::find(phases, p.name) == phases.end()) {
        phases.push_back(p.name);
      }
    }
    Tally t;
    for (const std::string& phase : phases) {
      const double ratio =
          Ratio(PhaseMedian(r, phase, kTargetFolio), PhaseMedian(r, phase, kTargetPll));
      t.Add(phase, ratio, 0.5, ratio < 0.5 ? fmt::format("{} {:.2f}x", phase, ratio) : "");
    }
    FsTargetVerdict v = t.Verdict("no phase below 0.5x passthrough_ll", "below: ", "phases");
    if (v.verdict == FsVerdict::kMet) v.detail = "every phase at 0.5x or more";
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
    if (const double small = p.Median(kTargetExt4SmallFolios); small > 0) {
      out += fmt::format("{:<26} ext4 with its file in 4 KiB folios, as the kernel caches a FUSE "
                         "file: {}; folio/that {}, pll/that {}\n",
                         "", FormatFsBenchValue(small), FormatRatio(Ratio(f, small)),
                         FormatRatio(Ratio(l, small)));
    }
    if (!p.kernel_folios.empty()) {
      std::string sizes;
      for (const auto& [t, census] : p.kernel_folios) {
        sizes += fmt::format("{}{} {}", sizes.empty() ? "" : "; ", t, census.Shares());
      }
      out += fmt::format("{:<26} kernel page cache by folio size: {}\n", "", sizes);
    }
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
    out += fmt::format("  {:<56} {:<12} {}\n", v.name, FsVerdictName(v.verdict), v.detail);
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
    for (const char* t : {kTargetFolio, kTargetExt4, kTargetPll, kTargetExt4SmallFolios}) {
      if (p.runs.count(t) == 0) continue;
      values[t] = p.Median(t);
      runs[t] = p.runs.at(t);
    }
    j["values"] = values;
    j["runs"] = runs;
    j["ratios"] = {{"folio/ext4", Ratio(p.Median(kTargetFolio), p.Median(kTargetExt4))},
                   {"folio/passthrough_ll", Ratio(p.Median(kTargetFolio), p.Median(kTargetPll))}};
    if (p.runs.count(kTargetExt4SmallFolios) != 0) {
      j["ratios"]["folio/ext4-4k-folios"] =
          Ratio(p.Median(kTargetFolio), p.Median(kTargetExt4SmallFolios));
    }
    if (!p.kernel_folios.empty()) {
      nlohmann::ordered_json k;
      for (const auto& [t, census] : p.kernel_folios) k[t] = bench::KernelFoliosJson(census);
      j["kernel_folios"] = k;
    }
    if (!p.objects.empty()) j["objects"] = p.objects;
    j["target"] = RowTarget(p);
    j["notes"] = p.notes;
    phases.push_back(j);
  }
  root["phases"] = phases;
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const FsTargetVerdict& v : JudgeTargets(r)) {
    targets.push_back({{"target", v.name},
                       {"met", v.verdict == FsVerdict::kMet},
                       {"verdict", FsVerdictName(v.verdict)},
                       {"detail", v.detail}});
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
