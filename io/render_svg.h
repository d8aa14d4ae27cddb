// Pictures of a schedule like the paper's Figures 3 and 6: one row per stage, F/B/W/BW blocks
// coloured by kind (a lighter and a darker shade per chunk when there are several) and labelled
// with the microbatch where the label fits, idle time visible, send/recv ticks and the optimizer
// step when the file is lowered, and the figures and a key of the kinds present in a legend.
// Blocks narrower than 3 px get no outline, so thin blocks keep their colour. In the SVG each block
// carries a <title>; the HTML page is an interactive viewer (io/viewer.js).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"
#include "core/simulate.h"
#include "core/trace.h"

namespace zbpp {

struct RenderOptions {
  int width = 0;        ///< drawing width in px; 0: wide enough for every block to be visible
  std::string title;    ///< first legend line; default: the method and shape
  std::string figures;  ///< second legend line; default: the timeline's makespan, span and span bubble rate
  const MeasuredRun* measured = nullptr;  ///< optional: drawn as a thinner row under each stage
  /// Optional, [stage]: what the stage runs, shown after its name ("stage 0: embedding..h2").
  std::vector<std::string> stage_labels;
};

/// A standalone SVG document. `timeline` must come from simulate_timeline(schedule, problem).
std::string render_svg(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                       const RenderOptions& options = {});
/// Whether render_svg draws an overview: without a width, where a stage holds more than 500 ops
/// (6 px each would not fit a screen), the picture is 1600 px wide and neighbouring blocks under
/// 5 px are drawn as one, in the colour of most of their time (send/recv ticks left out).
bool svg_overview(const Schedule& schedule, const RenderOptions& options);
/// A single self-contained HTML page: the schedule as data and a canvas viewer (io/viewer.js)
/// with wheel zoom at the cursor, drag to pan, stage labels and a time axis that stay in view,
/// microbatch numbers once blocks are wide enough, a hover card, and the view in the URL fragment
/// (#zoom=8&t=1200&stage=0&sel=3,57).
std::string render_html(const Schedule& schedule, const Problem& problem, const Timeline& timeline,
                        const RenderOptions& options = {});

}  // namespace zbpp
