// The method table (see methods.h).
#include "planner/methods.h"

#include "planner/gen_baseline.h"
#include "planner/gen_v.h"

namespace zbpp {

namespace {

// The generators as the table calls them: those that cannot fail wrapped; only V-ZB, which
// searches, stops at the deadline.
std::optional<Schedule> run_1f1b(const Problem& pr, std::string*, const Deadline&) { return generate_1f1b(pr); }
std::optional<Schedule> run_1f1b_i(const Problem& pr, std::string* why, const Deadline&) {
  return generate_1f1b_interleaved(pr, why);
}
std::optional<Schedule> run_zb_h1(const Problem& pr, std::string*, const Deadline&) { return generate_zb_h1(pr); }
std::optional<Schedule> run_zb_h2(const Problem& pr, std::string*, const Deadline&) { return generate_zb_h2(pr); }
std::optional<Schedule> run_zb_v(const Problem& pr, std::string*, const Deadline&) {
  return generate_zb_v_handcrafted(pr);
}
std::optional<Schedule> run_dualpipe_v(const Problem& pr, std::string* why, const Deadline&) {
  return generate_dualpipe_v(pr, why);
}
std::optional<Schedule> run_v_min(const Problem& pr, std::string*, const Deadline&) {
  return generate_v_block(pr, VBlock::kMin);
}
std::optional<Schedule> run_v_half(const Problem& pr, std::string*, const Deadline&) {
  return generate_v_block(pr, VBlock::kHalf);
}
std::optional<Schedule> run_v_zb(const Problem& pr, std::string* why, const Deadline& deadline) {
  return generate_v_zb_best(pr, why, deadline);
}

}  // namespace

const std::vector<Method>& methods() {
  using P = Placing;
  using R = Runs;
  static const std::vector<Method> table = {
      {"1f1b", P::kOneChunk, R::kGenerator, run_1f1b, "p M_B",
       "1F1B: warm-up F's, then an F and a fused backward (B with its W) in turn"},
      {"1f1b-i", P::kInterleaved, R::kGenerator, run_1f1b_i, "a little over p M_B",
       "Megatron's interleaved 1F1B; m a multiple of p"},
      {"zb-h1", P::kOneChunk, R::kGenerator, run_zb_h1, "p M_B",
       "ZB-H1 (section 2): 1F1B's order, B and W split, stage s's W's s B's later"},
      {"zb-h2", P::kOneChunk, R::kGenerator, run_zb_h2, "(2p-1) M_B",
       "ZB-H2 (section 2): more warm-up F's and later W's, every bubble filled"},
      {"heuristic", P::kAsGiven, R::kSearch, nullptr, "--mem-limit",
       "the grid search of section 3.1 (ZB-1p at 1p, ZB-2p at 2p); with --chunks the V or interleaved search"},
      {"ilp", P::kAsGiven, R::kSearchIlp, nullptr, "--mem-limit",
       "heuristic's pick refined by the appendix-G ILP in CBC within --time-limit"},
      {"zb-v", P::kV, R::kGenerator, run_zb_v, "p M_B", "ZB-V: the authors' handcrafted V order"},
      {"dualpipe-v", P::kV, R::kGenerator, run_dualpipe_v, "about p M_B",
       "DualPipe-V's order (PyTorch's ScheduleDualPipeV), its paired ops one after the other; m >= 2p"},
      {"v-min", P::kV, R::kGenerator, run_v_min, "about p M_B / 3",
       "V-Min: the building block of 'Controllable Memory', repeated every 6 slots"},
      {"v-half", P::kV, R::kGenerator, run_v_half, "about p M_B / 2", "V-Half: that paper's block at half the memory"},
      {"v-zb", P::kV, R::kGenerator, run_v_zb, "at most p M_B",
       "V-ZB: the best of the authors' round-by-round V-ZB, the greedy, ZB-V and DualPipe-V, polished"},
      {"heuristic-v", P::kV, R::kSearch, nullptr, "--mem-limit", "the V search (heuristic with --chunks 2)"},
      {"ilp-v", P::kV, R::kSearchIlp, nullptr, "--mem-limit", "heuristic-v's pick refined by the ILP within --time-limit"},
      {"auto", P::kEvery, R::kAuto, nullptr, "--mem-limit",
       "every method above under every optimizer placement (the ILPs with --time-limit); the best by --objective"},
  };
  return table;
}

const std::vector<MethodAlias>& method_aliases() {
  static const std::vector<MethodAlias> aliases = {{"zb-1p", "heuristic", "1p"}, {"zb-2p", "heuristic", "2p"}};
  return aliases;
}

const Method* find_method(const std::string& name) {
  for (const Method& m : methods())
    if (name == m.name) return &m;
  return nullptr;
}

const std::vector<std::string>& plan_methods() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Method& m : methods()) out.push_back(m.name);
    return out;
  }();
  return names;
}

bool is_v_method(const std::string& method) {
  const Method* m = find_method(method);
  return m && m->placing == Placing::kV;
}

bool is_ilp(const std::string& method) {
  const Method* m = find_method(method);
  return m && m->runs == Runs::kSearchIlp;
}

bool plans_one_chunk(const Method& m) {
  return m.placing == Placing::kOneChunk || m.placing == Placing::kAsGiven || m.placing == Placing::kEvery;
}

std::string interleaves_chunks_text(const std::string& method) {
  return method + " interleaves chunks: give --chunks V with V >= 2";
}

const char* placing_name(Placing placing) {
  switch (placing) {
    case Placing::kOneChunk: return "one chunk per stage";
    case Placing::kInterleaved: return "interleaved, --chunks C >= 2";
    case Placing::kV: return "V (2 chunks)";
    case Placing::kAsGiven: return "one chunk, or --chunks";
    case Placing::kEvery: return "each method's";
  }
  return "";
}

const char* runs_name(Runs runs) {
  switch (runs) {
    case Runs::kGenerator: return "generator";
    case Runs::kSearch: return "search";
    case Runs::kSearchIlp: return "search + ILP";
    case Runs::kAuto: return "every method";
  }
  return "";
}

}  // namespace zbpp
