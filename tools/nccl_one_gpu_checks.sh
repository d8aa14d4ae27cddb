#!/usr/bin/env bash
# The multi-rank NCCL transport on ONE GPU (tools/gpu_checks.sh runs it as the nccl_one_gpu group;
# docs/gpu.md, "NCCL on one GPU"):
#     tools/nccl_one_gpu_checks.sh [--quick] [--cpu] ZBPLAN ZBRUN MODEL WORK_DIR
# Every rank runs under mpirun through tools/nccl_one_gpu_rank.sh, which gives it its own NCCL_HOSTID:
# NCCL then takes the ranks for different hosts and uses its socket transport over loopback, which
# exercises channels, ordering, headers, timeouts and aborts (not NVLink). It checks, for -n 2 and
# -n 4 (--quick: -n 2 only) and every schedule method (--quick: 1f1b, zb-h1, zb-v):
#   methods       every method's losses and final weights digest bit-identical (synchronous optimizer)
#   in-process    that digest equal to the in-process run's with the same GPU settings
#                 (--backend cuda --local: whole-GPU streams, as each NCCL rank has)
#   single-gpu    losses and weights within bf16 tolerance of --single-gpu (SM partitions, whose
#                 cuBLASLt may pick other kernels): each loss within 1e-2 relative, each weight
#                 tensor within 2e-2 of its largest value plus 2 lr per step (Adam turns a
#                 rounding-level gradient sign into a +-lr move)
# and with -n 2: a rank failing (--fail-at 1:3) ends the job naming it; a rank killed with SIGKILL
# ends the job, mpirun naming it; a hung rank (--fault hang at its first activation receive, its
# peer's send in flight) is named stuck, and the job ends within 2 --timeout + 20 s.
# --cpu runs the same checks on the CPU backend (MPI transport; --local as both references): the
# script's own logic, tested without a GPU by ctest (tests/runtime/nccl_one_gpu_checks_test.sh).
# Prints one "PASS|FAIL|SKIP name: detail" line per check (logs in WORK_DIR); exit 0 when none
# failed, 1 when one did, 77 when there is no mpirun (MPIRUN=path picks one not on PATH).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
usage="usage: tools/nccl_one_gpu_checks.sh [--quick] [--cpu] ZBPLAN ZBRUN MODEL WORK_DIR"
quick=0 cpu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --cpu) cpu=1; shift ;;
    -*) echo "nccl_one_gpu_checks.sh: unknown option '$1'; $usage" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 4 ]; then echo "$usage" >&2; exit 2; fi
zbplan=$1 zbrun=$2 model=$3 work=$4
mkdir -p "$work" || exit 2
work="$(cd "$work" && pwd)"
mpirun=${MPIRUN:-$(command -v mpirun || true)}
if [ -z "$mpirun" ]; then
  echo "SKIP nccl_one_gpu: no mpirun on this machine (a bundle has none; install Open MPI or set MPIRUN)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python=${PYTHON:-python3}  # for tools/weights_close.py (plain Python)
wrapper="$here/tools/nccl_one_gpu_rank.sh"
failed=0
result() {  # result NAME STATUS DETAIL
  echo "$2 $1: $3"
  [ "$2" = FAIL ] && failed=1
  return 0
}
if [ $quick -eq 1 ]; then
  ranks=(2) methods=(1f1b zb-h1 zb-v) steps=3
else
  ranks=(2 4) methods=(1f1b zb-h1 zb-h2 heuristic ilp zb-v) steps=4
fi
if [ $cpu -eq 1 ]; then
  backend=(--backend cpu) bits_ref=(--local) tol_ref=(--local) bits_ref_name="--local" tol_ref_name="--local"
else
  backend=(--backend cuda) bits_ref=(--backend cuda --local) tol_ref=(--single-gpu)
  bits_ref_name="--backend cuda --local" tol_ref_name="--single-gpu"
fi
lr=0.001  # zbrun's default (runtime/optimizer.h); the weights' tolerance grows by 2 lr per step
digest() { grep -o 'weights digest [0-9a-f]*' "$1" | awk '{print $3}'; }
losses() { grep -o '^step [0-9]*: loss [0-9.e+-]*' "$1" | awk '{print $4}' | tr '\n' ' '; }
# The first line of a log that says what went wrong, for a FAIL's detail: zbrun's own, else NCCL's
# or mpirun's.
why() {
  { grep -m1 '^zbrun: ' "$1" || grep -m1 -iE 'NCCL WARN|error|fail|refus|abort|stuck|timeout' "$1"; } | cut -c1-200
}
# mpirun_zbrun N LOG ARGS...: N ranks on this GPU, each through the wrapper; exit code in $rc.
mpirun_zbrun() {
  local n=$1 log=$2
  shift 2
  timeout 180 "$mpirun" -n "$n" --oversubscribe "$wrapper" "$zbrun" "$@" >"$log" 2>&1
  rc=$?
}

for p in "${ranks[@]}"; do
  table="$work/methods_n$p.txt"
  : >"$table"
  for method in "${methods[@]}"; do
    extra=()
    [ "$method" = ilp ] && extra=(--ilp-seconds 5)
    plan="$work/n${p}_$method.json"
    log="$work/n${p}_$method.log"
    if ! "$zbplan" plan --method "$method" -p "$p" -m 8 --tf 1 --tb 1 --tw 1 --mem-limit 3p --optimizer sync \
      "${extra[@]}" -o "$plan" >"$log" 2>&1; then
      printf "%-10s planning failed: %s\n" "$method" "$(why "$log")" >>"$table"
      continue
    fi
    dump=()
    [ "$method" = "${methods[0]}" ] && rm -rf "$work/n${p}_weights" && mkdir -p "$work/n${p}_weights" &&
      dump=(--dump-weights "$work/n${p}_weights")
    mpirun_zbrun "$p" "$log" "$plan" "${backend[@]}" --model "$model" --steps $steps --timeout 60 "${dump[@]}"
    if [ $rc -ne 0 ]; then
      printf "%-10s exit %s: %s\n" "$method" "$rc" "$(why "$log")" >>"$table"
    else
      printf "%-10s digest %s losses %s\n" "$method" "$(digest "$log")" "$(losses "$log")" >>"$table"
    fi
  done
  runs=$(grep -c ' digest [0-9a-f]\{16\} losses [0-9]' "$table")
  digests=$(grep ' digest ' "$table" | awk '{print $3}' | sort -u | wc -l)
  loss_sets=$(grep ' digest ' "$table" | sed 's/.*losses //' | sort -u | wc -l)
  d=$(grep -m1 ' digest ' "$table" | awk '{print $3}')
  mine=$(grep -m1 ' digest ' "$table" | sed 's/.*losses //')
  if [ "$runs" -eq ${#methods[@]} ] && [ "$digests" -eq 1 ] && [ "$loss_sets" -eq 1 ]; then
    result "nccl_one_gpu methods (n=$p)" PASS "${methods[*]}: one digest $d, the same $steps losses ($(basename "$table"))"
  else
    result "nccl_one_gpu methods (n=$p)" FAIL "$runs of ${#methods[@]} runs ended, $digests digests, $loss_sets loss sets: $(grep -v ' digest ' "$table" | head -1) ($(basename "$table"))"
  fi

  # The same file in one process with the same GPU settings: the same bits.
  first="$work/n${p}_${methods[0]}.json"
  ref_log="$work/n${p}_in_process.log"
  timeout 300 "$zbrun" "$first" "${bits_ref[@]}" --model "$model" --steps $steps --timeout 60 >"$ref_log" 2>&1
  ref=$(digest "$ref_log")
  if [ -n "$d" ] && [ "$d" = "$ref" ]; then
    result "nccl_one_gpu in-process (n=$p)" PASS "digest $d = $bits_ref_name's"
  else
    result "nccl_one_gpu in-process (n=$p)" FAIL "mpirun '$d' vs $bits_ref_name '$ref' ($(basename "$ref_log"): $(why "$ref_log"))"
  fi

  # --single-gpu: within bf16 tolerance, losses and weights.
  tol_log="$work/n${p}_single_gpu.log"
  rm -rf "$work/n${p}_single_gpu_weights" && mkdir -p "$work/n${p}_single_gpu_weights"
  timeout 300 "$zbrun" "$first" "${tol_ref[@]}" --model "$model" --steps $steps --timeout 60 \
    --dump-weights "$work/n${p}_single_gpu_weights" >"$tol_log" 2>&1
  theirs=$(losses "$tol_log")
  loss_check=$(awk -v a="$mine" -v b="$theirs" 'BEGIN {
    n = split(a, x, " "); m = split(b, y, " ")
    if (n == 0 || n != m) { print "FAIL " n " losses vs " m; exit }
    worst = 0
    for (i = 1; i <= n; i++) {
      d = x[i] - y[i]; if (d < 0) d = -d; mag = y[i] < 0 ? -y[i] : y[i]; r = d / (mag > 0 ? mag : 1); if (r > worst) worst = r
    }
    printf "%s %d losses, largest relative difference %.2g\n", worst <= 1e-2 ? "ok" : "FAIL", n, worst }')
  weight_check=$("$python" "$here/tools/weights_close.py" "$work/n${p}_weights" "$work/n${p}_single_gpu_weights" \
    --lr $lr --steps $steps 2>&1 | tail -1)
  if [[ $loss_check == ok* ]] && [[ $weight_check == ok* ]]; then
    result "nccl_one_gpu $tol_ref_name (n=$p)" PASS "${loss_check#ok }; ${weight_check#ok }"
  else
    result "nccl_one_gpu $tol_ref_name (n=$p)" FAIL "${loss_check}; ${weight_check} ($(basename "$tol_log"): $(why "$tol_log"))"
  fi
done

# --- faults, two ranks -----------------------------------------------------------------------------
plan="$work/faults.json"
"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$plan" >/dev/null 2>&1
# A failing rank tells the others at once: the job ends well before --timeout (start-up included).
start=$(date +%s)
mpirun_zbrun 2 "$work/fail_at.log" "$plan" "${backend[@]}" --model "$model" --steps 2 --fail-at 1:3 --timeout 60
elapsed=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 1, op 3' "$work/fail_at.log" && [ $elapsed -lt 60 ]; then
  result "nccl_one_gpu fail_at" PASS "--fail-at 1:3 ended the job (exit $rc) in $elapsed s naming rank 1, op 3"
else
  result "nccl_one_gpu fail_at" FAIL "exit $rc (124 = hung) after $elapsed s; 'rank 1, op 3' $(grep -c 'rank 1, op 3' "$work/fail_at.log") times (fail_at.log: $(why "$work/fail_at.log"))"
fi

# Rank 1's op 1 is its receive of activation 0 (RECV_F0; op 0 sends post-validation state): hung
# there, it leaves rank 0's send of that activation in flight.
timeout_s=10
start=$(date +%s)
mpirun_zbrun 2 "$work/hang.log" "$plan" "${backend[@]}" --model "$model" --steps 2 --fail-at 1:1 --fault hang \
  --timeout $timeout_s
elapsed=$(($(date +%s) - start))
# The wait times out after --timeout; asking rank 1 adds a grace period of at most 2 s; start-up
# and the job's end take the rest.
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 1 is stuck' "$work/hang.log" && [ $elapsed -lt $((2 * timeout_s + 20)) ]; then
  result "nccl_one_gpu hang" PASS "rank 1 hung at its receive of activation 0: the job ended (exit $rc) in $elapsed s (--timeout $timeout_s) naming rank 1 stuck"
else
  result "nccl_one_gpu hang" FAIL "exit $rc (124 = hung) after $elapsed s (--timeout $timeout_s); 'rank 1 is stuck' $(grep -c 'rank 1 is stuck' "$work/hang.log") times (hang.log: $(why "$work/hang.log"))"
fi

pids="$work/pids" metrics="$work/killed_metrics.jsonl"
rm -rf "$pids" "$metrics" && mkdir -p "$pids"
start=$(date +%s)
ZBPP_RANK_PIDS="$pids" timeout 180 "$mpirun" -n 2 --oversubscribe "$wrapper" "$zbrun" "$plan" "${backend[@]}" \
  --model "$model" --steps 100000 --timeout 60 --quiet --metrics "$metrics" >"$work/killed.log" 2>&1 &
job=$!
# Killed once training runs (rank 0 writes a metrics line per step, unbuffered), so the kill lands
# mid-run, not in set-up.
for _ in $(seq 600); do
  lines=$(grep -c '"step"' "$metrics" 2>/dev/null)
  [ "${lines:-0}" -ge 2 ] && [ -s "$pids/rank-1.pid" ] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
victim=$(cat "$pids/rank-1.pid" 2>/dev/null)
[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
wait $job
rc=$?
elapsed=$(($(date +%s) - start))
if [ -n "$victim" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -lt 60 ] &&
  grep -qiE 'rank 1 .*(signal 9|killed)' "$work/killed.log"; then
  result "nccl_one_gpu killed" PASS "rank 1 (pid $victim) killed mid-run: the job ended (exit $rc) in $elapsed s, mpirun naming rank 1"
else
  result "nccl_one_gpu killed" FAIL "rank 1's pid '${victim:-none}', exit $rc (124 = hung) after $elapsed s (killed.log: $(why "$work/killed.log"))"
fi
exit $failed
