// Checks and conversions for the planning problem (see problem.h).
#include "core/problem.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/ir.h"

namespace zbpp {

Mem Problem::stage_mem_b() const {
  Mem biggest = 0;
  for (int s = 0; s < p; ++s) {
    Mem stage = 0;
    for (int c = 0; c < chunks; ++c) stage += b_mem(s, c);
    biggest = std::max(biggest, stage);
  }
  return biggest;
}

Ticks Problem::busy_time(int stage) const {
  Ticks one = 0;  // one microbatch through every chunk
  for (int c = 0; c < chunks; ++c) one += f_time(stage, c) + b_time(stage, c) + w_time(stage, c);
  return static_cast<Ticks>(m) * one;
}

bool Problem::uniform_times() const {
  return !chunks_differ() && all_same(t_f) && all_same(t_b) && all_same(t_w);
}

Problem Problem::least_chunks() const {
  Problem out = *this;
  if (!chunks_differ()) return out;
  auto least = [&](const std::vector<std::int64_t>& chunked, std::vector<std::int64_t>* staged) {
    for (int s = 0; s < p; ++s)
      (*staged)[static_cast<size_t>(s)] = *std::min_element(chunked.begin() + s * chunks, chunked.begin() + (s + 1) * chunks);
  };
  least(per_chunk.t_f, &out.t_f);
  least(per_chunk.t_b, &out.t_b);
  least(per_chunk.t_w, &out.t_w);
  least(per_chunk.mem_b, &out.mem_b);
  least(per_chunk.mem_w, &out.mem_w);
  out.per_chunk = {};
  return out;
}

std::string mem_limit_text(const Problem& pr) {
  if (!pr.stage_mem_limits.empty()) {
    std::string text = "[";
    for (size_t s = 0; s < pr.stage_mem_limits.size(); ++s) text += (s ? ", " : "") + format_quanta(pr.stage_mem_limits[s]);
    return text + "] per stage";
  }
  if (!pr.mem_limit) return "none";
  std::string text = format_quanta(*pr.mem_limit);
  if (!pr.mem_limit_spec.empty() && pr.mem_limit_spec.back() == 'p') text += " = " + pr.mem_limit_spec;
  return text;
}

std::vector<std::vector<int>> interleaved_placement(int p, int chunks) {
  std::vector<std::vector<int>> out(p);
  for (int s = 0; s < p; ++s)
    for (int c = 0; c < chunks; ++c) out[s].push_back(s + c * p);
  return out;
}

std::vector<std::vector<int>> v_shape_placement(int p) {
  std::vector<std::vector<int>> out(p);
  for (int s = 0; s < p; ++s) out[s] = {s, 2 * p - 1 - s};
  return out;
}

bool is_decimal(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
      return false;
  return true;
}

std::optional<Mem> parse_mem_limit(const std::string& text, int p, Mem stage_mem_b, std::string* err) {
  if (text.empty()) {
    *err = "empty memory limit";
    return std::nullopt;
  }
  bool multiple = text.back() == 'p';
  std::string number = multiple ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  double value = number.empty() ? 0.0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !is_decimal(number)) {
    *err = "memory limit '" + text + "' is neither a number nor a multiple like '2p'";
    return std::nullopt;
  }
  if (!(value > 0)) {
    *err = "memory limit '" + text + "' must be positive";
    return std::nullopt;
  }
  if (multiple) {
    double limit = value * static_cast<double>(p) * static_cast<double>(stage_mem_b);
    if (!std::isfinite(limit) || limit > 1e18) {
      *err = "memory limit '" + text + "' is out of range";
      return std::nullopt;
    }
    return static_cast<Mem>(std::llround(limit));
  }
  auto q = to_quanta(value);
  if (!q) {
    *err = "memory limit '" + text + "' is out of range";
    return std::nullopt;
  }
  return *q;
}

namespace {

// A number as a message shows it: JSON's form when finite ("-1.0"), else "nan" or "inf" (JSON
// would print null, which reads as a missing value).
std::string number_text(double v) { return std::isfinite(v) ? nlohmann::json(v).dump() : std::to_string(v); }

// Converts a per-stage list (broadcasting one value) into quanta, reporting the field by name.
// With `virtual_stages` > 0, a list may also give one value per virtual stage ("of virtual stage").
bool per_stage(const std::vector<double>& values, int p, const std::string& name, bool allow_zero,
               const std::string& file, std::vector<Mem>* out, std::vector<Diag>* diags, int virtual_stages = 0) {
  const bool per_vs = virtual_stages > p && static_cast<int>(values.size()) == virtual_stages;
  if (values.size() != 1 && static_cast<int>(values.size()) != p && !per_vs) {
    diags->push_back({file, "", -1, -1, "", name + " has " + std::to_string(values.size()) +
                                              " values; give one, or one per stage (p = " + std::to_string(p) + ")" +
                                              (virtual_stages > p ? ", or one per virtual stage (" +
                                                                        std::to_string(virtual_stages) + ")"
                                                                  : "")});
    return false;
  }
  out->clear();
  const int count = per_vs ? virtual_stages : p;
  for (int s = 0; s < count; ++s) {
    double v = values.size() == 1 ? values[0] : values[s];
    auto q = to_quanta(v);
    bool bad = !q || *q < 0 || (!allow_zero && *q == 0);
    if (bad) {
      std::string where = values.size() == 1 ? name : name + " of " + (per_vs ? "virtual stage " : "stage ") + std::to_string(s);
      std::string got = number_text(v);
      diags->push_back({file, "", -1, -1, "", where + " must be " + (allow_zero ? "non-negative" : "positive") +
                                                  " and finite, got " + got +
                                                  (q && *q == 0 && v > 0 ? " (0 at the 1e-6 resolution)" : "") +
                                                  (!q && std::isfinite(v) ? " (at most 1e12)" : "")});
      return false;
    }
    out->push_back(*q);
  }
  return true;
}

// T_comm: one value for every hop, one per link between neighbours (p - 1), or p with the link
// from the last stage back to the first; stored as p links (problem.h), the missing last one
// taking the slowest listed.
bool read_links(const std::vector<double>& values, int p, const std::string& file, std::vector<Ticks>* out,
                std::vector<Diag>* diags) {
  const size_t n = values.size();
  if (n != 1 && (p < 3 || (static_cast<int>(n) != p - 1 && static_cast<int>(n) != p))) {
    diags->push_back({file, "", -1, -1, "",
                      "t_comm has " + std::to_string(n) + " values; give one" +
                          (p < 3 ? " (p = " + std::to_string(p) + " has at most one link)"
                                 : ", one per link between neighbouring stages (p - 1 = " + std::to_string(p - 1) +
                                       "), or p = " + std::to_string(p) +
                                       " where the last is the link from stage " + std::to_string(p - 1) +
                                       " back to stage 0")});
    return false;
  }
  out->clear();
  for (size_t i = 0; i < n; ++i) {
    auto q = to_quanta(values[i]);
    if (!q || *q < 0) {
      diags->push_back({file, "", -1, -1, "",
                        (n == 1 ? std::string("t_comm") : "t_comm of link " + std::to_string(i)) +
                            " must be non-negative and finite, got " + number_text(values[i]) +
                            (!q && std::isfinite(values[i]) && values[i] >= 0 ? " (at most 1e12)" : "")});
      return false;
    }
    out->push_back(*q);
  }
  const Ticks slowest = *std::max_element(out->begin(), out->end());
  out->resize(static_cast<size_t>(std::max(p, 1)), n == 1 ? (*out)[0] : slowest);
  return true;
}

}  // namespace

namespace {

// build_problem's steps, each saying what it finds through `fail`.
using Fail = std::function<void(const std::string&)>;

// p, m and chunks in range, and the schedule they make small enough to hold.
bool check_sizes(const ProblemInput& in, const Fail& fail) {
  bool ok = true;
  auto bad = [&](const std::string& msg) { fail(msg), ok = false; };
  if (in.p < 1) bad("p (stages) must be at least 1, got " + std::to_string(in.p));
  if (in.m < 1) bad("m (microbatches) must be at least 1, got " + std::to_string(in.m));
  if (in.chunks < 1) bad("chunks must be at least 1, got " + std::to_string(in.chunks));
  if (in.p > kMaxStages || in.m > kMaxMicrobatches || in.chunks > kMaxChunks)
    bad("problem too large (p <= 4096, m <= 1000000, chunks <= 64)");
  else if (static_cast<long long>(in.p) * in.chunks * in.m > 4'000'000)
    bad("problem too large: p x chunks x m = " + std::to_string(static_cast<long long>(in.p) * in.chunks * in.m) +
        " exceeds 4000000 (a schedule of that many microbatch-stage pairs would not fit in memory)");
  return ok;
}

// The placement, when given: each stage's `chunks` virtual stages, each virtual stage once.
bool read_placement(const ProblemInput& in, Problem* pr, const Fail& fail) {
  if (in.placement.empty()) return true;
  const int v = pr->virtual_stages();
  std::set<int> seen;
  bool shape_ok = static_cast<int>(in.placement.size()) == in.p;
  for (const auto& row : in.placement) shape_ok = shape_ok && static_cast<int>(row.size()) == in.chunks;
  if (!shape_ok) {
    fail("placement must list, for each of the " + std::to_string(in.p) + " stages, its " +
         std::to_string(in.chunks) + " virtual stage(s)");
    return false;
  }
  for (const auto& row : in.placement)
    for (int vs : row) {
      if (vs < 0 || vs >= v || !seen.insert(vs).second) {
        fail("placement must use each virtual stage 0.." + std::to_string(v - 1) + " exactly once");
        return false;
      }
    }
  pr->placement = in.placement;
  return true;
}

// T_F, T_B, T_W, M_B and M_W (once, per stage, or per virtual stage with a placement) and T_comm.
bool read_figures(const ProblemInput& in, const std::string& file, Problem* pr, std::vector<Diag>* diags,
                  const Fail& fail) {
  struct Figure {
    const char* name;
    const std::vector<double>& given;
    bool allow_zero;
    std::vector<std::int64_t>* staged;
    std::vector<std::int64_t>* chunked;
  };
  const Figure figures[] = {{"t_f", in.t_f, false, &pr->t_f, &pr->per_chunk.t_f},
                            {"t_b", in.t_b, false, &pr->t_b, &pr->per_chunk.t_b},
                            {"t_w", in.t_w, true, &pr->t_w, &pr->per_chunk.t_w},
                            {"mem_b", in.mem_b, true, &pr->mem_b, &pr->per_chunk.mem_b},
                            {"mem_w", in.mem_w, true, &pr->mem_w, &pr->per_chunk.mem_w}};
  const int vs_count = pr->chunks > 1 ? pr->virtual_stages() : 0;
  bool ok = true, per_vs = false;
  std::vector<std::vector<std::int64_t>> values(std::size(figures));
  for (size_t f = 0; f < std::size(figures); ++f) {
    const bool read = per_stage(figures[f].given, in.p, figures[f].name, figures[f].allow_zero, file, &values[f], diags,
                                vs_count);
    ok = read && ok;
    if (read && vs_count && static_cast<int>(values[f].size()) == vs_count) {
      per_vs = true;
      if (pr->placement.empty()) {
        fail(std::string(figures[f].name) + " gives one value per virtual stage (p x chunks = " + std::to_string(vs_count) +
             "): give the placement too, which virtual stages each stage runs (--placement v or interleaved, or "
             "'placement' in the problem file)");
        return false;
      }
    }
  }
  ok = read_links(in.t_comm, in.p, file, &pr->t_comm, diags) && ok;
  if (!ok) return false;
  if (!per_vs) {
    for (size_t f = 0; f < std::size(figures); ++f) *figures[f].staged = std::move(values[f]);
    return true;
  }
  // Per (stage, chunk); each stage's own figure is the largest of its chunks'.
  const VirtualStageMap map(pr->placement);
  bool differ = false;
  for (size_t f = 0; f < std::size(figures); ++f) {
    auto& chunked = *figures[f].chunked;
    chunked.assign(static_cast<size_t>(vs_count), 0);
    for (int vs = 0; vs < vs_count; ++vs) {
      // A figure given per stage (or once) takes its stage's value on each of its chunks.
      const bool listed = static_cast<int>(values[f].size()) == vs_count;
      const std::int64_t value = values[f][static_cast<size_t>(listed ? vs : map.stage_of[vs])];
      chunked[static_cast<size_t>(map.stage_of[vs] * pr->chunks + map.chunk_of[vs])] = value;
    }
    figures[f].staged->assign(static_cast<size_t>(pr->p), 0);
    for (int s = 0; s < pr->p; ++s)
      for (int c = 0; c < pr->chunks; ++c) {
        const std::int64_t value = chunked[static_cast<size_t>(s * pr->chunks + c)];
        auto& staged = (*figures[f].staged)[static_cast<size_t>(s)];
        differ = differ || (c > 0 && value != staged);
        staged = c == 0 ? value : std::max(staged, value);
      }
  }
  // Chunks alike on every stage are the per-stage problem: one form for one problem.
  if (!differ) pr->per_chunk = {};
  return true;
}

// Every time the simulator forms or a file records is a sum of op times and hops: the largest
// possible iteration (all work done one op after another) must stay where ticks read back exactly,
// with room for an optimizer latency as large beside it (ticks.h: kMaxExactQuanta).
bool check_exact_total(const Problem& pr, const Fail& fail) {
  long double total = 0;
  for (int s = 0; s < pr.p; ++s) {
    long double one = 0;
    for (int c = 0; c < pr.chunks; ++c)
      one += static_cast<long double>(pr.f_time(s, c)) + pr.b_time(s, c) + pr.w_time(s, c);
    total += static_cast<long double>(pr.m) * one;
  }
  total += 2.0L * pr.m * pr.chunks * pr.p * pr.slowest_hop();
  if (total <= static_cast<long double>(kMaxExactQuanta / 2)) return true;
  fail("times too large: one iteration could last " + std::to_string(static_cast<double>(total / kQuantaPerUnit)) +
       " time units (m x chunks x (T_F + T_B + T_W) over the stages, plus the hops), more than the " +
       format_quanta(kMaxExactQuanta / 2) + " a schedule file records exactly: use a larger time unit");
  return false;
}

// The memory limit, one for all stages ("2p" or a number) or one per stage, none below M_B.
bool read_memory_limits(const ProblemInput& in, const std::string& file, Problem* pr, std::vector<Diag>* diags,
                        const Fail& fail) {
  if (!in.mem_limit.empty()) {
    std::string err;
    auto limit = parse_mem_limit(in.mem_limit, pr->p, pr->stage_mem_b(), &err);
    if (!limit) {
      fail(err);
      return false;
    }
    // No schedule can hold less than one microbatch's activations on a stage: each F must keep M_B
    // until its B. Below that the problem is impossible whatever the method.
    Mem need = *std::max_element(pr->mem_b.begin(), pr->mem_b.end());
    if (*limit < need) {
      fail("memory limit " + format_quanta(*limit) + " is below " + format_quanta(need) +
           ", the activation memory of a single microbatch (M_B); no schedule fits");
      return false;
    }
    pr->mem_limit = *limit;
    pr->mem_limit_spec = in.mem_limit;
  }
  if (in.stage_mem_limits.empty()) return true;
  if (!in.mem_limit.empty()) {
    fail("give the memory limit once: as one value for every stage or as a list per stage, not both");
    return false;
  }
  std::vector<Mem> limits;
  if (!per_stage(in.stage_mem_limits, in.p, "mem_limit", true, file, &limits, diags)) return false;
  for (int s = 0; s < pr->p; ++s)
    if (limits[static_cast<size_t>(s)] < pr->mem_b[static_cast<size_t>(s)]) {
      fail("memory limit of stage " + std::to_string(s) + ", " + format_quanta(limits[static_cast<size_t>(s)]) +
           ", is below " + format_quanta(pr->mem_b[static_cast<size_t>(s)]) +
           ", the activation memory of a single microbatch there (M_B); no schedule fits");
      return false;
    }
  // The same value everywhere is one limit: every method plans it.
  if (all_same(limits)) pr->mem_limit = limits[0];
  else pr->stage_mem_limits = std::move(limits);
  return true;
}

}  // namespace

std::optional<Problem> build_problem(const ProblemInput& in, const std::string& file, std::vector<Diag>* diags) {
  const Fail fail = [&](const std::string& msg) { diags->push_back({file, "", -1, -1, "", msg}); };
  if (!check_sizes(in, fail)) return std::nullopt;
  Problem pr;
  pr.p = in.p;
  pr.m = in.m;
  pr.chunks = in.chunks;
  // The placement first: figures given per virtual stage go to the stage and chunk it says.
  if (!read_placement(in, &pr, fail) || !read_figures(in, file, &pr, diags, fail) || !check_exact_total(pr, fail) ||
      !read_memory_limits(in, file, &pr, diags, fail))
    return std::nullopt;
  return pr;
}

namespace {

// Typed readers for JSON fields: each reports the exact pointer of a wrong value.
struct Reader {
  const std::string& file;
  std::vector<Diag>* diags;

  void error(const std::string& pointer, const std::string& msg) { diags->push_back({file, pointer, -1, -1, "", msg}); }

  bool integer(const nlohmann::json& v, const std::string& pointer, int* out) {
    if (!v.is_number_integer()) {
      error(pointer, "expected an integer, got " + json_excerpt(v));
      return false;
    }
    auto x = json_integer(v, -1'000'000'000LL, 1'000'000'000LL);
    if (!x) {
      error(pointer, "integer out of range: " + json_excerpt(v));
      return false;
    }
    *out = static_cast<int>(*x);
    return true;
  }

  bool number_or_list(const nlohmann::json& v, const std::string& pointer, std::vector<double>* out,
                      const char* one_per = "stage") {
    out->clear();
    if (v.is_number()) {
      out->push_back(v.get<double>());
      return true;
    }
    if (v.is_array() && !v.empty()) {
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number()) {
          error(pointer + "/" + std::to_string(i), "expected a number, got " + json_excerpt(v[i]));
          return false;
        }
        out->push_back(v[i].get<double>());
      }
      return true;
    }
    error(pointer, std::string("expected a number or a non-empty list of numbers (one per ") + one_per + "), got " +
                       json_excerpt(v));
    return false;
  }
};

}  // namespace

bool problem_input_from_json(const nlohmann::json& j, const std::string& file, const std::string& pointer,
                             ProblemInput* out, std::vector<Diag>* diags) {
  Reader r{file, diags};
  if (!j.is_object()) {
    r.error(pointer.empty() ? "/" : pointer, "expected a problem object, got " + std::string(j.type_name()));
    return false;
  }
  static const std::set<std::string> known = {"p", "m", "chunks", "placement", "t_f", "t_b", "t_w",
                                              "t_comm", "mem_b", "mem_w", "mem_limit", "$schema", "comment"};
  bool ok = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!known.count(it.key())) {
      r.error(pointer + "/" + it.key(), "unknown field '" + it.key() + "'");
      ok = false;
    }
  }
  for (const char* required : {"p", "m", "t_f", "t_b", "t_w"}) {
    if (!j.contains(required)) {
      r.error(pointer.empty() ? "/" : pointer, std::string("missing required field '") + required + "'");
      ok = false;
    }
  }
  if (!ok) return false;
  ok = r.integer(j["p"], pointer + "/p", &out->p) && ok;
  ok = r.integer(j["m"], pointer + "/m", &out->m) && ok;
  if (j.contains("chunks")) ok = r.integer(j["chunks"], pointer + "/chunks", &out->chunks) && ok;
  ok = r.number_or_list(j["t_f"], pointer + "/t_f", &out->t_f) && ok;
  ok = r.number_or_list(j["t_b"], pointer + "/t_b", &out->t_b) && ok;
  ok = r.number_or_list(j["t_w"], pointer + "/t_w", &out->t_w) && ok;
  if (j.contains("t_comm")) {
    ok = r.number_or_list(j["t_comm"], pointer + "/t_comm", &out->t_comm, "link") && ok;
  }
  if (j.contains("mem_b")) ok = r.number_or_list(j["mem_b"], pointer + "/mem_b", &out->mem_b) && ok;
  if (j.contains("mem_w")) ok = r.number_or_list(j["mem_w"], pointer + "/mem_w", &out->mem_w) && ok;
  if (j.contains("mem_limit")) {
    const auto& v = j["mem_limit"];
    if (v.is_string()) {
      out->mem_limit = v.get<std::string>();
    } else if (v.is_number()) {
      out->mem_limit = v.dump();
    } else if (v.is_array()) {
      ok = r.number_or_list(v, pointer + "/mem_limit", &out->stage_mem_limits) && ok;
    } else if (!v.is_null()) {
      r.error(pointer + "/mem_limit",
              "expected a number, a multiple like \"2p\", a list of one number per stage, or null, got " + json_excerpt(v));
      ok = false;
    }
  }
  if (j.contains("placement")) {
    const auto& v = j["placement"];
    if (!v.is_array()) {
      r.error(pointer + "/placement", "expected a list of lists of virtual stages, got " + json_excerpt(v));
      return false;
    }
    out->placement.clear();
    for (size_t s = 0; s < v.size(); ++s) {
      std::string ps = pointer + "/placement/" + std::to_string(s);
      if (!v[s].is_array()) {
        r.error(ps, "expected a list of virtual stages, got " + json_excerpt(v[s]));
        return false;
      }
      std::vector<int> row;
      for (size_t c = 0; c < v[s].size(); ++c) {
        int vs = 0;
        if (!r.integer(v[s][c], ps + "/" + std::to_string(c), &vs)) return false;
        row.push_back(vs);
      }
      out->placement.push_back(row);
    }
  }
  return ok;
}

namespace {

// A per-stage list written as one number when every stage has the same value.
nlohmann::json compact(const std::vector<std::int64_t>& values) {
  if (all_same(values)) return from_quanta(values[0]);
  nlohmann::json list = nlohmann::json::array();
  for (auto v : values) list.push_back(from_quanta(v));
  return list;
}

}  // namespace

nlohmann::json problem_to_json(const Problem& pr) {
  nlohmann::json j;
  j["p"] = pr.p;
  j["m"] = pr.m;
  j["chunks"] = pr.chunks;
  if (!pr.placement.empty()) j["placement"] = pr.placement;
  // Chunks that differ are written per virtual stage, in virtual-stage order, as they are read.
  auto figure = [&](const std::vector<std::int64_t>& staged, const std::vector<std::int64_t>& chunked) {
    if (!pr.chunks_differ()) return compact(staged);
    const VirtualStageMap map(pr.placement);
    std::vector<std::int64_t> per_vs;
    for (int vs = 0; vs < map.virtual_stages(); ++vs)
      per_vs.push_back(chunked[static_cast<size_t>(map.stage_of[vs] * pr.chunks + map.chunk_of[vs])]);
    return compact(per_vs);
  };
  j["t_f"] = figure(pr.t_f, pr.per_chunk.t_f);
  j["t_b"] = figure(pr.t_b, pr.per_chunk.t_b);
  j["t_w"] = figure(pr.t_w, pr.per_chunk.t_w);
  j["t_comm"] = compact(pr.t_comm);
  j["mem_b"] = figure(pr.mem_b, pr.per_chunk.mem_b);
  j["mem_w"] = figure(pr.mem_w, pr.per_chunk.mem_w);
  if (!pr.stage_mem_limits.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (Mem l : pr.stage_mem_limits) list.push_back(from_quanta(l));
    j["mem_limit"] = list;
  } else if (pr.mem_limit) {
    // Keep the user's form ("2p") so the file reads as it was asked for; plain numbers stay numbers.
    bool multiple = !pr.mem_limit_spec.empty() && pr.mem_limit_spec.back() == 'p';
    if (multiple) j["mem_limit"] = pr.mem_limit_spec;
    else j["mem_limit"] = from_quanta(*pr.mem_limit);
  } else {
    j["mem_limit"] = nullptr;
  }
  return j;
}

Problem split_into_chunks(const Problem& pr, int chunks) {
  Problem out = pr;
  out.chunks = chunks;
  out.placement.clear();
  // Times to the nearest tick; memory rounded down, so the chunks never need more than the stage.
  auto divide = [chunks](std::vector<std::int64_t>& values, bool nearest) {
    for (auto& v : values) v = (v + (nearest ? chunks / 2 : 0)) / chunks;
  };
  divide(out.t_f, true);
  divide(out.t_b, true);
  divide(out.t_w, true);
  divide(out.mem_b, false);
  divide(out.mem_w, false);
  return out;
}

bool load_problem_file(const std::string& path, ProblemInput* out, std::vector<Diag>* diags) {
  std::string text;
  if (!read_text_file(path, &text, diags)) return false;
  auto j = parse_json_text(text, path, diags);
  if (!j) return false;
  return problem_input_from_json(*j, path, "", out, diags);
}

}  // namespace zbpp
