// MPI transport: one rank per process under mpirun. The caller owns MPI_Init/MPI_Finalize.
#pragma once

#include <memory>

#include "runtime/transport.h"

namespace zbpp {

std::unique_ptr<Transport> make_mpi_transport();

}  // namespace zbpp
