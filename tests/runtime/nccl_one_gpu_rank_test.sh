#!/usr/bin/env bash
# tools/nccl_one_gpu_rank.sh, the launcher that lets several NCCL ranks share one GPU: under
# mpirun each rank runs the command with its own NCCL_HOSTID, NCCL's socket transport on loopback
# and eager module loading, as the same process (exec), writing its pid where asked; outside
# mpirun it refuses. No GPU needed: the command is a shell that prints what it sees.
# Usage: nccl_one_gpu_rank_test.sh TMPDIR
set -u
here="$(cd "$(dirname "$0")/../.." && pwd)"
wrapper="$here/tools/nccl_one_gpu_rank.sh"
tmp=$1/nccl_one_gpu_rank
rm -rf "$tmp" && mkdir -p "$tmp/pids"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "ok      $1"; else failed=$((failed + 1)); echo "FAILED  $1"; fi; }
# What a rank sees: its rank, the NCCL settings, and its own pid (the same as the wrapper's after exec).
show='echo "rank=$OMPI_COMM_WORLD_RANK hostid=$NCCL_HOSTID net=$NCCL_NET ifname=$NCCL_SOCKET_IFNAME loading=$CUDA_MODULE_LOADING debug=$NCCL_DEBUG pid=$$"'

for n in 2 4; do
  rm -f "$tmp"/pids/*
  out=$(ZBPP_RANK_PIDS="$tmp/pids" timeout 60 mpirun -n "$n" --oversubscribe "$wrapper" sh -c "$show" 2>&1); code=$?
  echo "$out"
  check "mpirun -n $n: exit 0 ($code), one line per rank" '[ $code -eq 0 ] && [ "$(grep -c "^rank=" <<<"$out")" -eq $n ]'
  check "... every rank its own NCCL_HOSTID, zbpp-rank-RANK" \
    '[ "$(grep -o "hostid=[^ ]*" <<<"$out" | sort -u | wc -l)" -eq $n ] &&
     [ "$(grep -cE "^rank=([0-9]+) hostid=zbpp-rank-\1 " <<<"$out")" -eq $n ]'
  check "... the socket transport on loopback, eager module loading, NCCL warnings on" \
    '[ "$(grep -c " net=Socket ifname=lo loading=EAGER debug=WARN " <<<"$out")" -eq $n ]'
  pids_ok=1  # read in check's eval
  for ((r = 0; r < n; r++)); do
    seen=$(grep "^rank=$r " <<<"$out" | grep -o 'pid=[0-9]*' | cut -d= -f2)
    # shellcheck disable=SC2034  # pids_ok is read in check's eval
    [ -n "$seen" ] && [ "$(cat "$tmp/pids/rank-$r.pid" 2>/dev/null)" = "$seen" ] || pids_ok=0
  done
  check "... each rank's pid file holds the pid of the command it ran (ZBPP_RANK_PIDS)" '[ $pids_ok -eq 1 ]'
done

out=$(NCCL_DEBUG=INFO timeout 60 mpirun -n 2 --oversubscribe "$wrapper" sh -c "$show" 2>&1); code=$?
check "a caller's NCCL_DEBUG wins ($code)" '[ $code -eq 0 ] && [ "$(grep -c " debug=INFO " <<<"$out")" -eq 2 ]'
out=$(timeout 60 mpirun -n 2 --oversubscribe "$wrapper" sh -c 'exit 3' 2>&1); code=$?
check "the command's failure is the job's (exit $code)" '[ $code -ne 0 ] && [ $code -ne 124 ]'
out=$(env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u SLURM_PROCID "$wrapper" true 2>&1); code=$?
check "outside mpirun it refuses (exit $code), saying why" \
  '[ $code -eq 2 ] && grep -q "no rank in the environment .*start it under mpirun" <<<"$out"'
out=$(OMPI_COMM_WORLD_RANK=0 "$wrapper" 2>&1); code=$?
check "without a command it refuses (exit $code)" '[ $code -eq 2 ] && grep -q "^usage: " <<<"$out"'
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
