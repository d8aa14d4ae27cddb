#!/usr/bin/env bash
# Launcher for several NCCL ranks on ONE GPU (tools/nccl_one_gpu_checks.sh, docs/gpu.md):
#     mpirun -n 2 tools/nccl_one_gpu_rank.sh zbrun s.json --backend cuda ...
# NCCL refuses two ranks on one GPU of one host (same host hash and bus id). Each rank gets its own
# NCCL_HOSTID, so NCCL takes the ranks for different hosts and connects them with its socket
# transport over loopback (NCCL_NET=Socket, NCCL_SOCKET_IFNAME=lo): this exercises channels,
# ordering, headers, timeouts and aborts, not NVLink or shared-memory transports.
# The rank comes from the launcher's environment (Open MPI, PMIx, MPICH/Hydra, Slurm). With
# ZBPP_RANK_PIDS=DIR set, the rank writes its process id to DIR/rank-N.pid (exec keeps it), so a
# check can kill one chosen rank. Then it execs its arguments.
set -eu
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then
  echo "nccl_one_gpu_rank.sh: no rank in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID): start it under mpirun" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  echo "usage: mpirun -n N tools/nccl_one_gpu_rank.sh PROGRAM [ARGS...]" >&2
  exit 2
fi
export NCCL_HOSTID="zbpp-rank-$rank"
export NCCL_NET=Socket
export NCCL_SOCKET_IFNAME=lo
export CUDA_MODULE_LOADING=EAGER
# NCCL's warnings say why a communicator failed; a caller's own NCCL_DEBUG wins.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
if [ -n "${ZBPP_RANK_PIDS:-}" ]; then
  echo $$ >"$ZBPP_RANK_PIDS/rank-$rank.pid"
fi
exec "$@"
