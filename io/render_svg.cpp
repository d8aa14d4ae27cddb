// SVG and HTML pictures of a schedule (see render_svg.h).
#include "io/render_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/deps.h"
#include "core/lowered.h"
#include "io/viewer_assets.h"

namespace zbpp {

namespace {

constexpr OpType kKinds[] = {OpType::F, OpType::B, OpType::W, OpType::BW};
// A block narrower than this gets no white outline: at 1-2 px the outline would cover most of it
// and wash its colour out (the viewer, io/viewer.js, keeps the same rule).
constexpr double kOutlineMinPx = 3;

const char* kind_label(OpType t) {
  switch (t) {
    case OpType::F: return "F forward";
    case OpType::B: return "B input grad";
    case OpType::W: return "W weight grad";
    default: return "BW fused";
  }
}

// Per kind, the colour of chunk 0 (the paper's Figure 3 palette) and of the last chunk, a darker
// shade of the same hue; chunks between are mixed, so a V schedule's two chunks differ at a glance.
struct Rgb {
  int r, g, b;
};
constexpr Rgb kLight[] = {{0x6f, 0xa8, 0xdc}, {0x93, 0xc4, 0x7d}, {0xff, 0xd9, 0x66}, {0xb4, 0xa7, 0xd6}};
constexpr Rgb kDark[] = {{0x2f, 0x6d, 0xb0}, {0x55, 0x93, 0x3c}, {0xd6, 0xa2, 0x1e}, {0x7e, 0x6b, 0xb8}};

std::string fill_of(OpType t, int chunk, int chunks) {
  int k = compute_kind(t);
  double f = chunks > 1 ? static_cast<double>(std::clamp(chunk, 0, chunks - 1)) / (chunks - 1) : 0.0;
  auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(kLight[k].r, kDark[k].r), mix(kLight[k].g, kDark[k].g),
                mix(kLight[k].b, kDark[k].b));
  return buf;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// XML text: control characters and bytes that are not UTF-8 would make the document ill-formed, so
// they are shown as escapes first (shown_text; callers pass text already cut to length).
std::string escape(const std::string& text) {
  const std::string s = shown_text(text, text.size());
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A lowered schedule's instruction placed in time: they take none, so a send sits at the end of
// the op before it, a receive at the start of the op after it, the optimizer at the stage's end.
struct Instruction {
  OpType type;
  Ticks at;
  int peer;
  bool bar() const { return type == OpType::OPT_STEP || type == OpType::VALIDATE; }
  const char* colour() const {
    return type == OpType::OPT_STEP ? "#000000" : type == OpType::VALIDATE ? "#7b3294" : is_send(type) ? "#cc0000" : "#777777";
  }
  std::string title() const {
    Op op;
    op.type = type;
    return op_short(op) + (peer >= 0 ? (is_send(type) ? " to " : " from ") + std::to_string(peer) : "");
  }
};

// What both pictures draw, worked out once: the compute ops and their times, the instructions,
// the time range, the kinds present and the legend's words.
struct Drawing {
  Schedule compute;
  std::vector<std::vector<Instruction>> instructions;  ///< [stage]; empty unless lowered
  Ticks first = 0, last = 1;
  std::vector<OpType> kinds;  ///< compute kinds that occur, in legend order
  std::string title, figures, instruction_key;
  std::vector<std::string> peaks;  ///< [stage] "peak / limit"
  std::vector<std::string> labels;  ///< [stage] "stage 3", or "stage 3: h8..head" with its layers
  int left = 70;                    ///< px left of the plot: the longest label fits
};

Drawing drawing_of(const Schedule& s, const Problem& pr, const Timeline& t, const RenderOptions& options) {
  Drawing d;
  d.compute = compute_projection(s);
  bool any = false;
  for (const auto& ops : t.ops)
    for (const OpTiming& o : ops) {
      d.first = any ? std::min(d.first, o.start) : o.start;
      d.last = any ? std::max(d.last, o.end) : o.end;
      any = true;
    }
  if (options.measured) {
    double end = 0;
    for (const auto& ops : options.measured->ops)
      for (const auto& o : ops) end = std::max(end, o.second);
    if (end * kQuantaPerUnit > static_cast<double>(d.last)) d.last = static_cast<Ticks>(end * kQuantaPerUnit);
  }
  for (OpType k : kKinds) {
    bool present = false;
    for (const auto& ops : d.compute.stages)
      present = present || std::any_of(ops.begin(), ops.end(), [k](const Op& op) { return op.type == k; });
    if (present) d.kinds.push_back(k);
  }
  d.title = options.title.empty() ? shown_text(s.method) + " (p=" + std::to_string(s.p) + ", m=" + std::to_string(s.m) +
                                        ", chunks=" + std::to_string(s.chunks) + ", " + level_name(s.level) + ")"
                                  : options.title;
  char figures[200];
  std::snprintf(figures, sizeof figures, "makespan %s   span %s   span bubble rate %.4f",
                format_quanta(t.makespan).c_str(), format_quanta(t.span).c_str(), t.span_bubble_rate);
  d.figures = (options.figures.empty() ? std::string(figures) : options.figures) +
              (options.measured ? "   (thin rows: the measured run)" : "");
  d.instructions.resize(s.p);
  if (s.level == Level::kLowered) {
    d.instruction_key = std::string("red tick send, grey tick recv, black bar optimizer step") +
                        (s.optimizer == Optimizer::kPostValidation ? ", purple bar validation" : "");
    for (int st = 0; st < s.p; ++st) {
      const auto& timed = t.ops[st];
      size_t compute_index = 0;
      for (const Op& op : s.stages[st]) {
        if (is_compute(op.type)) {
          ++compute_index;
          continue;
        }
        Ticks at = is_recv(op.type) ? (compute_index < timed.size() ? timed[compute_index].start : timed.back().end)
                                    : (compute_index > 0 ? timed[compute_index - 1].end : d.first);
        d.instructions[st].push_back({op.type, at, op.peer});
      }
    }
  }
  size_t longest = 0;
  for (int st = 0; st < s.p; ++st) {
    std::string label = "stage " + std::to_string(st);
    if (st < static_cast<int>(options.stage_labels.size()) && !options.stage_labels[st].empty())
      label += ": " + options.stage_labels[st];
    longest = std::max(longest, label.size());
    d.labels.push_back(std::move(label));
  }
  d.left = std::max(70, 16 + static_cast<int>(std::ceil(6.2 * static_cast<double>(longest))));  // ~6 px a character at 11 px
  for (int st = 0; st < s.p; ++st) {
    std::string peak = format_quanta(t.peak_memory[st]);
    if (pr.limit(st)) peak += " / " + format_quanta(*pr.limit(st));
    d.peaks.push_back(peak);
  }
  return d;
}

}  // namespace

namespace {

// Where things go on the picture: the plot's place and size, the rows' pitch, the time scale.
struct Geometry {
  int plot_w, row_h, left, top, measured_h, pitch, swatch_w, key_w, shades_w;
  bool overview = false;  // neighbouring blocks under kMergeBelow px drawn as one (svg_overview)
  Ticks first;
  double total;
  double x_of(Ticks v) const { return left + (static_cast<double>(v - first) / total) * plot_w; }
};

// A white outline for blocks wide enough to show one.
std::string outline(double w, const char* stroke_width) {
  return w >= kOutlineMinPx ? std::string(" stroke=\"#ffffff\" stroke-width=\"") + stroke_width + "\"" : std::string();
}

// Legend: what, the figures, and the colour key of the kinds present (one swatch per chunk).
void draw_legend(std::ostream& svg, const Drawing& d, const Schedule& s, const Geometry& g) {
  svg << "<text x=\"" << g.left << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << escape(d.title) << "</text>\n";
  svg << "<text x=\"" << g.left << "\" y=\"40\" font-size=\"12\">" << escape(d.figures) << "</text>\n";
  int key_x = g.left;
  for (OpType k : d.kinds) {
    for (int c = 0; c < s.chunks; ++c)
      svg << "<rect x=\"" << key_x + c * g.swatch_w << "\" y=\"50\" width=\"" << g.swatch_w << "\" height=\"12\" fill=\""
          << fill_of(k, c, s.chunks) << "\"/>";
    svg << "<text x=\"" << key_x + s.chunks * g.swatch_w + 4 << "\" y=\"60\" font-size=\"11\">" << kind_label(k) << "</text>\n";
    key_x += g.key_w;
  }
  if (s.chunks > 1) {
    svg << "<text x=\"" << key_x << "\" y=\"60\" font-size=\"11\">shades: chunk 0 to " << s.chunks - 1
        << ", light to dark</text>\n";
    key_x += g.shades_w;
  }
  if (!d.instruction_key.empty()) svg << "<text x=\"" << key_x << "\" y=\"60\" font-size=\"11\">" << d.instruction_key << "</text>\n";
  svg << "<text x=\"" << g.left + g.plot_w + 8 << "\" y=\"" << g.top - 6 << "\" font-size=\"11\">peak memory</text>\n";
}

// The overview's merging: from op `first`, the last op of the run drawn as one block, where the
// run spans under kMergeBelow px and shows no gap of a pixel (first itself where it stands alone).
constexpr double kMergeBelow = 5;
size_t merged_run(const std::vector<Op>& ops, const std::vector<OpTiming>& timed, size_t first, const Geometry& g) {
  size_t last = first;
  while (last + 1 < ops.size() && g.x_of(timed[last + 1].end) - g.x_of(timed[first].start) < kMergeBelow &&
         g.x_of(timed[last + 1].start) - g.x_of(timed[last].end) < 1)
    ++last;
  return last;
}

// A merged run: one block in the colour of the kind (and chunk) that takes most of its time.
void draw_run(std::ostream& svg, const Schedule& s, const std::vector<Op>& ops, const std::vector<OpTiming>& timed,
              int st, size_t first, size_t last, int y, const Geometry& g) {
  std::vector<std::pair<Ticks, std::pair<OpType, int>>> time_of;  // (time, (kind, chunk))
  for (size_t i = first; i <= last; ++i) {
    const auto key = std::pair{ops[i].type, ops[i].chunk};
    auto at = std::find_if(time_of.begin(), time_of.end(), [&](const auto& e) { return e.second == key; });
    if (at == time_of.end()) time_of.push_back({0, key}), at = time_of.end() - 1;
    at->first += timed[i].end - timed[i].start;
  }
  const auto most = std::max_element(time_of.begin(), time_of.end(),
                                     [](const auto& a, const auto& b) { return a.first < b.first; });
  const double x0 = g.x_of(timed[first].start), x1 = g.x_of(timed[last].end);
  svg << "<rect class=\"run\" x=\"" << fmt(x0) << "\" y=\"" << y << "\" width=\"" << fmt(std::max(0.5, x1 - x0))
      << "\" height=\"" << g.row_h << "\" fill=\"" << fill_of(most->second.first, most->second.second, s.chunks)
      << "\"><title>" << op_short(ops[first]) << " to " << op_short(ops[last]) << " (" << last - first + 1
      << " ops) on stage " << st << ": " << format_quanta(timed[first].start) << " to " << format_quanta(timed[last].end)
      << "</title></rect>\n";
}

// One stage's row: its label, its blocks (each with its microbatch where it fits), the
// instructions lowering added, the measured run under it, its peak memory.
void draw_stage(std::ostream& svg, const Drawing& d, const Schedule& s, const Timeline& t, const MeasuredRun* measured,
                int st, const Geometry& g) {
  const int y = g.top + st * g.pitch, row_h = g.row_h, left = g.left, plot_w = g.plot_w;
  svg << "<text x=\"" << left - 8 << "\" y=\"" << y + row_h - 6 << "\" font-size=\"11\" text-anchor=\"end\">"
      << escape(d.labels[st]) << "</text>\n";
  // The row band: what shows through between blocks is idle time.
  svg << "<rect class=\"idle\" x=\"" << left << "\" y=\"" << y << "\" width=\"" << plot_w << "\" height=\"" << row_h
      << "\" fill=\"#eeeeee\"/>\n";
  const auto& ops = d.compute.stages[st];
  for (size_t i = 0; i < ops.size(); ++i) {
    if (g.overview) {
      const size_t last = merged_run(ops, t.ops[st], i, g);
      if (last > i) {
        draw_run(svg, s, ops, t.ops[st], st, i, last, y, g);
        i = last;
        continue;
      }
    }
    const Op& op = ops[i];
    const OpTiming& o = t.ops[st][i];
    double x0 = g.x_of(o.start), x1 = g.x_of(o.end);
    svg << "<rect class=\"op op-" << op_type_name(op.type) << "\" x=\"" << fmt(x0) << "\" y=\"" << y << "\" width=\""
        << fmt(std::max(0.5, x1 - x0)) << "\" height=\"" << row_h << "\" fill=\"" << fill_of(op.type, op.chunk, s.chunks)
        << "\"" << outline(x1 - x0, "1") << "><title>" << op_short(op) << " on stage " << st << ": "
        << format_quanta(o.start) << " to " << format_quanta(o.end) << "</title></rect>\n";
    // The microbatch, in the largest type that fits the block (about 0.62 of the size a digit),
    // so labels never overlap; two digits and more get smaller type where 11 px does not fit.
    const std::string label = std::to_string(op.mb);
    for (const auto& [size, digit, pad] : {std::tuple{11, 7.0, 4.0}, {9, 5.6, 3.0}, {7, 4.4, 2.0}}) {
      if (x1 - x0 < digit * static_cast<double>(label.size()) + pad || row_h < size + 3) continue;
      svg << "<text x=\"" << fmt((x0 + x1) / 2) << "\" y=\"" << y + row_h - (row_h - size) / 2 - 1
          << "\" font-size=\"" << size << "\" text-anchor=\"middle\" pointer-events=\"none\">" << label << "</text>\n";
      break;
    }
  }
  for (const Instruction& in : d.instructions[st]) {
    if (g.overview && !in.bar()) continue;  // thousands of send/recv ticks: the overview keeps the bars
    svg << "<rect class=\"instr\" x=\"" << fmt(g.x_of(in.at)) << "\" y=\"" << y - 2 << "\" width=\"" << (in.bar() ? 3 : 1)
        << "\" height=\"" << (in.bar() ? row_h + 4 : 5) << "\" fill=\"" << in.colour() << "\"><title>" << in.title()
        << "</title></rect>\n";
  }
  if (measured && st < static_cast<int>(measured->ops.size())) {
    // The measured run: same colours, a thinner band right under the plan.
    const int my = y + row_h + 1, measured_h = g.measured_h;
    svg << "<rect class=\"idle\" x=\"" << left << "\" y=\"" << my << "\" width=\"" << plot_w << "\" height=\""
        << measured_h - 1 << "\" fill=\"#f6f6f6\"/>\n";
    const auto& mops = measured->ops[st];
    for (size_t i = 0; i < mops.size() && i < ops.size(); ++i) {
      double x0 = left + (mops[i].first * kQuantaPerUnit - static_cast<double>(g.first)) / g.total * plot_w;
      double x1 = left + (mops[i].second * kQuantaPerUnit - static_cast<double>(g.first)) / g.total * plot_w;
      svg << "<rect class=\"measured op-" << op_type_name(ops[i].type) << "\" x=\"" << fmt(x0) << "\" y=\"" << my
          << "\" width=\"" << fmt(std::max(0.5, x1 - x0)) << "\" height=\"" << measured_h - 1 << "\" fill=\""
          << fill_of(ops[i].type, ops[i].chunk, s.chunks) << "\"" << outline(x1 - x0, "0.5") << "><title>"
          << op_short(ops[i]) << " on stage " << st << ", measured: " << fmt(mops[i].first) << " to "
          << fmt(mops[i].second) << "</title></rect>\n";
    }
  }
  svg << "<text x=\"" << left + plot_w + 8 << "\" y=\"" << y + row_h - 6 << "\" font-size=\"11\">" << d.peaks[st]
      << "</text>\n";
}

// The time axis: a tick at every multiple of a round step (1, 2 or 5 times a power of ten), about
// ten across the plot, each with its time.
void draw_axis(std::ostream& svg, const Drawing& d, int axis_y, const Geometry& g) {
  svg << "<line x1=\"" << g.left << "\" y1=\"" << axis_y << "\" x2=\"" << g.left + g.plot_w << "\" y2=\"" << axis_y
      << "\" stroke=\"#888888\"/>\n";
  const double raw = g.total / 10.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  const Ticks tick = std::max<Ticks>(1, static_cast<Ticks>(std::llround(step)));
  for (Ticks at = (g.first + tick - 1) / tick * tick; at <= d.last; at += tick) {
    const double x = g.x_of(at);
    svg << "<line x1=\"" << fmt(x) << "\" y1=\"" << axis_y << "\" x2=\"" << fmt(x) << "\" y2=\"" << axis_y + 4
        << "\" stroke=\"#888888\"/><text x=\"" << fmt(x) << "\" y=\"" << axis_y + 16
        << "\" font-size=\"10\" text-anchor=\"middle\">" << format_quanta(at) << "</text>\n";
  }
}

// Without --width, a picture whose stages hold more than this many ops (about 6 px each would not
// fit a screen) is drawn as an overview this wide.
constexpr size_t kOverviewOps = 500;
constexpr int kOverviewWidth = 1600;

size_t most_ops_of(const Schedule& s) {
  size_t most = 1;
  for (const auto& ops : s.stages)
    most = std::max<size_t>(most, std::count_if(ops.begin(), ops.end(), [](const Op& op) { return is_compute(op.type); }));
  return most;
}

// The closing line: the time range, and what an overview left out.
std::string closing_line(const Drawing& d, bool overview) {
  std::string line = "time " + format_quanta(d.first) + " to " + format_quanta(d.last) + " (grey: idle)";
  if (overview)
    line += "; an overview: neighbouring blocks under 5 px drawn as one, in the colour of most of their time, "
            "send/recv ticks left out; every block: --width PX, or an .html page";
  return line;
}

}  // namespace

bool svg_overview(const Schedule& s, const RenderOptions& options) {
  return options.width <= 0 && most_ops_of(s) > kOverviewOps;
}

std::string render_svg(const Schedule& s, const Problem& pr, const Timeline& t, const RenderOptions& options) {
  const Drawing d = drawing_of(s, pr, t, options);
  const size_t most_ops = most_ops_of(s);
  Geometry g;
  g.overview = svg_overview(s, options);
  // Wide enough that the average block is at least 6 px, so every block stays visible; an
  // overview fits a screen.
  g.plot_w = options.width > 0 ? options.width
             : g.overview      ? kOverviewWidth
                               : static_cast<int>(std::clamp<size_t>(most_ops * 6, 900, 30000));
  g.first = d.first;
  g.total = static_cast<double>(std::max<Ticks>(1, d.last - d.first));
  g.row_h = s.p <= 16 ? 22 : 14;
  g.left = d.left;
  g.top = 76;
  const int gap = 4, right = 150;
  g.measured_h = options.measured ? g.row_h / 2 : 0;
  g.pitch = g.row_h + g.measured_h + gap;
  const int axis_h = 24;  // the time axis under the rows: a line, ticks and their times
  const int height = g.top + s.p * g.pitch + axis_h + 30;
  // The legend's last line can be longer than the plot is wide (about 6.5 px a character at 11 px).
  g.swatch_w = s.chunks > 1 ? 10 : 14;
  g.key_w = 120 + (s.chunks - 1) * g.swatch_w;
  g.shades_w = s.chunks > 1 ? 200 : 0;
  const int legend_end = g.left + static_cast<int>(d.kinds.size()) * g.key_w + g.shades_w +
                         static_cast<int>(std::ceil(6.5 * static_cast<double>(d.instruction_key.size())));
  const int width = std::max(g.left + g.plot_w + right, legend_end + 10);

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" shape-rendering=\"crispEdges\">\n";
  svg << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  draw_legend(svg, d, s, g);
  for (int st = 0; st < s.p; ++st) draw_stage(svg, d, s, t, options.measured, st, g);
  draw_axis(svg, d, g.top + s.p * g.pitch + 2, g);
  svg << "<text x=\"" << g.left << "\" y=\"" << height - 10 << "\" font-size=\"11\">" << escape(closing_line(d, g.overview))
      << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::string render_html(const Schedule& s, const Problem& pr, const Timeline& t, const RenderOptions& options) {
  const Drawing d = drawing_of(s, pr, t, options);
  // The data the viewer (io/viewer.js) draws: per stage, 5 integers an op (kind, microbatch,
  // chunk, start, end; times in ticks), the instructions (3 an instruction: type, tick, peer) and
  // the measured run (start, end in ticks), with the colours, so both pictures share one palette.
  nlohmann::json data;
  data["p"] = s.p;
  data["m"] = s.m;
  data["chunks"] = s.chunks;
  data["ticksPerUnit"] = kQuantaPerUnit;
  data["first"] = d.first;
  data["last"] = d.last;
  data["rowHeight"] = s.p <= 16 ? 22 : 14;
  data["measured"] = options.measured != nullptr;
  data["kinds"] = {"F", "B", "W", "BW"};
  nlohmann::json fills = nlohmann::json::array();
  for (OpType k : kKinds) {
    nlohmann::json shades = nlohmann::json::array();
    for (int c = 0; c < s.chunks; ++c) shades.push_back(fill_of(k, c, s.chunks));
    fills.push_back(shades);
  }
  data["fills"] = fills;
  std::vector<OpType> instruction_types;
  nlohmann::json stages = nlohmann::json::array();
  for (int st = 0; st < s.p; ++st) {
    nlohmann::json ops = nlohmann::json::array(), instructions = nlohmann::json::array(),
                   measured = nlohmann::json::array();
    const auto& compute = d.compute.stages[st];
    for (size_t i = 0; i < compute.size(); ++i) {
      for (long long v : {static_cast<long long>(compute_kind(compute[i].type)), static_cast<long long>(compute[i].mb),
                          static_cast<long long>(compute[i].chunk), static_cast<long long>(t.ops[st][i].start),
                          static_cast<long long>(t.ops[st][i].end)})
        ops.push_back(v);
    }
    for (const Instruction& in : d.instructions[st]) {
      auto at = std::find(instruction_types.begin(), instruction_types.end(), in.type);
      if (at == instruction_types.end()) at = instruction_types.insert(at, in.type);
      instructions.push_back(at - instruction_types.begin());
      instructions.push_back(in.at);
      instructions.push_back(in.peer);
    }
    if (options.measured && st < static_cast<int>(options.measured->ops.size()))
      for (const auto& [start, end] : options.measured->ops[st]) {
        if (measured.size() / 2 >= compute.size()) break;
        measured.push_back(std::llround(start * kQuantaPerUnit));
        measured.push_back(std::llround(end * kQuantaPerUnit));
      }
    stages.push_back({{"ops", ops}, {"instructions", instructions}, {"measured", measured}, {"peak", d.peaks[st]},
                      {"label", d.labels[st]}});
  }
  data["stages"] = stages;
  data["left"] = d.left;
  nlohmann::json types = nlohmann::json::array();
  for (OpType type : instruction_types) {
    Instruction in{type, 0, -1};
    types.push_back({{"name", op_type_name(type)}, {"colour", in.colour()}, {"bar", in.bar()},
                     {"send", is_send(type)}});
  }
  data["instructionTypes"] = types;
  std::string json = data.dump();
  // Inside <script>, "</" could end the element early; "<\/" is the same JSON string.
  for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 3)) json.insert(at + 1, "\\");

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape(d.title) << "</title>\n<style>\n"
       << viewer_assets::kStyle << "</style></head><body>\n<div id=\"zbpp-head\">\n<div class=\"title\">"
       << escape(d.title) << "</div>\n<div class=\"figures\">" << escape(d.figures) << "</div>\n<div class=\"legend\">";
  for (OpType k : d.kinds) {
    html << "<span class=\"key\">";
    for (int c = 0; c < s.chunks; ++c)
      html << "<i style=\"background:" << fill_of(k, c, s.chunks) << "\" title=\"chunk " << c << "\"></i>";
    html << kind_label(k) << "</span>";
  }
  if (s.chunks > 1) html << "<span class=\"key\">shades: chunk 0 to " << s.chunks - 1 << ", light to dark</span>";
  if (!d.instruction_key.empty()) html << "<span class=\"key\">" << d.instruction_key << "</span>";
  html << "</div>\n<div class=\"controls\"><button id=\"zbpp-in\">zoom in</button><button id=\"zbpp-out\">zoom out</button>"
       << "<button id=\"zbpp-fit\">fit width</button><span class=\"hint\">wheel: zoom at the cursor, drag: pan, "
       << "click: select (the address bar keeps the view)</span></div>\n</div>\n"
       << "<canvas id=\"zbpp-view\"></canvas>\n<div id=\"zbpp-card\" hidden></div>\n"
       << "<script id=\"zbpp-data\" type=\"application/json\">" << json << "</script>\n<script>\n"
       << viewer_assets::kScript << "</script>\n</body></html>\n";
  return html.str();
}

}  // namespace zbpp
