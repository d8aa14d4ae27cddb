// The schedule IR: for each stage, the ordered list of ops it runs in one iteration.
// Plain values only (no times, no pointers): times live in the simulator's Timeline.
// Short text form of an op, used in messages, tests and CSVs: "F5", "B5", "W5", "BW5",
// with ":c" appended for chunk c > 0 ("F5:1").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zbpp {

/// Op kinds, spelled as in the schedule file. F/B/W/BW are compute; the rest are added by lowering.
enum class OpType { F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B, OPT_STEP };

struct Op {
  OpType type = OpType::F;
  int mb = 0;      ///< microbatch, 0-based
  int chunk = 0;   ///< model chunk on this stage, 0-based
  int peer = -1;   ///< for send/recv: the other rank; -1 otherwise
  int slot = -1;   ///< activation buffer slot assigned by lowering; -1 when not lowered
  bool operator==(const Op& o) const {
    return type == o.type && mb == o.mb && chunk == o.chunk && peer == o.peer && slot == o.slot;
  }
};

inline bool is_compute(OpType t) { return t == OpType::F || t == OpType::B || t == OpType::W || t == OpType::BW; }
std::string op_type_name(OpType t);
std::optional<OpType> parse_op_type(std::string_view name);

/// "F5", "W5:1".
std::string op_short(const Op& op);
/// Parses one short form; on error returns nothing and sets *err.
std::optional<Op> parse_op(std::string_view text, std::string* err);
/// Parses a whitespace-separated list of short forms ("F0 F1 B0 W0").
std::optional<std::vector<Op>> parse_ops(std::string_view text, std::string* err);

/// Which stage runs virtual stage vs, and as which chunk: built from a placement.
struct VirtualStageMap {
  std::vector<int> stage_of;                ///< [vs] -> stage
  std::vector<int> chunk_of;                ///< [vs] -> chunk on that stage
  std::vector<std::vector<int>> placement;  ///< [stage][chunk] -> vs
  explicit VirtualStageMap(const std::vector<std::vector<int>>& placement);
  int virtual_stages() const { return static_cast<int>(stage_of.size()); }
  int vs(int stage, int chunk) const { return placement[stage][chunk]; }
};

/// Whether a schedule holds compute ops only, or also the runtime's instructions.
inline const char* const kLevelCompute = "compute";
inline const char* const kLevelLowered = "lowered";

struct Schedule {
  int p = 0;
  int m = 0;
  int chunks = 1;
  std::vector<std::vector<int>> placement;  ///< [stage][chunk] -> virtual stage
  std::string level = kLevelCompute;
  std::string method;                       ///< which generator or pass produced it
  std::vector<std::vector<Op>> stages;      ///< [stage] -> ops in execution order
};

/// A schedule from one short-form string per stage, for tests and examples.
std::optional<Schedule> schedule_from_strings(const std::vector<std::string>& stages, int m, int chunks,
                                              const std::vector<std::vector<int>>& placement, std::string* err);

}  // namespace zbpp
