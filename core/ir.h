// The schedule IR: for each stage, the ordered list of ops it runs in one iteration.
// Plain values only (no times, no pointers): times live in the simulator's Timeline.
// Short text form of an op, used in messages, tests and CSVs: "F5", "B5", "W5", "BW5",
// with ":c" appended for chunk c > 0 ("F5:1").
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zbpp {

/// Op kinds, spelled as in the schedule file. F/B/W/BW are compute; the rest are added by lowering.
/// The optimizer's ops: OPT_STEP ends every stage. With post-validation (paper §4) the partial
/// gradient state travels forward before it (RECV_STATE, SEND_STATE) and the full state travels
/// back in the next iteration (RECV_VALID, SEND_VALID) to VALIDATE, which checks the previous
/// step and rolls it back and redoes it when the partial state misled it. The *_VALID/VALIDATE
/// names mirror the file's spelling: they are post-validation's ops, not the schedule validator.
enum class OpType {
  F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B, OPT_STEP,
  SEND_STATE, RECV_STATE, SEND_VALID, RECV_VALID, VALIDATE
};

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
/// Ops of the optimizer, which belong to no microbatch.
inline bool is_optimizer_op(OpType t) { return t >= OpType::OPT_STEP; }
inline bool is_send(OpType t) { return t == OpType::SEND_F || t == OpType::SEND_B || t == OpType::SEND_STATE || t == OpType::SEND_VALID; }
inline bool is_recv(OpType t) { return t == OpType::RECV_F || t == OpType::RECV_B || t == OpType::RECV_STATE || t == OpType::RECV_VALID; }
/// What a message carries, its channel: activations flow forward (F), input gradients backward
/// (B); with optimizer post-validation the partial gradient state flows forward and the full state
/// back. Messages of one kind between two ranks pair up in order. The planner's replay, the
/// validator and the runtime's transports all use these values.
enum MessageKind { kActivation = 0, kGradient = 1, kPartialState = 2, kFullState = 3 };
inline constexpr int kMessageKinds = 4;
/// The kind of message a send or receive moves.
inline MessageKind message_kind(OpType t) {
  switch (t) {
    case OpType::SEND_F: case OpType::RECV_F: return kActivation;
    case OpType::SEND_B: case OpType::RECV_B: return kGradient;
    case OpType::SEND_STATE: case OpType::RECV_STATE: return kPartialState;
    default: return kFullState;
  }
}
std::string op_type_name(OpType t);
/// The same without a copy, for writers of many ops.
std::string_view op_type_text(OpType t);
/// "F, B, W, BW, ... or VALIDATE", for messages.
std::string op_type_list();
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

/// Whether a schedule holds compute ops only, or also the runtime's instructions ("level" in the file).
enum class Level { kCompute, kLowered };
/// "compute" or "lowered", as the file spells it.
const char* level_name(Level level);
std::optional<Level> parse_level(std::string_view name);

/// How a lowered schedule's optimizer steps: one all-reduce before every stage steps, or
/// speculative steps under the partial state with post-validation (paper §4).
enum class Optimizer { kSync, kPostValidation };
/// "sync" or "post-validation", as the file and --optimizer spell it.
const char* optimizer_name(Optimizer optimizer);
std::optional<Optimizer> parse_optimizer(std::string_view name);
/// Both print by name (test messages, logs).
std::ostream& operator<<(std::ostream& out, Level level);
std::ostream& operator<<(std::ostream& out, Optimizer optimizer);

struct Schedule {
  int p = 0;
  int m = 0;
  int chunks = 1;
  std::vector<std::vector<int>> placement;  ///< [stage][chunk] -> virtual stage
  Level level = Level::kCompute;
  std::string method;                       ///< which generator or pass produced it
  Optimizer optimizer = Optimizer::kSync;   ///< lowered schedules only
  std::vector<std::vector<Op>> stages;      ///< [stage] -> ops in execution order

  /// Every field but the ops (p empty stages): passes that rebuild the ops copy no op twice.
  Schedule without_ops() const;
};

/// A schedule from one short-form string per stage, for tests and examples.
std::optional<Schedule> schedule_from_strings(const std::vector<std::string>& stages, int m, int chunks,
                                              const std::vector<std::vector<int>>& placement, std::string* err);

}  // namespace zbpp
