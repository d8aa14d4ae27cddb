// PyTorch torch.distributed.pipelining schedule CSVs: one row per rank, one action per cell in
// PyTorch's short form "<stage><type><microbatch>", e.g. "0F0,0I0,0W0". Names differ from ours,
// and are mapped only here: PyTorch's I (input gradient) is our B, its B (full backward) is our BW,
// its W is our W, and its stage index is our virtual stage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/diag.h"
#include "planner/ir.h"

namespace zbpp {

/// The compute ops of `schedule` as a PyTorch CSV (communication and optimizer ops are left out:
/// PyTorch adds its own).
std::string export_pytorch_csv(const Schedule& schedule);

/// Reads a PyTorch CSV into a compute schedule: rank r's row becomes stage r, each rank's virtual
/// stages (ascending) become its chunks, m is the largest microbatch + 1. Errors name the row and
/// cell ("s.csv: row 2, cell 5 ('1X3'): ...").
std::optional<Schedule> import_pytorch_csv(const std::string& text, const std::string& file, std::vector<Diag>* diags);

/// For an imported schedule that validated: whether every rank consumes the activations and
/// gradients another rank sends it in the order they are sent. zbrun pairs the n-th send between
/// two ranks with the n-th receive, so a CSV that, say, sends 1I1 before 1I0 to a rank that runs
/// 0I0 first cannot be lowered; false with a diagnostic naming both actions otherwise.
bool check_message_order(const Schedule& imported, const std::string& file, std::vector<Diag>* diags);

}  // namespace zbpp
