// Pictures of a schedule like the paper's Figures 3 and 6: one row per stage, F/B/W/BW blocks
// coloured by kind and labelled with the microbatch where the label fits, idle time visible,
// send/recv ticks and the optimizer step when the file is lowered, and the figures in a legend.
// Each block carries a <title>, so browsers show its details on hover.
#pragma once

#include <string>

#include "planner/ir.h"
#include "planner/problem.h"
#include "planner/simulate.h"

namespace zbpp {

struct RenderOptions {
  int width = 0;        ///< drawing width in px; 0: wide enough for every block to be visible
  std::string title;    ///< first legend line; default: the method and shape
};

/// A standalone SVG document. `timeline` must come from simulate_timeline(schedule, problem).
std::string render_svg(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                       const RenderOptions& options = {});
/// A single self-contained HTML page around the SVG, with zoom buttons.
std::string render_html(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                        const RenderOptions& options = {});

}  // namespace zbpp
