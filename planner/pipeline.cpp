// The planner's pass list (see pipeline.h).
#include "planner/pipeline.h"

#include "planner/gen_baseline.h"
#include "planner/search_heuristic.h"
#include "planner/validate.h"

namespace zbpp {

const std::vector<std::string>& plan_methods() {
  static const std::vector<std::string> methods = {"1f1b", "1f1b-i", "zb-h1", "zb-h2", "heuristic"};
  return methods;
}

namespace {

// A method that runs a fixed placement refuses a problem that asks for another.
bool check_shape(const Problem& pr, const std::string& method, int chunks_needed, std::vector<Diag>* diags) {
  if (chunks_needed > 0 && pr.chunks != chunks_needed) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " runs " + std::to_string(chunks_needed) +
                                              " chunk(s) per stage, but the problem has chunks = " +
                                              std::to_string(pr.chunks)});
    return false;
  }
  return true;
}

}  // namespace

std::optional<PlanResult> plan_schedule(const Problem& pr, const std::string& method, std::vector<Diag>* diags) {
  std::optional<Schedule> s;
  std::vector<std::string> notes;
  if (method == "heuristic") {
    if (!check_shape(pr, method, 1, diags)) return std::nullopt;
    auto found = search_heuristic(pr, diags);
    if (!found) return std::nullopt;
    s = std::move(found->schedule);
    notes.push_back("search: " + std::to_string(found->feasible) + " of " + std::to_string(found->candidates) +
                    " candidates fit the memory limit (8 switch combinations, 3 handcrafted seeds); best: " +
                    found->winner);
  } else if (method == "1f1b" || method == "zb-h1" || method == "zb-h2") {
    if (!check_shape(pr, method, 1, diags)) return std::nullopt;
    s = method == "1f1b" ? generate_1f1b(pr) : method == "zb-h1" ? generate_zb_h1(pr) : generate_zb_h2(pr);
  } else if (method == "1f1b-i") {
    std::string err;
    s = generate_1f1b_interleaved(pr, &err);
    if (!s) {
      diags->push_back({"", "", -1, -1, "", err});
      return std::nullopt;
    }
  } else {
    std::string known;
    for (const auto& m : plan_methods()) known += (known.empty() ? "" : ", ") + m;
    diags->push_back({"", "", -1, -1, "", "unknown method '" + method + "' (known: " + known + ")"});
    return std::nullopt;
  }
  if (!pr.placement.empty() && pr.placement != s->placement) {
    diags->push_back({"", "", -1, -1, "", "method " + method + " places chunks its own way; drop 'placement' from the problem"});
    return std::nullopt;
  }
  auto found = validate(*s, pr);
  if (!found.empty()) {
    diags->push_back({"", "", -1, -1, "", "the " + method + " schedule does not fit this problem:"});
    diags->insert(diags->end(), found.begin(), found.end());
    return std::nullopt;
  }
  return PlanResult{std::move(*s), std::move(notes)};
}

}  // namespace zbpp
