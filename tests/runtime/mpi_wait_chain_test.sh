#!/usr/bin/env bash
# Runs mpi_wait_chain_test (see its source) under mpirun -n 3 with MODE answers or silent.
# Usage: mpi_wait_chain_test.sh BINARY MODE
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan, as in mpi_test.sh: the slow unwinder, so tools/sanitizers/lsan.supp matches Open MPI's
# allocations and only a leak of ours fails the test.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
exec timeout 60 mpirun -n 3 "$1" "$2"
