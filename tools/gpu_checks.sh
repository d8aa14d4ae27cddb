#!/usr/bin/env bash
# Every check of the CUDA backend that needs a GPU, in one go (issue 7). Run from anywhere on a
# machine with at least one NVIDIA GPU:
#     tools/gpu_checks.sh OUT_DIR          (or: OUT=OUT_DIR tools/gpu_checks.sh)
# It configures and builds a fresh build-gpu/ in the repository, then writes under OUT_DIR:
#   build.log         the build (CUDA compiled for sm_80 and sm_90)
#   cuda_tests.log    tests/cuda: every layer's F/B/W vs the CPU reference, backend vs CPU backend
#   determinism.txt   --single-gpu, p=4: losses and final weight digests of 1f1b, zb-h1, zb-h2,
#                     heuristic, ilp (and zb-v) must be bit-identical
#   post_validation   (summary line) optimizer post-validation on the GPU: sync's bits without clipping,
#                     reproducible with rollbacks
#   checkpoint        (summary line) a GPU run killed after a checkpoint resumes bit-identically
#   cpu_vs_gpu.txt    the same schedule on --backend cpu and --single-gpu: losses within 2%
#   errors.txt        --fail-at on the GPU ends the run with a message naming the rank and op (no hang)
#   nccl.txt          mpirun with NCCL on 2 GPUs, digest equal to the in-process run (skipped with 1 GPU)
#   bench/            tools/gpu_bench.sh: profile, plans, runs, GEMM throughput, traces
#   summary.txt       one PASS / FAIL / SKIP line per check
# Exit status: 0 when nothing failed.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${OUT:-}}"
if [ -z "$out" ]; then
  echo "usage: tools/gpu_checks.sh OUT_DIR (or set OUT)" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
build="$here/build-gpu"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary="$out/summary.txt"
: >"$summary"
failed=0
result() {  # result NAME STATUS DETAIL
  echo "$2 $1: $3" | tee -a "$summary"
  [ "$2" = FAIL ] && failed=1
  return 0
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "GPUs: $gpus" | tee -a "$summary"

# --- build ------------------------------------------------------------------------------------
{
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$build" -j"$(nproc)"
} >"$out/build.log" 2>&1
if [ $? -ne 0 ]; then
  result build FAIL "see build.log"
  exit 1
fi
result build PASS "$(grep -o 'CUDA backend: .*' "$out/build.log" | head -1)"
zbplan="$build/planner/zbplan"
zbrun="$build/runtime/zbrun"

# --- layers vs CPU reference ------------------------------------------------------------------
"$build/tests/cuda_tests" --durations yes >"$out/cuda_tests.log" 2>&1
case $? in
  0) result cuda_tests PASS "$(tail -2 "$out/cuda_tests.log" | tr '\n' ' ')" ;;
  77) result cuda_tests SKIP "no GPU visible" ;;
  *) result cuda_tests FAIL "see cuda_tests.log" ;;
esac
(cd "$build" && ctest --output-on-failure -j4) >"$out/ctest.log" 2>&1 &&
  result ctest PASS "$(grep -E 'tests passed' "$out/ctest.log")" || result ctest FAIL "see ctest.log"

# --- determinism across schedules on one GPU ----------------------------------------------------
work="$out/work"
mkdir -p "$work"
cat >"$work/model.json" <<'EOF'
{"vocab": 512, "seq": 64, "channels": 256, "heads": 8, "layers": 8, "batch": 4}
EOF
# One GPU, p = 4: with green-context partitions (--single-gpu) and with plain streams
# (--backend cuda --local, the fallback). Within a mode every method must give the same bits.
det="$out/determinism.txt"
: >"$det"
for method in 1f1b zb-h1 zb-h2 heuristic ilp zb-v; do
  extra=()
  [ "$method" = ilp ] && extra=(--ilp-seconds 5)
  "$zbplan" plan --method "$method" -p 4 -m 8 --tf 1 --tb 1 --tw 1 --mem-limit 3p --optimizer sync "${extra[@]}" -o "$work/det_$method.json" \
    >/dev/null 2>>"$det" || echo "$method: planning failed" >>"$det"
done
for mode in single-gpu streams; do
  args=(--single-gpu)
  [ $mode = streams ] && args=(--backend cuda --local)
  for method in 1f1b zb-h1 zb-h2 heuristic ilp zb-v; do
    log="$work/det_${mode}_$method.log"
    timeout 600 "$zbrun" "$work/det_$method.json" "${args[@]}" --model "$work/model.json" --steps 8 --timeout 60 \
      >"$log" 2>&1 || echo "$mode $method: run failed (see work/det_${mode}_$method.log)" >>"$det"
    losses=$(grep -o 'loss [0-9.e+-]*' "$log" | awk '{print $2}' | tr '\n' ' ')
    digest=$(grep -o 'weights digest [0-9a-f]*' "$log" | awk '{print $3}')
    printf "%-10s %-10s digest %s losses %s\n" "$mode" "$method" "$digest" "$losses" >>"$det"
  done
  runs=$(grep "^$mode " "$det" | grep -c ' digest [0-9a-f]\{16\} ')
  digests=$(grep "^$mode .* digest " "$det" | awk '{print $4}' | sort -u | wc -l)
  loss_sets=$(grep "^$mode .* digest " "$det" | sed 's/.*losses //' | sort -u | wc -l)
  if [ "$runs" -eq 6 ] && [ "$digests" -eq 1 ] && [ "$loss_sets" -eq 1 ]; then
    result "determinism ($mode)" PASS "1f1b zb-h1 zb-h2 heuristic ilp zb-v: one digest, the same losses"
  else
    result "determinism ($mode)" FAIL "see determinism.txt"
  fi
done

# --- optimizer post-validation on the GPU (rollback in place) -----------------------------------------
# Without clipping it must give sync's bits; with clipping (rollbacks) those of its own rerun.
"$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 1 -o "$work/pv.json" >/dev/null
pv() { timeout 600 "$zbrun" "$work/pv.json" --single-gpu --model "$work/model.json" --timeout 60 "$@" 2>&1; }
digest() { grep -o 'weights digest [0-9a-f]*' | awk '{print $3}'; }
"$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 1 --optimizer sync -o "$work/pv_sync.json" >/dev/null
a=$(pv --steps 4 --clip-norm 1e6 | tee "$work/pv_noclip.log" | digest)
b=$(timeout 600 "$zbrun" "$work/pv_sync.json" --single-gpu --model "$work/model.json" --steps 4 --clip-norm 1e6 2>&1 | digest)
c=$(pv --steps 6 --clip-norm 0.05 | tee "$work/pv_clip.log" | digest)
d=$(pv --steps 6 --clip-norm 0.05 | digest)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$c" ] && [ "$c" = "$d" ]; then
  result post_validation PASS "no clipping: $a = sync; clipping: $c twice ($(grep -o 'optimizer post-validation: .*' "$work/pv_clip.log" | head -1))"
else
  result post_validation FAIL "no clipping '$a' vs sync '$b'; clipping '$c' vs '$d' (work/pv_*.log)"
fi

# --- checkpoints: a run killed after a checkpoint resumes bit-identically on the GPU -----------------
ck="$work/ckpt"
rm -rf "$ck"
whole=$(timeout 600 "$zbrun" "$work/pv.json" --single-gpu --model "$work/model.json" --steps 6 --quiet 2>&1 | digest)
timeout 600 "$zbrun" "$work/pv.json" --single-gpu --model "$work/model.json" --steps 6 --quiet --checkpoint "$ck" --every 2 \
  --fail-at 1:3@4 >"$work/ckpt_killed.log" 2>&1
resumed=$(timeout 600 "$zbrun" "$work/pv.json" --single-gpu --model "$work/model.json" --steps 6 --checkpoint "$ck" --every 2 \
  --resume 2>&1 | tee "$work/ckpt_resumed.log" | digest)
if [ -n "$whole" ] && [ "$whole" = "$resumed" ] && grep -q "resumed from" "$work/ckpt_resumed.log"; then
  result checkpoint PASS "killed at step 4, resumed: digest $resumed = the uninterrupted run's"
else
  result checkpoint FAIL "'$resumed' vs '$whole' (work/ckpt_*.log)"
fi

# --- CPU and GPU backends train alike ------------------------------------------------------------
"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$work/cmp.json" >/dev/null
"$zbrun" "$work/cmp.json" --local --steps 10 >"$work/cmp_cpu.log" 2>&1
"$zbrun" "$work/cmp.json" --single-gpu --steps 10 >"$work/cmp_gpu.log" 2>&1
paste <(grep -o 'loss [0-9.e+-]*' "$work/cmp_cpu.log" | awk '{print $2}') \
      <(grep -o 'loss [0-9.e+-]*' "$work/cmp_gpu.log" | awk '{print $2}') >"$out/cpu_vs_gpu.txt"
if [ -s "$out/cpu_vs_gpu.txt" ] && [ "$(wc -l <"$out/cpu_vs_gpu.txt")" -eq 10 ] &&
  awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 0.02 * $1) bad = 1} END {exit bad}' "$out/cpu_vs_gpu.txt"; then
  result cpu_vs_gpu PASS "10 steps, losses within 2% (columns: cpu gpu)"
else
  result cpu_vs_gpu FAIL "see cpu_vs_gpu.txt and work/cmp_*.log"
fi

# --- errors end the run, naming rank and op ---------------------------------------------------------
timeout 120 "$zbrun" "$work/cmp.json" --single-gpu --steps 3 --fail-at 1:3 --timeout 20 >"$out/errors.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'rank 1, op 3' "$out/errors.txt"; then
  result errors PASS "--fail-at 1:3 exits 1 naming rank 1, op 3"
else
  result errors FAIL "exit $rc (124 = hung); see errors.txt"
fi

# --- NCCL across two GPUs -------------------------------------------------------------------------
if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null; then
  "$zbplan" plan --method zb-h1 -p 2 -m 8 --tf 1 --tb 1 --tw 1 -o "$work/nccl.json" >/dev/null
  timeout 300 mpirun -n 2 --oversubscribe "$zbrun" "$work/nccl.json" --backend cuda --model "$work/model.json" --steps 6 \
    --timeout 60 >"$out/nccl.txt" 2>&1
  timeout 300 "$zbrun" "$work/nccl.json" --backend cuda --local --model "$work/model.json" --steps 6 >"$work/nccl_local.log" 2>&1
  a=$(grep -o 'weights digest [0-9a-f]*' "$out/nccl.txt")
  b=$(grep -o 'weights digest [0-9a-f]*' "$work/nccl_local.log")
  if [ -n "$a" ] && [ "$a" = "$b" ]; then result nccl PASS "mpirun -n 2 (NCCL) = in-process: $a"
  else result nccl FAIL "'$a' vs '$b'; see nccl.txt"; fi
  timeout 120 mpirun -n 2 --oversubscribe "$zbrun" "$work/nccl.json" --backend cuda --steps 2 --fail-at 0:2 --timeout 10 \
    >>"$out/nccl.txt" 2>&1
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && result nccl_errors PASS "--fail-at under mpirun ends the job (exit $rc)" ||
    result nccl_errors FAIL "exit $rc (124 = hung)"
else
  echo "skipped: $gpus GPU(s); NCCL refuses two ranks on one GPU" >"$out/nccl.txt"
  result nccl SKIP "needs 2 GPUs"
fi

# --- benchmark ---------------------------------------------------------------------------------------
if bash "$here/tools/gpu_bench.sh" "$out/bench" "$build" >"$out/bench.log" 2>&1; then
  result bench PASS "bench/gpu_bench.md (copied to docs/gpu_bench.md)"
else
  result bench FAIL "see bench.log"
fi

echo "results in $out (summary.txt)"
exit $failed
