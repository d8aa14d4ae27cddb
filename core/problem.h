// The planning problem: pipeline shape, profiled op times, activation memory and the memory limit.
// ProblemInput holds what the user wrote (flags or a problem JSON file); build_problem() checks it
// and turns it into a Problem in exact integer units (core/ticks.h).
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/diag.h"
#include "core/json_text.h"  // json_excerpt, json_integer: what the readers of problems and files say
#include "core/ticks.h"

namespace zbpp {

/// The largest problem build_problem accepts (a CSV import checks its cells against them too).
inline constexpr int kMaxStages = 4096, kMaxMicrobatches = 1'000'000, kMaxChunks = 64;

/// Whether every entry of `v` is the same (true when empty).
template <typename T>
bool all_same(const std::vector<T>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

/// What the user gave, before checks. Lists of length 1 are broadcast to every stage.
struct ProblemInput {
  int p = 0;                                 ///< pipeline stages (ranks)
  int m = 0;                                 ///< microbatches per iteration
  int chunks = 1;                            ///< model chunks per stage (v); 1 for plain pipelines
  std::vector<std::vector<int>> placement;   ///< optional: placement[stage][chunk] = virtual stage
  /// Time of one op of one chunk: one value, one per stage, or (chunks > 1, with a placement) one per
  /// virtual stage, in virtual-stage order (a partition of layers into virtual stages gives those).
  std::vector<double> t_f{1.0}, t_b{1.0}, t_w{1.0};
  /// Latency of one hop between two stages: one value for every hop, one per link between neighbours
  /// (p - 1 values, link s joins stages s and s + 1), or p values where the last is the link that
  /// joins stage p - 1 back to stage 0 (interleaved placements send over it). A hop between stages
  /// that are not neighbours takes that last link; without it, the slowest link listed.
  std::vector<double> t_comm{0.0};
  std::vector<double> mem_b{1.0};            ///< activation memory one F adds (per chunk op); listed as the times
  std::vector<double> mem_w{0.5};            ///< memory kept after B until W (per chunk op); listed as the times
  std::string mem_limit;                     ///< "" (none), an absolute value ("12.5") or a multiple of p*M_B ("2p")
  std::vector<double> stage_mem_limits;      ///< or a limit per stage (p values), e.g. device memory less static bytes
};

/// A checked problem in exact units. Per-stage vectors have exactly p entries.
struct Problem {
  int p = 0;
  int m = 0;
  int chunks = 1;
  std::vector<std::vector<int>> placement;  ///< empty: the method chooses; else placement[stage][chunk]
  /// Per stage, one op of one chunk. Where a stage's chunks differ (per_chunk), the largest over its
  /// chunks: what a generator budgets with stays on the safe side (the bounds relax to the least).
  std::vector<Ticks> t_f, t_b, t_w;
  std::vector<Ticks> t_comm;                ///< p links: [s] joins s and s + 1, [p - 1] the rest (see ProblemInput)
  std::vector<Mem> mem_b, mem_w;            ///< per stage, one op of one chunk (the largest, as the times)
  /// Where the chunks of a stage differ (times given per virtual stage): each figure per (stage,
  /// chunk), at [stage * chunks + chunk]; empty where every chunk takes its stage's figures.
  struct PerChunk {
    std::vector<Ticks> t_f, t_b, t_w;
    std::vector<Mem> mem_b, mem_w;
  } per_chunk;
  std::optional<Mem> mem_limit;             ///< the same absolute limit on every stage; none = see stage_mem_limits
  std::vector<Mem> stage_mem_limits;        ///< per stage where limits differ (p entries; mem_limit then empty)
  std::string mem_limit_spec;               ///< the limit as the user wrote it, kept for the file

  /// Stage s's activation memory limit, whichever way it was given; none = unlimited.
  std::optional<Mem> limit(int stage) const {
    if (!stage_mem_limits.empty()) return stage_mem_limits[static_cast<size_t>(stage)];
    return mem_limit;
  }
  /// Whether any stage has a limit.
  bool limited() const { return mem_limit || !stage_mem_limits.empty(); }

  int virtual_stages() const { return p * chunks; }
  /// Latency of a message from stage `from` to stage `to`: 0 on the same stage, the link between
  /// neighbours, else the last link (the wrap from p - 1 to 0 and any other jump).
  Ticks hop(int from, int to) const {
    if (from == to) return 0;
    const int lo = std::min(from, to);
    return t_comm[static_cast<size_t>(std::max(from, to) - lo == 1 ? lo : p - 1)];
  }
  /// The slowest link: what a latency that is not tied to one pair of stages assumes.
  Ticks slowest_hop() const { return *std::max_element(t_comm.begin(), t_comm.end()); }
  /// Whether every link has the same latency.
  bool uniform_hops() const { return all_same(t_comm); }
  /// The figures one op of `chunk` on `stage` takes: deps.h's op_duration and memory_delta ask here.
  bool chunks_differ() const { return !per_chunk.t_f.empty(); }
  Ticks f_time(int stage, int chunk) const { return at(per_chunk.t_f, t_f, stage, chunk); }
  Ticks b_time(int stage, int chunk) const { return at(per_chunk.t_b, t_b, stage, chunk); }
  Ticks w_time(int stage, int chunk) const { return at(per_chunk.t_w, t_w, stage, chunk); }
  Mem b_mem(int stage, int chunk) const { return at(per_chunk.mem_b, mem_b, stage, chunk); }
  Mem w_mem(int stage, int chunk) const { return at(per_chunk.mem_w, mem_w, stage, chunk); }
  /// The same problem with every chunk of a stage at its stage's least figures: no schedule of it
  /// costs more, or needs more memory, than the same schedule of this one (the bounds hold for both).
  Problem least_chunks() const;
  /// The reference activation memory of one microbatch on one stage (all chunks): the unit of "Np".
  Mem stage_mem_b() const;
  /// Time stage s spends computing in one iteration: m * chunks * (T_F + T_B + T_W).
  Ticks busy_time(int stage) const;
  /// Whether every stage (and every chunk) takes the same T_F, the same T_B and the same T_W.
  bool uniform_times() const;

 private:
  template <typename T>
  T at(const std::vector<T>& chunked, const std::vector<T>& staged, int stage, int chunk) const {
    return chunked.empty() ? staged[static_cast<size_t>(stage)] : chunked[static_cast<size_t>(stage * chunks + chunk)];
  }
};

/// Checks the input and converts it. On failure returns nothing and appends located diagnostics
/// (`file` names where the input came from: a path, or "" for command-line flags).
std::optional<Problem> build_problem(const ProblemInput& in, const std::string& file, std::vector<Diag>* diags);

/// Reads a problem object (the format of schema/problem.schema.json). Type errors name the JSON pointer.
bool problem_input_from_json(const nlohmann::json& j, const std::string& file, const std::string& pointer,
                             ProblemInput* out, std::vector<Diag>* diags);
/// Reads a problem file from disk (schema/problem.schema.json) into a ProblemInput.
bool load_problem_file(const std::string& path, ProblemInput* out, std::vector<Diag>* diags);
/// Writes a problem back in the same format, exactly (times and memory as their exact decimals).
nlohmann::json problem_to_json(const Problem& problem);

/// The placements the baseline methods use: interleaved [s, s+p, ...] and V-shape [s, 2p-1-s].
std::vector<std::vector<int>> interleaved_placement(int p, int chunks);
std::vector<std::vector<int>> v_shape_placement(int p);

/// Whether text is a plain decimal number ("12", "-0.5", "1e-3"): no hex, inf, nan or spaces.
bool is_decimal(const std::string& text);

/// The memory limit as messages show it: "8 = 1p" where it was given as a multiple of p, else "8";
/// "none" without one.
std::string mem_limit_text(const Problem& problem);

/// Parses a memory limit: "2p", "1.5p" (times p * stage_mem_b) or an absolute number.
/// Returns nothing and sets *err on a malformed text.
std::optional<Mem> parse_mem_limit(const std::string& text, int p, Mem stage_mem_b, std::string* err);

/// The same problem with each stage split into `chunks` equal chunks: per-op times and memory
/// divided by `chunks` (to the nearest tick/quantum), the memory limit unchanged. Not for a
/// problem whose chunks already differ.
Problem split_into_chunks(const Problem& problem, int chunks);

}  // namespace zbpp
