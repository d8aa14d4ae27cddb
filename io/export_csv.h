// PyTorch torch.distributed.pipelining schedule CSVs: one row per rank, one action per cell in
// PyTorch's short form "<stage><type><microbatch>", e.g. "0F0,0I0,0W0" (names: pytorch_actions.h).
// The export; the import is io/import_csv.h.
#pragma once

#include <string>

#include "core/ir.h"

namespace zbpp {

/// The compute ops of `schedule` as a PyTorch CSV (communication and optimizer ops are left out:
/// PyTorch adds its own).
std::string export_pytorch_csv(const Schedule& schedule);

}  // namespace zbpp
