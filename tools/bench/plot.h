// The --plot chart of `folio bench`: a hand-written SVG with two panels, (1) IOPS per job
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

// A "nice" axis step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to max.
double NiceStep(double max, int ticks);

// Text with &, <, >, " escaped for SVG.
std::string XmlEscape(std::string_view text);

}  // namespace folio::bench
