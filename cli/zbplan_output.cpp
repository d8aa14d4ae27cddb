// What zbplan prints and writes (see zbplan_output.h).
#include "cli/zbplan_output.h"

#include <algorithm>
#include <cstdio>

#include "core/bounds.h"
#include "core/output_file.h"

namespace zbpp::zbplan {

namespace {

std::string memory_list(const std::vector<Mem>& peaks) {
  std::string out = "[";
  for (size_t i = 0; i < peaks.size(); ++i) out += (i ? ", " : "") + format_quanta(peaks[i]);
  return out + "]";
}

// "  span bubble rate  ": a figure's name in the column the figures' values start at.
std::string label(const std::string& name) {
  return "  " + name + std::string(name.size() < 18 ? 18 - name.size() : 1, ' ');
}

}  // namespace

void print_figures(std::ostream& out, const Schedule& s, const Problem& pr, const Timeline& t) {
  out << label("method") << (s.method.empty() ? "?" : shown_text(s.method)) << " (p=" << s.p << ", m=" << s.m
      << ", chunks=" << s.chunks << ")\n";
  out << label("makespan") << format_quanta(t.makespan)
      << "  (one iteration's compute ops: first op start to last op end, any stage)\n";
  out << label("span") << format_quanta(t.span) << "  (longest stage, its first op to its last; the paper's cost)\n";
  out << label("span bubble rate") << format_fixed(t.span_bubble_rate, 4) << "  ((span - busy) / span; "
      << format_fixed(t.span_bubble_rate, 6) << ")\n";
  out << label("peak memory") << memory_list(t.peak_memory);
  if (pr.limited())
    out << "  (limit " << mem_limit_text(pr) << ")";
  out << "\n";
}

void print_iterations(std::ostream& out, const Schedule& s, const IterationTimeline& it) {
  out << label("period") << format_quanta(it.period) << "  (" << it.iterations << " iterations back to back, optimizer "
      << optimizer_name(s.optimizer) << "; period bubble rate " << format_fixed(it.period_bubble_rate, 4) << ")\n";
  out << label("wall") << format_quanta(it.wall) << "  (one iteration alone, first op to last optimizer step; wall "
      << "bubble rate " << format_fixed(it.wall_bubble_rate, 4) << ")\n";
}

void print_objective(std::ostream& out, std::optional<Objective> objective, const Schedule& s, const Problem& pr,
                     const Timeline& t, const IterationTimeline* it) {
  out << label("objective");
  if (!objective) {
    out << "not recorded\n";
  } else {
    const bool wall = *objective == Objective::kWall;
    const char* name = objective_name(*objective);
    out << name << " (minimised)";
    if (it) {
      out << ": " << format_quanta(wall ? it->wall : it->period) << ", " << name << " bubble rate "
          << format_fixed(wall ? it->wall_bubble_rate : it->period_bubble_rate, 4) << "\n";
    } else {
      const Cost stand_in = wall ? Cost::kMakespan : Cost::kSpan;
      const Ticks value = cost_of(t, stand_in);
      out << "; compute ops only, so the " << cost_name(stand_in) << " stands for it: " << format_quanta(value) << ", "
          << cost_name(stand_in) << " bubble rate " << format_fixed(bubble_rate_of(pr, value), 4) << "\n";
    }
  }
  const Ticks bound = wall_lower_bound(pr, s.placement);
  out << label("ramp bound") << format_quanta(bound) << "  (no makespan is shorter; this one's gap "
      << format_fixed(bound > 0 ? static_cast<double>(t.makespan - bound) / bound : 0, 4) << ")\n";
}

bool write_file(const std::string& path, const std::string& text, std::ostream& err) {
  std::string why;
  if (write_file_replacing(path, text, &why)) return true;
  err << "zbplan: cannot write " << why << "\n";
  return false;
}

int fail(std::ostream& err, const std::vector<Diag>& diags) {
  size_t shown = 0;
  for (; shown < std::min<size_t>(diags.size(), 50) && diags[shown].more == 0; ++shown)
    err << "zbplan: " << format_diag(diags[shown]) << "\n";
  if (diag_count(diags) > shown) err << "zbplan: ... and " << diag_count(diags) - shown << " more\n";
  return kExitInvalid;
}

}  // namespace zbpp::zbplan
