// The --plot charts of `folio bench` and `folio fs bench`: a hand-written SVG with two panels, (1) IOPS per job
// and engine as grouped bars with values on the bars, and (2) the page cache's resident
// bytes per folio size at the end of each folio run, as stacked bars.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "bench/report.h"

namespace folio::bench {

std::string RenderPlotSvg(const std::vector<RunResult>& runs);

// A chart of grouped bars with the same look (`folio fs bench --plot`): one group per label
// in `groups`, one bar per series (legend under the subtitle), values[group][series]; a
// negative value draws no bar. ratios: values are ratios (axis labels "1.5x").
struct BarChart {
  std::string title;
  std::string subtitle;
  std::string y_label;
  std::vector<std::string> series;
  std::vector<std::string> groups;
  std::vector<std::vector<double>> values;
  bool ratios = false;
  std::string footnote;
};
std::string RenderBarChartSvg(const BarChart& chart);

// A "nice" axis step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to max.
double NiceStep(double max, int ticks);

// Text with &, <, >, " escaped for SVG.
std::string XmlEscape(std::string_view text);

}  // namespace folio::bench
