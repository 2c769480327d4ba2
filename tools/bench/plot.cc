#include "bench/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/units.h"

namespace folio::bench {

namespace {

constexpr int kBarW = 34;
constexpr int kGroupGap = 36;
constexpr int kLeft = 90;
constexpr int kPanelH = 260;

// index: the engine's rank among the fixed-size engines of the run.
const char* EngineColor(const EngineSpec& e, int index) {
  switch (e.kind) {
    case EngineSpec::Kind::kKernel: return "#8c8c8c";
    case EngineSpec::Kind::kKernel4k: return "#b4b4b4";
    case EngineSpec::Kind::kLimit: return "#d4d4d4";
    case EngineSpec::Kind::kFio: return "#5f5f5f";
    case EngineSpec::Kind::kFolio4k: return "#4e79a7";
    case EngineSpec::Kind::kFolioDynamic: return "#59a14f";
    case EngineSpec::Kind::kFolioFixed: break;
  }
  static const char* kFixed[] = {"#f28e2b", "#b07aa1", "#e15759", "#edc948"};
  return kFixed[index % 4];
}

const char* OrderColor(int order) {
  static const char* kColors[] = {"#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f",
                                  "#8cd17d", "#b6992d", "#e15759", "#ff9d9a", "#79706e"};
  return kColors[order % 10];
}

std::string Fmt(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a);
  return buf;
}

std::string BytesLabel(double bytes) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return Fmt(bytes < 10 && bytes != std::floor(bytes) ? "%.1f" : "%.0f", bytes) + units[u];
}

struct Svg {
  std::string body;
  void Text(double x, double y, std::string_view s, const char* extra = "") {
    body += Fmt("<text x=\"%.1f\"", x) + Fmt(" y=\"%.1f\" ", y) + extra + ">" + XmlEscape(s) +
            "</text>\n";
  }
  void Rect(double x, double y, double w, double h, const char* fill) {
    body += Fmt("<rect x=\"%.1f\"", x) + Fmt(" y=\"%.1f\"", y) + Fmt(" width=\"%.1f\"", w) +
            Fmt(" height=\"%.1f\"", h) + " fill=\"" + fill + "\"/>\n";
  }
  void Line(double x1, double y1, double x2, double y2, const char* stroke) {
    body += Fmt("<line x1=\"%.1f\"", x1) + Fmt(" y1=\"%.1f\"", y1) + Fmt(" x2=\"%.1f\"", x2) +
            Fmt(" y2=\"%.1f\"", y2) + " stroke=\"" + stroke + "\"/>\n";
  }
};

int FixedRank(const std::vector<EngineSpec>& engines, size_t e) {
  int rank = 0;
  for (size_t i = 0; i < e; ++i) rank += engines[i].kind == EngineSpec::Kind::kFolioFixed;
  return rank;
}

// A bar's tag in the resident panel: "4k", "64k" (fixed), "dyn".
std::string ShortTag(const EngineSpec& e) {
  switch (e.kind) {
    case EngineSpec::Kind::kFolio4k: return "4k";
    case EngineSpec::Kind::kFolioDynamic: return "dyn";
    case EngineSpec::Kind::kFolioFixed: {
      std::string s = e.Name().substr(12);  // after "folio:fixed:"
      return s;
    }
    case EngineSpec::Kind::kLimit: return "limit";
    case EngineSpec::Kind::kFio: return "fio";
    case EngineSpec::Kind::kKernel4k: return "k4k";
    case EngineSpec::Kind::kKernel: break;
  }
  return "kernel";
}

// Jobs in first-seen order.
std::vector<std::string> JobNames(const std::vector<RunResult>& runs) {
  std::vector<std::string> names;
  for (const RunResult& r : runs) {
    if (std::find(names.begin(), names.end(), r.job.name) == names.end()) {
      names.push_back(r.job.name);
    }
  }
  return names;
}

// Y axis with gridlines from 0 to top (in value units) over [y0 - h, y0]; `label` formats a
// tick value.
double DrawYAxis(Svg* svg, double max_value, double y0, double h, double width, bool bytes,
                 std::string (*label)(double) = nullptr) {
  double unit = 1;  // bytes: steps of 1, 2 or 5 K / M / G, so labels stay round
  while (bytes && max_value / unit >= 1024 && unit < 1099511627776.0) unit *= 1024;
  const double step = NiceStep(max_value / unit, 5) * unit;
  const double top = step * std::ceil(max_value / step);
  for (double v = 0; v <= top + step / 2; v += step) {
    const double y = y0 - h * (v / top);
    svg->Line(kLeft, y, width - 20, y, v == 0 ? "#333" : "#e3e3e3");
    svg->Text(kLeft - 8, y + 4, label != nullptr ? label(v) : bytes ? BytesLabel(v) : FormatIops(v),
              "text-anchor=\"end\" font-size=\"11\"");
  }
  return top;
}

std::string RatioLabel(double v) { return Fmt(v < 10 ? "%.2gx" : "%.0fx", v); }

// A panel of grouped bars: values[group][series] (< 0: no bar), a legend row under the title.
void DrawBarPanel(Svg* svg, const std::string& title, const std::string& y_label,
                  const std::vector<std::string>& series, const std::vector<const char*>& colors,
                  const std::vector<std::string>& groups,
                  const std::vector<std::vector<double>>& values, bool ratios, double y_top,
                  double width) {
  const double y0 = y_top + kPanelH;
  svg->Text(kLeft, y_top - 38, title, "font-size=\"15\" font-weight=\"bold\"");
  double max_value = ratios ? 1 : 1e-9;
  for (const std::vector<double>& g : values) {
    for (double v : g) max_value = std::max(max_value, v);
  }
  const double top = DrawYAxis(svg, max_value, y0, kPanelH, width, false,
                               ratios ? &RatioLabel : nullptr);
  svg->Text(22, y_top + kPanelH / 2.0, y_label,
            Fmt("font-size=\"12\" transform=\"rotate(-90 22 %.1f)\"", y_top + kPanelH / 2.0)
                .c_str());
  const int group_w = static_cast<int>(series.size()) * kBarW + kGroupGap;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double gx = kLeft + 20 + static_cast<double>(g * group_w);
    for (size_t e = 0; e < series.size() && e < values[g].size(); ++e) {
      const double v = values[g][e];
      if (v < 0) continue;
      const double h = kPanelH * v / top;
      const double x = gx + static_cast<double>(e * kBarW);
      svg->Rect(x + 2, y0 - h, kBarW - 4, h, colors[e % colors.size()]);
      svg->Text(x + kBarW / 2.0, y0 - h - 4, ratios ? Fmt("%.2f", v) : FormatIops(v),
                "text-anchor=\"middle\" font-size=\"10\"");
    }
    svg->Text(gx + (group_w - kGroupGap) / 2.0, y0 + 18, groups[g],
              "text-anchor=\"middle\" font-size=\"11\"");
  }
  double lx = kLeft;
  for (size_t e = 0; e < series.size(); ++e) {
    svg->Rect(lx, y_top - 26, 12, 12, colors[e % colors.size()]);
    svg->Text(lx + 16, y_top - 16, series[e], "font-size=\"12\"");
    lx += 30 + 7.0 * static_cast<double>(series[e].size());
  }
}

void DrawIopsPanel(Svg* svg, const std::vector<RunResult>& runs,
                   const std::vector<std::string>& jobs, const std::vector<EngineSpec>& engines,
                   double y_top, double width) {
  std::vector<std::string> names;
  std::vector<const char*> colors;
  for (size_t e = 0; e < engines.size(); ++e) {
    names.push_back(engines[e].Name());
    colors.push_back(EngineColor(engines[e], FixedRank(engines, e)));
  }
  std::vector<std::vector<double>> values(jobs.size(), std::vector<double>(engines.size(), -1));
  for (size_t g = 0; g < jobs.size(); ++g) {
    for (size_t e = 0; e < engines.size(); ++e) {
      for (const RunResult& r : runs) {
        if (r.job.name == jobs[g] && r.engine == engines[e]) values[g][e] = r.iops();
      }
    }
  }
  DrawBarPanel(svg, "IOPS per job and engine (higher is better)", "IOPS", names, colors, jobs,
               values, /*ratios=*/false, y_top, width);
}

void DrawResidentPanel(Svg* svg, const std::vector<RunResult>& runs,
                       const std::vector<std::string>& jobs,
                       const std::vector<EngineSpec>& engines, double y_top, double width) {
  const double y0 = y_top + kPanelH;
  svg->Text(kLeft, y_top - 38, "Page cache resident bytes per folio size at the end of each "
            "folio run", "font-size=\"15\" font-weight=\"bold\"");
  double max_bytes = 0;
  bool orders_used[kNumOrders] = {};
  for (const RunResult& r : runs) {
    if (!r.has_folio || !r.folio.cache_used) continue;
    double total = 0;
    for (int o = 0; o < kNumOrders; ++o) {
      total += static_cast<double>(r.folio.cache.orders[o].resident_bytes);
      if (r.folio.cache.orders[o].resident_bytes != 0) orders_used[o] = true;
    }
    max_bytes = std::max(max_bytes, total);
  }
  if (max_bytes == 0) {
    svg->Text(kLeft + 20, y_top + kPanelH / 2.0, "no folio page-cache runs with resident data",
              "font-size=\"13\" fill=\"#666\"");
    return;
  }
  const double top = DrawYAxis(svg, max_bytes, y0, kPanelH, width, true);
  svg->Text(22, y_top + kPanelH / 2.0, "bytes",
            Fmt("font-size=\"12\" transform=\"rotate(-90 22 %.1f)\"", y_top + kPanelH / 2.0)
                .c_str());
  const int group_w = static_cast<int>(engines.size()) * kBarW + kGroupGap;
  for (size_t g = 0; g < jobs.size(); ++g) {
    const double gx = kLeft + 20 + static_cast<double>(g * group_w);
    for (size_t e = 0; e < engines.size(); ++e) {
      for (const RunResult& r : runs) {
        if (r.job.name != jobs[g] || !(r.engine == engines[e]) || !r.has_folio ||
            !r.folio.cache_used) {
          continue;
        }
        const double x = gx + static_cast<double>(e * kBarW);
        double y = y0;
        for (int o = 0; o < kNumOrders; ++o) {
          const double h = kPanelH * static_cast<double>(r.folio.cache.orders[o].resident_bytes) / top;
          if (h <= 0) continue;
          svg->Rect(x + 2, y - h, kBarW - 4, h, OrderColor(o));
          y -= h;
        }
        svg->Text(x + kBarW / 2.0, y - 4, BytesLabel(static_cast<double>(r.folio.cache.resident_bytes)),
                  "text-anchor=\"middle\" font-size=\"10\"");
        // Which engine the bar is: a short tag under it.
        svg->Text(x + kBarW / 2.0, y0 + 13, ShortTag(r.engine), "text-anchor=\"middle\" "
                  "font-size=\"10\"");
      }
    }
    svg->Text(gx + (group_w - kGroupGap) / 2.0, y0 + 28, jobs[g],
              "text-anchor=\"middle\" font-size=\"12\"");
  }
  svg->Text(kLeft, y_top - 16, "folio size:", "font-size=\"12\"");
  double lx = kLeft + 70;
  for (int o = 0; o < kNumOrders; ++o) {
    if (!orders_used[o]) continue;
    svg->Rect(lx, y_top - 26, 12, 12, OrderColor(o));
    svg->Text(lx + 16, y_top - 16, FormatSize(OrderBytes(o)), "font-size=\"12\"");
    lx += 56;
  }
  std::string key;
  for (const EngineSpec& e : engines) {
    if (!e.is_folio()) continue;
    key += (key.empty() ? "bars: " : ", ") + ShortTag(e) + " = " + e.Name();
  }
  svg->Text(kLeft, y0 + 48, key, "font-size=\"11\" fill=\"#555\"");
}

}  // namespace

double NiceStep(double max, int ticks) {
  if (max <= 0 || ticks <= 0) return 1;
  const double raw = max / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double nice = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  return nice * mag;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

static std::string SvgDocument(double width, double height, const std::string& body) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += Fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\"", width) +
         Fmt(" height=\"%.0f\"", height) + Fmt(" viewBox=\"0 0 %.0f", width) +
         Fmt(" %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n", height);
  out += body;
  out += "</svg>\n";
  return out;
}

std::string RenderBarChartSvg(const BarChart& chart) {
  static const std::vector<const char*> kColors = {"#59a14f", "#8c8c8c", "#4e79a7", "#f28e2b",
                                                   "#b07aa1", "#e15759"};
  const int group_w = static_cast<int>(chart.series.size()) * kBarW + kGroupGap;
  const double width =
      std::max(760.0, kLeft + 40.0 + static_cast<double>(chart.groups.size() * group_w));
  const double panel_top = 95;
  const double height = panel_top + kPanelH + 70;
  Svg svg;
  svg.Rect(0, 0, width, height, "white");
  svg.Text(kLeft, 30, chart.title, "font-size=\"18\" font-weight=\"bold\"");
  DrawBarPanel(&svg, chart.subtitle, chart.y_label, chart.series, kColors, chart.groups,
               chart.values, chart.ratios, panel_top, width);
  svg.Text(kLeft, panel_top + kPanelH + 50, chart.footnote, "font-size=\"11\" fill=\"#555\"");
  return SvgDocument(width, height, svg.body);
}

std::string RenderPlotSvg(const std::vector<RunResult>& runs) {
  std::vector<std::string> jobs = JobNames(runs);
  std::vector<EngineSpec> engines;
  for (const RunResult& r : runs) {
    if (std::find(engines.begin(), engines.end(), r.engine) == engines.end()) {
      engines.push_back(r.engine);
    }
  }
  const int group_w = static_cast<int>(engines.size()) * kBarW + kGroupGap;
  const double width = std::max(760.0, kLeft + 40.0 + static_cast<double>(jobs.size() * group_w));
  const double panel1_top = 95;
  const double panel2_top = panel1_top + kPanelH + 125;
  const double height = panel2_top + kPanelH + 64;
  Svg svg;
  svg.Rect(0, 0, width, height, "white");
  svg.Text(kLeft, 30, "folio bench", "font-size=\"18\" font-weight=\"bold\"");
  DrawIopsPanel(&svg, runs, jobs, engines, panel1_top, width);
  DrawResidentPanel(&svg, runs, jobs, engines, panel2_top, width);
  return SvgDocument(width, height, svg.body);
}

}  // namespace folio::bench
