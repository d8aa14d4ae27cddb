// PyTorch torch.distributed.pipelining schedule CSVs read into schedules (the export is
// io/export_csv.h; the names, io/pytorch_actions.h). Import reads every CSV PyTorch's _dump_csv
// writes, as its reader (csv.reader, _Action.from_str) reads it: cells may be quoted and padded with whitespace; an empty cell is an idle step. Besides
// F/I/B/W it takes PyTorch's other actions:
// - "(0F7;7B3)OVERLAP_F_B" (DualPipe-V): the actions in the parentheses, run one after the other;
// - REDUCE_GRAD, UNSHARD, RESHARD (gradient reduction, FSDP): ignored, with a note; a
//   REDUCE_GRAD before the last backward of its stage is refused (PyTorch would reduce a partial
//   gradient);
// - SEND_F, RECV_F, SEND_B, RECV_B (the "compute_comms" format): checked against the messages our
//   lowering sends (check_message_cells), then dropped; the schedule is lowered again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/diag.h"
#include "core/ir.h"

namespace zbpp {

/// A PyTorch CSV read into a compute schedule, with where each op came from.
struct CsvImport {
  /// One SEND_F/RECV_F/SEND_B/RECV_B cell: its place and what it names.
  struct Message {
    int rank = 0, step = 0;
    OpType type = OpType::SEND_F;
    int vs = 0, mb = 0;
  };
  Schedule schedule;                           ///< the compute ops (level "compute", method "pytorch-csv")
  std::vector<std::vector<std::string>> cells;  ///< [rank][step]: every cell as read (unquoted)
  std::vector<std::vector<int>> step_of;        ///< [rank][op]: the step (column) the op was read from
  std::vector<Message> messages;                ///< communication cells, in file order
  std::vector<std::string> notes;               ///< what was read but not kept as an op, for the user
};

/// Reads a PyTorch CSV: rank r's row becomes stage r, each rank's virtual stages (ascending) become
/// its chunks, m is the largest microbatch + 1. Errors name the file, row (rank), column (step)
/// and cell and say what is accepted ("s.csv: row 1 (rank 0), column 2 (step 1), cell '0X1': ...").
std::optional<CsvImport> import_pytorch_csv(const std::string& text, const std::string& file,
                                            std::vector<Diag>* diags);

/// For an imported schedule that passed validate_but_message_order (core/validate.h): whether every
/// rank consumes the activations and gradients another rank sends it in the order they are sent
/// (core/message_order.h). zbrun pairs the n-th send between two ranks with the n-th receive, so a
/// CSV that, say, sends 1I1 before 1I0 to a rank that runs 0I0 first cannot be lowered, nor read
/// back by the validator; false with a diagnostic naming both actions' cells otherwise.
bool check_message_order(const CsvImport& imported, const std::string& file, std::vector<Diag>* diags);

/// For an imported schedule that validated, and whose CSV has communication cells: whether they
/// are exactly the messages our lowering sends (one SEND and one RECV for each activation or
/// gradient that crosses to another rank, none within a rank), each SEND after the action that
/// makes what it sends and each RECV before the action that needs it, and the receives from a rank
/// in the order that rank sends. False with a diagnostic naming the cell otherwise.
bool check_message_cells(const CsvImport& imported, const std::string& file, std::vector<Diag>* diags);

}  // namespace zbpp
