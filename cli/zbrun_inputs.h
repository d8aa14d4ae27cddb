// zbrun's inputs: its flags (add_flags), their own checks (check_flags), and the checks of what
// a run reads and writes (check_inputs: schedule, model, data, outputs, ranks), all done before
// anything trains. The driving is zbrun_cli.cpp's.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/schedule_json.h"
#include "core/simulate.h"
#include "runtime/data.h"
#include "runtime/model.h"
#include "runtime/trainer.h"

namespace zbpp::zbrun {

struct Options {
  std::string schedule_file, model = "tiny", data = "synthetic", metrics, trace, profile;
  bool local = false, quiet = false;
  bool check = false;  ///< check every input, say what would run, and stop before training
  Backend backend = Backend::kCpu;
  int blas_threads = 1;         ///< OpenBLAS threads per process (the CPU backend's GEMMs)
  bool single_gpu = false;      ///< every stage in this process on GPU 0, one SM partition each
  std::string fail_at;  ///< "RANK:OP": that rank fails at that op index (tests of error handling)
  std::string layer_split;  ///< "a,b,...": blocks per virtual stage
  std::string inject;       ///< "STEP:RANK": a NaN gradient on RANK at STEP
  std::string profile_layers;  ///< measure each layer kind alone and write this layer-cost file (no schedule)
  int profile_repeats = 0;     ///< timed runs of --profile-layers, the median kept (0: not given, 5)
  int profile_sm_parts = 0;    ///< --profile-layers on CUDA: on one of N SM partitions (0: the whole GPU)
  RunOptions run;           ///< the flags the driver takes as they are (run_options adds the others)
};

/// What a run needs, read and checked the same way on every rank.
struct CheckedInputs {
  ScheduleFile file;
  Timeline planned;  ///< the plan the run is measured against
  GptConfig model;
  DataSource data;
};

/// zbrun's flags, each bound to its field of `o`.
void add_flags(CLI::App* app, Options* o);

/// The flags' own checks, before MPI starts or any file is read: "" or the usage error. Completes
/// what the flags imply (--single-gpu: CUDA in one process; --checkpoint: one at the end at least).
std::string check_flags(Options* op);

/// Reads and checks the schedule, the model, the data and every output path, and the ranks that
/// run, before anything trains: every rank checks the same inputs, so all of them fail alike and
/// none waits for another. Nothing is created (--check touches nothing). On a failure, *failure
/// says what is wrong (rank 0 prints it).
std::optional<CheckedInputs> check_inputs(Options& o, bool mpi, int world_rank, int world_size, std::ostream& err,
                                          std::string* failure);

}  // namespace zbpp::zbrun
