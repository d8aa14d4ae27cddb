// The methods `zbplan plan --method` knows: one table (methods.cpp) that the pass list
// (pipeline.cpp), auto's candidates (plan_auto.cpp), the partition search (partition.cpp), zbplan's
// --help, its did-you-mean and `zbplan methods` all read. A new generator is its own files, a row
// of the table and its test (docs/architecture.md, "Adding a schedule generator").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/problem.h"
#include "planner/deadline.h"

namespace zbpp {

/// How a method places model chunks on the stages.
enum class Placing {
  kOneChunk,     ///< one chunk per stage
  kInterleaved,  ///< C >= 2 chunks, stage s holding virtual stages s, s+p, ... (auto splits into 2)
  kV,            ///< 2 chunks, stage r holding virtual stages r and 2p-1-r; a one-chunk problem is split in halves
  kAsGiven,      ///< one chunk per stage; with --chunks, the V (the default) or --placement interleaved
  kEvery,        ///< auto: each method's own, and the interleaved placement
};

/// What a method runs.
enum class Runs {
  kGenerator,  ///< a fixed order: Method::generator
  kSearch,     ///< a search under the memory limit: the one-chunk grid, the V search or the interleaved search
  kSearchIlp,  ///< the search's pick refined by the ILP in CBC
  kAuto,       ///< every other method, keeping the best by the objective
};

/// A fixed-order generator: the schedule for a problem it can take (the table's placing checked
/// first), or nothing with the reason in *why.
using Generator = std::optional<Schedule> (*)(const Problem& problem, std::string* why, const Deadline& deadline);

struct Method {
  const char* name;      ///< as --method takes it (any case) and the schedule file records it
  Placing placing;
  Runs runs;
  Generator generator;   ///< Runs::kGenerator only
  const char* memory;    ///< its activation memory, in words
  const char* what;      ///< what it is, one line
};

/// The paper's names for the heuristic at a memory limit (§3.1): ZB-1p, ZB-2p.
struct MethodAlias {
  const char* name;
  const char* method;     ///< what it runs
  const char* mem_limit;  ///< the --mem-limit it implies
};

/// Every method, in the order --help and `zbplan methods` list them (auto last).
const std::vector<Method>& methods();
const std::vector<MethodAlias>& method_aliases();
/// The method of that name (exact spelling), or null.
const Method* find_method(const std::string& name);
/// The methods' names in table order.
const std::vector<std::string>& plan_methods();

/// The methods that run the V placement; a one-chunk problem is split into 2 chunks for them.
bool is_v_method(const std::string& method);
/// The methods that refine their search's pick with the ILP.
bool is_ilp(const std::string& method);
/// Whether `m` plans one chunk per stage (the partition search gives each stage one range of layers).
bool plans_one_chunk(const Method& m);
/// "1f1b-i interleaves chunks: give --chunks V with V >= 2": what an interleaving method says of a
/// problem without chunks to interleave.
std::string interleaves_chunks_text(const std::string& method);
/// "one chunk per stage", "V (2 chunks)", ...: a placing in words.
const char* placing_name(Placing placing);
/// "generator", "search", ...: what a method runs, in words.
const char* runs_name(Runs runs);

}  // namespace zbpp
