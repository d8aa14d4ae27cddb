// The dependency, duration and memory rule of every op (see deps.h).
#include "planner/deps.h"

namespace zbpp {

std::optional<Dependency> dependency_of(const Op& op, int stage, const VirtualStageMap& map) {
  int vs = map.vs(stage, op.chunk);
  int last = map.virtual_stages() - 1;
  auto from = [&](Product what, int producer_vs) {
    return Dependency{what, producer_vs, op.mb, map.stage_of[producer_vs] != stage};
  };
  switch (op.type) {
    case OpType::F:
      if (vs == 0) return std::nullopt;
      return from(Product::Forward, vs - 1);
    case OpType::B:
    case OpType::BW:
      if (vs == last) return from(Product::Forward, vs);
      return from(Product::InputGrad, vs + 1);
    case OpType::W:
      return from(Product::InputGrad, vs);
    default:
      return std::nullopt;
  }
}

std::optional<Product> product_of(OpType type) {
  switch (type) {
    case OpType::F: return Product::Forward;
    case OpType::B:
    case OpType::BW: return Product::InputGrad;
    default: return std::nullopt;
  }
}

Ticks op_duration(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.t_f[stage];
    case OpType::B: return problem.t_b[stage];
    case OpType::W: return problem.t_w[stage];
    case OpType::BW: return problem.t_b[stage] + problem.t_w[stage];
    default: return 0;
  }
}

Mem memory_delta(const Op& op, int stage, const Problem& problem) {
  switch (op.type) {
    case OpType::F: return problem.mem_b[stage];
    case OpType::B: return problem.mem_w[stage] - problem.mem_b[stage];
    case OpType::W: return -problem.mem_w[stage];
    case OpType::BW: return -problem.mem_b[stage];
    default: return 0;
  }
}

}  // namespace zbpp
