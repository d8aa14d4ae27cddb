// zbplan's flag groups, each bound to a subcommand's flags: how iterations follow each other
// (IterationFlags: plan, import, simulate, show) and the problem (ProblemFlags: plan, import), with
// what they build for the library (LowerOptions, IterationOptions, ProblemInput).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/cli_file_name.h"
#include "cli/cli_numbers.h"
#include "core/problem.h"
#include "core/schedule_json.h"
#include "core/simulate.h"
#include "core/simulate_iterations.h"
#include "planner/lower.h"

namespace zbpp::zbplan {

// How iterations follow each other in a lowered schedule: the optimizer mode (plan, import) and
// the latencies of its messages (plan, import, simulate).
struct IterationFlags {
  std::string optimizer = optimizer_name(Optimizer::kPostValidation);
  std::string post_validation_at = "first-backward";
  std::string objective;  ///< empty: period with post-validation, wall with sync
  bool optimizer_given = false;  ///< --optimizer or --post-validation-at given (else auto may choose them)
  int iterations = 3;
  double state_latency = -1, allreduce_latency = -1;

  // `drawn`: show's --iterations, which draws that many iterations (one when not given).
  void add_to(CLI::App* app, bool with_optimizer, bool drawn = false) {
    if (with_optimizer)
      app->add_option("--optimizer", optimizer,
                      "post-validation (each stage steps under the partial gradient state passed forward and is "
                      "post-validated, rolled back if need be, in the next iteration; paper section 4) or sync (one "
                      "all-reduce before every stage steps)")
          ->transform(one_of({optimizer_name(Optimizer::kPostValidation), optimizer_name(Optimizer::kSync)}, "optimizer"));
    if (with_optimizer)
      app->add_option("--objective", objective,
                      "what heuristic, ilp and auto minimise: period (the steady-state time per iteration of "
                      "iterations back to back; the default with post-validation) or wall (one iteration alone, first "
                      "op to last optimizer step; the default with --optimizer sync)")
          ->transform(one_of({"period", "wall"}, "objective"));
    if (with_optimizer) {
      const CLI::Validator place = one_of({"first-backward", "start"}, "place");
      CLI::Option* current =
          app->add_option("--post-validation-at", post_validation_at,
                          "post-validation: where each stage post-validates its previous step: first-backward (the "
                          "warm-up forwards run speculatively and are replayed after a rollback) or start (hold the "
                          "first forward until post-validated; for comparison)")
              ->transform(place);
      // The old spelling, kept working but not shown: "validate" now means the schedule checker only.
      app->add_option("--validate-at", post_validation_at, "deprecated spelling of --post-validation-at")
          ->transform(place)
          ->excludes(current)
          ->group("");
    }
    if (drawn)
      app->add_option("--iterations", iterations,
                      "draw K iterations back to back, timed by the K-iteration simulation (default: one iteration "
                      "alone); needs a lowered file")
          ->check(integer_in(2, 100))
          ->option_text("K")
          ->default_str("");
    else
      app->add_option("--iterations", iterations, "iterations simulated back to back for the period")
          ->check(integer_in(2, 100));
    // At most half the exact range (ticks.h), the other half being the iteration's.
    app->add_option("--state-latency", state_latency,
                    "time of one optimizer-state message between neighbours (default the slowest link's T_comm)")
        ->check(real_in(0, 5e8))
        ->default_str("");
    app->add_option("--allreduce-latency", allreduce_latency,
                    "time of the synchronous optimizer's all-reduce (default 2*ceil(log2 p)*the slowest T_comm)")
        ->check(real_in(0, 5e8))
        ->default_str("");
  }

  Objective objective_or_default() const {
    if (!objective.empty()) return objective == "wall" ? Objective::kWall : Objective::kPeriod;
    return optimizer == optimizer_name(Optimizer::kSync) ? Objective::kWall : Objective::kPeriod;
  }

  LowerOptions lower_options() const {
    return {parse_optimizer(optimizer).value_or(Optimizer::kPostValidation),
            post_validation_at == "start" ? PostValidationAt::kStart : PostValidationAt::kFirstBackward};
  }

  /// `op_times`: keep every op's times (show draws them), or the figures only.
  IterationOptions options(bool op_times = true) const {
    IterationOptions o;
    o.op_times = op_times;
    o.iterations = iterations;
    if (state_latency >= 0) o.state_latency = *to_quanta(state_latency);
    if (allreduce_latency >= 0) o.allreduce_latency = *to_quanta(allreduce_latency);
    return o;
  }
};

// Problem flags shared by `plan` (and, later, other subcommands that take a problem).
struct ProblemFlags {
  std::string problem_file;
  std::string layers_file;  ///< plan --layers: times and memory from layer costs, the partition searched
  std::string partition;    ///< plan --partition: with --layers, these layer counts per stage, not searched
  std::string device_memory;  ///< plan --device-memory: with --layers, bytes per device ("80GiB" or a list)
  static constexpr int kUnset = std::numeric_limits<int>::min();  // flag not given: keep the file's value
  int p = kUnset, m = kUnset, chunks = kUnset;
  std::string tf, tb, tw, tcomm, mem_b, mem_w, mem_limit, placement;
  bool require_times = true;  ///< plan needs real times; import may use placeholders

  void add_to(CLI::App* app) {
    app->add_option("--problem", problem_file, "problem JSON file (schema/problem.schema.json); flags override it")->check(file_name());
    // The problem's own checks (p >= 1, t_f > 0, ...) come after, with the file's: these check the form.
    const auto whole = integer_in(std::numeric_limits<int>::min() + 1, std::numeric_limits<int>::max());
    // -p, -m, --tf, --tb and --tw are required without --problem (ProblemFlags::missing).
    app->add_option("-p,--stages", p, "pipeline stages (without --problem: required)")->check(whole)->default_str("");
    app->add_option("-m,--microbatches", m, "microbatches per iteration (without --problem: required)")
        ->check(whole)
        ->default_str("");
    add_times(app, "time of one F: one number, or one per stage \"a,b,c,...\" (without --problem: required)",
              "time of one B (input gradient), as --tf", "time of one W (weight gradient), as --tf",
              "latency of one hop between neighbouring stages: one number, one per link \"a,b,...\" (p - 1: link s joins "
              "stages s and s+1), or p with the last for stage p-1 back to 0 (default 0)",
              "activation memory one F adds (M_B), as --tf (default 1)",
              "memory kept from B until W (M_W), as --tf (default 0.5)",
              "activation memory limit per stage: a number, or a multiple of p*M_B like 1p, 1.5p, 2p (default: none)");
    app->add_option("--chunks", chunks, "model chunks per stage (interleaved schedules; default 1)")
        ->check(whole)
        ->default_str("");
    app->add_option("--layers", layers_file,
                    "layer-cost file (schema/layers.schema.json, e.g. from zbrun --profile-layers): choose each "
                    "(virtual) stage's layers with the schedule; times and memory come from it, memory in MiB")
        ->check(file_name());
    app->add_option("--partition", partition,
                    "with --layers: plan these layers per (virtual) stage (counts \"a,b,...\" of the file's layers) instead of "
                    "searching")
        ->check(integer_list_in(1, 1'000'000));
    app->add_option("--device-memory", device_memory,
                    "with --layers: each device's memory, e.g. 80GiB, or one per stage \"80GiB,80GiB,40GiB,80GiB\"; a "
                    "stage's activation limit is it less the parameters, gradients and optimizer state of its layers")
        ->option_text("BYTES");
    app->add_option("--placement", placement,
                    "which virtual stages each stage holds: v (2 chunks: stage r holds r and 2p-1-r) or interleaved "
                    "(stage s holds s, s+p, ...); default: the method's own (heuristic with 2 chunks: v)")
        ->check(CLI::IsMember({"v", "interleaved"}));
  }

  // The flags a problem needs when no --problem file gives it, those missing: "-m and --tw".
  std::string missing() const {
    if (!problem_file.empty()) return "";
    std::vector<std::string> names;
    if (p == kUnset) names.push_back("-p (stages)");
    if (m == kUnset) names.push_back("-m (microbatches)");
    if (require_times && layers_file.empty()) {
      if (tf.empty()) names.push_back("--tf");
      if (tb.empty()) names.push_back("--tb");
      if (tw.empty()) names.push_back("--tw");
    }
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
      out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
  }

  // The flags plan and import share (import's help is shorter: the CSV gives the shape).
  void add_times(CLI::App* app, const char* tf_help, const char* tb_help, const char* tw_help, const char* tcomm_help,
                 const char* mem_b_help, const char* mem_w_help, const char* mem_limit_help) {
    const auto list = real_list_in(-kAnyReal, kAnyReal);
    app->add_option("--tf", tf, tf_help)->check(list);
    app->add_option("--tb", tb, tb_help)->check(list);
    app->add_option("--tw", tw, tw_help)->check(list);
    app->add_option("--tcomm", tcomm, tcomm_help)->check(list);
    app->add_option("--mem-b", mem_b, mem_b_help)->check(list);
    app->add_option("--mem-w", mem_w, mem_w_help)->check(list);
    app->add_option("--mem-limit", mem_limit, mem_limit_help)->transform(memory_limit_value());
  }

  // --mem-limit: a number, or a multiple of p*M_B ("2p", "2P"), read by the one number parser;
  // whether it is big enough is the problem's check.
  static CLI::Validator memory_limit_value() {
    return CLI::Validator(
        [](std::string& text) {
          const bool multiple = !text.empty() && (text.back() == 'p' || text.back() == 'P');
          double v = 0;
          if (!parse_real(multiple ? text.substr(0, text.size() - 1) : text, -kAnyReal, kAnyReal, false, &v).empty())
            return "'" + text + "' is neither a number nor a multiple of p*M_B like 1p, 1.5p or 2p";
          if (v <= 0) return "'" + text + "' must be above 0";
          if (multiple) text.back() = 'p';
          return std::string();
        },
        "LIMIT");
  }

  // Fills a ProblemInput from the file (if any) and the flags; false with diagnostics.
  bool to_input(ProblemInput* in, std::vector<Diag>* diags) const {
    if (!problem_file.empty() && !load_problem_file(problem_file, in, diags)) return false;
    if (p != kUnset) in->p = p;
    if (m != kUnset) in->m = m;
    if (chunks != kUnset) in->chunks = chunks;
    bool ok = true;
    // The placement is built once p and chunks are known; build_problem checks those first.
    if (!placement.empty() && in->p >= 1 && in->p <= kMaxStages && in->chunks >= 1 && in->chunks <= kMaxChunks) {
      if (placement == "v" && in->chunks != 2) {
        diags->push_back({"", "", -1, -1, "", "--placement v holds 2 chunks per stage (stage r: virtual stages r and "
                                              "2p-1-r): give --chunks 2 (the problem has chunks = " +
                                              std::to_string(in->chunks) + ")"});
        ok = false;
      } else {
        in->placement = placement == "v" ? v_shape_placement(in->p) : interleaved_placement(in->p, in->chunks);
      }
    }
    auto list = [&](const std::string& text, const char* flag, std::vector<double>* target) {
      if (text.empty()) return;
      // Checked when the command line was parsed (real_list_in); this reads the same way.
      if (std::string bad = parse_real_list(text, -kAnyReal, kAnyReal, target); !bad.empty()) {
        diags->push_back({"", "", -1, -1, "", std::string(flag) + ": " + bad});
        ok = false;
      }
    };
    list(tf, "--tf", &in->t_f);
    list(tb, "--tb", &in->t_b);
    list(tw, "--tw", &in->t_w);
    list(mem_b, "--mem-b", &in->mem_b);
    list(mem_w, "--mem-w", &in->mem_w);
    list(tcomm, "--tcomm", &in->t_comm);
    if (!mem_limit.empty()) in->mem_limit = mem_limit;
    return ok;
  }
};

}  // namespace zbpp::zbplan
