// SVG and HTML pictures of a schedule (see render_svg.h).
#include "planner/render_svg.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "planner/lower.h"

namespace zbpp {

namespace {

const char* fill_of(OpType t) {
  switch (t) {
    case OpType::F: return "#6fa8dc";   // blue
    case OpType::B: return "#93c47d";   // green
    case OpType::W: return "#ffd966";   // yellow
    case OpType::BW: return "#b4a7d6";  // purple: fused B and W
    default: return "#999999";
  }
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string render_svg(const Schedule& s, const Problem& pr, const Timeline& t, const RenderOptions& options) {
  Schedule compute = compute_projection(s);
  size_t most_ops = 1;
  for (const auto& ops : compute.stages) most_ops = std::max(most_ops, ops.size());
  Ticks first = 0, last = 1;
  bool any = false;
  for (const auto& ops : t.ops)
    for (const OpTiming& o : ops) {
      first = any ? std::min(first, o.start) : o.start;
      last = any ? std::max(last, o.end) : o.end;
      any = true;
    }
  // Wide enough that the average block is at least 6 px, so every block stays visible.
  const int plot_w = options.width > 0 ? options.width : static_cast<int>(std::clamp<size_t>(most_ops * 6, 900, 30000));
  const MeasuredRun* measured = options.measured;
  double measured_end = 0;
  if (measured)
    for (const auto& ops : measured->ops)
      for (const auto& o : ops) measured_end = std::max(measured_end, o.second);
  if (measured && measured_end * kQuantaPerUnit > static_cast<double>(last)) last = static_cast<Ticks>(measured_end * kQuantaPerUnit);
  const double total = static_cast<double>(std::max<Ticks>(1, last - first));
  const int row_h = s.p <= 16 ? 22 : 14, gap = 4, left = 70, right = 150, top = 76;
  const int measured_h = measured ? row_h / 2 : 0;
  const int pitch = row_h + measured_h + gap;
  const int height = top + s.p * pitch + 30;
  const int width = left + plot_w + right;
  auto x_of = [&](Ticks v) { return left + (static_cast<double>(v - first) / total) * plot_w; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n";
  svg << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  // Legend: what, the figures, and the colour key.
  std::string title = options.title.empty() ? s.method + " (p=" + std::to_string(s.p) + ", m=" + std::to_string(s.m) +
                                                  ", chunks=" + std::to_string(s.chunks) + ", " + s.level + ")"
                                            : options.title;
  char figures[200];
  std::snprintf(figures, sizeof figures, "makespan %s   span %s   span bubble rate %.4f",
                format_quanta(t.makespan).c_str(), format_quanta(t.span).c_str(), t.span_bubble_rate);
  svg << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  svg << "<text x=\"" << left << "\" y=\"40\" font-size=\"12\">" << (options.figures.empty() ? std::string(figures) : escape(options.figures))
      << (measured ? "   (thin rows: the measured run)" : "") << "</text>\n";
  int key_x = left;
  for (OpType k : {OpType::F, OpType::B, OpType::W, OpType::BW}) {
    svg << "<rect x=\"" << key_x << "\" y=\"50\" width=\"14\" height=\"12\" fill=\"" << fill_of(k) << "\"/>"
        << "<text x=\"" << key_x + 18 << "\" y=\"60\" font-size=\"11\">"
        << (k == OpType::F ? "F forward" : k == OpType::B ? "B input grad" : k == OpType::W ? "W weight grad" : "BW fused")
        << "</text>\n";
    key_x += 120;
  }
  if (s.level == kLevelLowered) {
    svg << "<text x=\"" << key_x << "\" y=\"60\" font-size=\"11\">red tick send, grey tick recv, black bar optimizer step"
        << (s.optimizer == kOptimizerPostValidation ? ", purple bar validation" : "") << "</text>\n";
    key_x += 460;
  }

  svg << "<text x=\"" << left + plot_w + 8 << "\" y=\"" << top - 6 << "\" font-size=\"11\">peak memory</text>\n";

  for (int st = 0; st < s.p; ++st) {
    int y = top + st * pitch;
    svg << "<text x=\"" << left - 8 << "\" y=\"" << y + row_h - 6 << "\" font-size=\"11\" text-anchor=\"end\">stage " << st
        << "</text>\n";
    // The row band: what shows through between blocks is idle time.
    svg << "<rect class=\"idle\" x=\"" << left << "\" y=\"" << y << "\" width=\"" << plot_w << "\" height=\"" << row_h
        << "\" fill=\"#eeeeee\"/>\n";
    const auto& ops = compute.stages[st];
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const OpTiming& o = t.ops[st][i];
      double x0 = x_of(o.start), x1 = x_of(o.end);
      svg << "<rect class=\"op op-" << op_type_name(op.type) << "\" x=\"" << fmt(x0) << "\" y=\"" << y << "\" width=\""
          << fmt(std::max(0.5, x1 - x0)) << "\" height=\"" << row_h << "\" fill=\"" << fill_of(op.type)
          << "\" stroke=\"#ffffff\" stroke-width=\"1\"><title>" << op_short(op) << " on stage " << st << ": "
          << format_quanta(o.start) << " to " << format_quanta(o.end) << "</title></rect>\n";
      std::string label = std::to_string(op.mb);
      // Only where it fits (about 7 px a digit at this size), so labels never overlap.
      if (x1 - x0 >= 7.0 * label.size() + 4 && row_h >= 14)
        svg << "<text x=\"" << fmt((x0 + x1) / 2) << "\" y=\"" << y + row_h - 6
            << "\" font-size=\"11\" text-anchor=\"middle\" pointer-events=\"none\">" << label << "</text>\n";
    }
    if (s.level == kLevelLowered) {
      // Instructions take no time: a send sits at the end of the op before it, a receive at the
      // start of the op after it; the optimizer step at the end of the stage.
      const auto& lowered = s.stages[st];
      size_t compute_index = 0;
      for (size_t i = 0; i < lowered.size(); ++i) {
        const Op& op = lowered[i];
        if (is_compute(op.type)) {
          ++compute_index;
          continue;
        }
        Ticks at = 0;
        if (is_recv(op.type))
          at = compute_index < ops.size() ? t.ops[st][compute_index].start : t.ops[st].back().end;
        else
          at = compute_index > 0 ? t.ops[st][compute_index - 1].end : first;
        double x = x_of(at);
        bool bar = op.type == OpType::OPT_STEP || op.type == OpType::VALIDATE;
        const char* colour = op.type == OpType::OPT_STEP   ? "#000000"
                             : op.type == OpType::VALIDATE ? "#7b3294"
                             : is_send(op.type)            ? "#cc0000"
                                                           : "#777777";
        svg << "<rect class=\"instr\" x=\"" << fmt(x) << "\" y=\"" << y - 2 << "\" width=\"" << (bar ? 3 : 1)
            << "\" height=\"" << (bar ? row_h + 4 : 5) << "\" fill=\"" << colour << "\"><title>" << op_short(op)
            << (op.peer >= 0 ? (is_send(op.type) ? " to " : " from ") + std::to_string(op.peer) : "")
            << "</title></rect>\n";
      }
    }
    if (measured && st < static_cast<int>(measured->ops.size())) {
      // The measured run: same colours, a thinner band right under the plan.
      int my = y + row_h + 1;
      svg << "<rect class=\"idle\" x=\"" << left << "\" y=\"" << my << "\" width=\"" << plot_w << "\" height=\""
          << measured_h - 1 << "\" fill=\"#f6f6f6\"/>\n";
      const auto& mops = measured->ops[st];
      for (size_t i = 0; i < mops.size() && i < ops.size(); ++i) {
        double x0 = left + (mops[i].first * kQuantaPerUnit - static_cast<double>(first)) / total * plot_w;
        double x1 = left + (mops[i].second * kQuantaPerUnit - static_cast<double>(first)) / total * plot_w;
        svg << "<rect class=\"measured op-" << op_type_name(ops[i].type) << "\" x=\"" << fmt(x0) << "\" y=\"" << my
            << "\" width=\"" << fmt(std::max(0.5, x1 - x0)) << "\" height=\"" << measured_h - 1 << "\" fill=\""
            << fill_of(ops[i].type) << "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>" << op_short(ops[i])
            << " on stage " << st << ", measured: " << fmt(mops[i].first) << " to " << fmt(mops[i].second)
            << "</title></rect>\n";
      }
    }
    std::string peak = format_quanta(t.peak_memory[st]);
    if (pr.mem_limit) peak += " / " + format_quanta(*pr.mem_limit);
    svg << "<text x=\"" << left + plot_w + 8 << "\" y=\"" << y + row_h - 6 << "\" font-size=\"11\">" << peak << "</text>\n";
  }
  svg << "<text x=\"" << left << "\" y=\"" << height - 10 << "\" font-size=\"11\">time " << format_quanta(first) << " to "
      << format_quanta(last) << " (grey: idle)</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::string render_html(const Schedule& s, const Problem& pr, const Timeline& t, const RenderOptions& options) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape(s.method) << " schedule</title>\n"
       << "<style>body{font-family:sans-serif;margin:12px} #wrap{overflow:auto;border:1px solid #ccc}"
       << " #wrap svg{transform-origin:0 0} button{margin-right:6px}</style></head><body>\n"
       << "<div><button onclick=\"zoom(1.5)\">zoom in</button><button onclick=\"zoom(1/1.5)\">zoom out</button>"
       << "<button onclick=\"fit()\">fit width</button> hover a block for its times</div>\n"
       << "<div id=\"wrap\">\n" << render_svg(s, pr, t, options) << "</div>\n"
       << "<script>\nconst svg=document.querySelector('#wrap svg');const w0=svg.width.baseVal.value,h0=svg.height.baseVal.value;"
       << "let k=1;function apply(){svg.setAttribute('width',w0*k);svg.setAttribute('height',h0*k);}"
       << "function zoom(f){k*=f;apply();}function fit(){k=document.getElementById('wrap').clientWidth/w0;apply();}\n"
       << "</script>\n</body></html>\n";
  return html.str();
}

}  // namespace zbpp
