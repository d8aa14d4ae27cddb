#!/usr/bin/env bash
# Every check of the CUDA backend that needs a GPU, in one go. Run from anywhere on a machine with
# at least one NVIDIA GPU (docs/gpu.md):
#     tools/gpu_checks.sh [--build DIR] [--no-bench] [--quick] [--only GROUPS] OUT_DIR   (or: OUT=OUT_DIR ...)
# It configures and builds a fresh build-gpu/ in the repository, then writes under OUT_DIR:
#   build.log         the build (CUDA compiled for sm_80 and sm_90); fails unless the CUDA backend is in it.
#                     --build DIR uses a CUDA build made elsewhere instead (tools/gpu_bundle.sh packs
#                     one for a GPU machine without the build's packages); its zbrun --version must
#                     name CUDA. Where DIR holds no ctest files, the ctest step is a SKIP.
#   cuda_tests.log    tests/cuda: every layer's F/B/W vs the CPU reference, backend vs CPU backend
#   ctest.log         the whole test suite (the PyTorch oracle too where python3-torch is installed)
#   oracle/           the CPU -> CUDA link of the oracle chain (docs/oracle.md): one step of each model
#                     on both backends, every loss, gradient and weight update compared tensor by
#                     tensor (tests/oracle/oracle.py compare: within 2e-2 of each tensor's max, bf16)
#   attention_variants (summary lines) ZBPP_CUDA_ATTENTION=warp and lane, the row kernels (the default
#                     is flash, the tensor-core kernels): their steps against the CPU's; each variant's
#                     bits twice, their speeds
#   determinism.txt   --single-gpu, p=4: losses and final weight digests of 1f1b, zb-h1, zb-h2,
#                     heuristic, ilp and zb-v must be bit-identical (--quick: 1f1b, zb-h1, zb-v)
#   post_validation   (summary line) optimizer post-validation on the GPU: sync's bits without clipping;
#                     with clipping, the run must reproduce its bits and take the CPU backend's
#                     decisions (rollbacks, replays), at least one rollback or replay among them
#   checkpoint        (summary line) a GPU run that fails after a checkpoint exits non-zero, and the
#                     resumed run starts after that checkpoint's step and ends bit-identically
#   errors.txt        --fail-at on the GPU ends the run with a message naming the rank and op (no hang);
#                     errors_device.txt: a kernel that traps (--fault device) ends it too, placed
#   nccl.txt          mpirun with NCCL on 2 GPUs, digest equal to the in-process run (skipped with 1 GPU)
#   nccl_one_gpu.txt  mpirun -n 2 and -n 4 with NCCL on ONE GPU, each rank its own NCCL_HOSTID (socket
#                     transport over loopback; tools/nccl_one_gpu_checks.sh): every method's losses and
#                     weights bit-identical, equal to the in-process run's, within bf16 tolerance of
#                     --single-gpu; a failing, a killed and a hung rank end the job naming it
#                     (--quick: -n 2, 1f1b, zb-h1, zb-v). SKIP without mpirun, FAIL if --only asked for it.
#   pytorch_csv.txt   where PyTorch >= 2.4 is installed (else SKIP): its pipelining code reads, validates,
#                     lowers and simulates our V (style 'v') and interleaved (style 'loop') CSVs
#                     (tests/pytorch_csv_check.py; not a GPU check, CI's PyTorch is 1.13)
#   bench/            tools/gpu_bench.sh: profile, plans, runs, GEMM throughput, traces
#   summary.txt       one PASS / FAIL / SKIP line per check
# --quick: the short device run (about 4 minutes on an H200, the build aside): fewer methods where
# noted above, no bench. --only GROUPS (comma-separated) runs those groups alone (the build always):
# cuda_tests, ctest, oracle, determinism, post_validation, checkpoint, errors, nccl, nccl_one_gpu,
# pytorch_csv, bench.
# Exit status: 0 only when a GPU was there and no check failed. Without a GPU it exits 1 with
# "no GPU: nothing was checked". A check that cannot run where it should (CUDA sees no GPU, the
# CUDA backend was not built) is a FAIL, never a SKIP.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
usage="usage: tools/gpu_checks.sh [--build DIR] [--no-bench] [--quick] [--only GROUPS] OUT_DIR (or set OUT)"
groups="cuda_tests ctest oracle determinism post_validation checkpoint errors nccl nccl_one_gpu pytorch_csv bench"
prebuilt="" bench=1 quick=0 only="" positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build)
      prebuilt="${2:-}"
      shift 2 || shift
      if [ -z "$prebuilt" ] || [ ! -x "$prebuilt/zbrun" ]; then
        echo "tools/gpu_checks.sh: --build '$prebuilt': no zbrun there (give a CUDA build's directory)" >&2
        exit 2
      fi
      prebuilt="$(cd -- "$prebuilt" && pwd)"
      ;;
    --no-bench) bench=0; shift ;;
    --quick) quick=1; shift ;;
    --only)
      only="${2:-}"
      shift 2 || shift
      if [ -z "${only//,/}" ]; then
        echo "tools/gpu_checks.sh: --only needs a comma-separated list of groups: ${groups// /,}" >&2
        exit 2
      fi
      for group in ${only//,/ }; do
        if [[ " $groups " != *" $group "* ]]; then
          echo "tools/gpu_checks.sh: --only: unknown group '$group'; the groups are ${groups// /,}" >&2
          exit 2
        fi
      done
      ;;
    -*) echo "tools/gpu_checks.sh: unknown option '$1'; $usage" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if [ ${#positional[@]} -gt 1 ]; then
  echo "tools/gpu_checks.sh: one OUT_DIR, got ${#positional[@]}: ${positional[*]}; $usage" >&2
  exit 2
fi
out="${positional[0]:-${OUT:-}}"
if [ -z "$out" ]; then
  echo "$usage" >&2
  exit 2
fi
if ! mkdir -p -- "$out" || ! out="$(cd -- "$out" && pwd)"; then
  echo "tools/gpu_checks.sh: cannot create or enter OUT_DIR '$out'" >&2
  exit 2
fi
build="${prebuilt:-$here/build-gpu}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The checks are of the defaults: a ZBPP_CUDA_ATTENTION left in the caller's environment would make
# them check the other variant in the default's place. The variants are chosen below where meant.
if [ -n "${ZBPP_CUDA_ATTENTION+x}" ]; then
  echo "tools/gpu_checks.sh: ignoring ZBPP_CUDA_ATTENTION=$ZBPP_CUDA_ATTENTION from the environment (checks both variants)" >&2
  unset ZBPP_CUDA_ATTENTION
fi
summary="$out/summary.txt"
: >"$summary"
failed=0
result() {  # result NAME STATUS DETAIL
  echo "$2 $1: $3" | tee -a "$summary"
  [ "$2" = FAIL ] && failed=1
  return 0
}
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }  # want GROUP: selected by --only (or no --only)

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -eq 0 ]; then
  echo "no GPU: nothing was checked (nvidia-smi lists none; see $out/nvidia-smi.txt)" | tee -a "$summary" >&2
  exit 1
fi
echo "GPUs: $gpus, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" |
  tee -a "$summary"

# --- build ------------------------------------------------------------------------------------
if [ -n "$prebuilt" ]; then
  "$build/zbrun" --version >"$out/build.log" 2>&1
  cuda_line=$(grep -E '^ +CUDA: [0-9]' "$out/build.log" | head -1)
  if [ -z "$cuda_line" ]; then
    result build FAIL "--build $build: its zbrun has no CUDA backend or does not start (build.log)"
    exit 1
  fi
  # The programs must be built from this checkout's sources: a stale bundle would run old code
  # against this checkout's tests. A bundle lists its sources' digests (gpu_bundle.sh); a build
  # directory must come from a clean tree at this checkout's commit.
  built=$(grep -o 'git [0-9a-f]*[-a-z]*' "$out/build.log" | head -1 | awk '{print $2}')
  if [ -f "$build/../SOURCES.sha256" ]; then
    if ! (cd "$here" && sha256sum --quiet --strict -c "$build/../SOURCES.sha256") >"$out/sources.txt" 2>&1; then
      result build FAIL "--build $build was packed from other sources than this checkout's (sources.txt): repack it"
      exit 1
    fi
  else
    head=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || true)
    dirty=$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null | head -1)
    if [ -z "$head" ] || [ "$built" != "$head" ] || [ -n "$dirty" ]; then
      result build FAIL "--build $build: built from '${built:-?}', this checkout is '${head:-not a git tree}'${dirty:+ with changes}: rebuild, or pack it with tools/gpu_bundle.sh"
      exit 1
    fi
  fi
  result build PASS "prebuilt $build (git $built, the sources of this checkout):$cuda_line"
else
  {
    cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
      cmake --build "$build" -j"$(nproc)"
  } >"$out/build.log" 2>&1
  if [ $? -ne 0 ]; then
    result build FAIL "see build.log"
    exit 1
  fi
  if ! grep -q 'CUDA backend: ON' "$out/build.log"; then
    result build FAIL "no CUDA backend in this build: $(grep -o 'CUDA backend: .*' "$out/build.log" | head -1)"
    exit 1
  fi
  result build PASS "$(grep -o 'CUDA backend: .*' "$out/build.log" | head -1)"
fi
zbplan="$build/zbplan"
zbrun="$build/zbrun"
# A bundle (tools/gpu_bundle.sh) brings the Open MPI its zbrun links: its mpirun, unless MPIRUN names one.
[ -z "${MPIRUN:-}" ] && [ -x "$build/../bin/mpirun" ] && export MPIRUN="$(cd "$build/../bin" && pwd)/mpirun"
mpirun=${MPIRUN:-mpirun}
if [ -n "$only" ]; then
  skipped=()
  for group in $groups; do want "$group" || skipped+=("$group"); done
  result only SKIP "not run (--only $only): ${skipped[*]}"
fi
[ $quick -eq 1 ] && echo "--quick: fewer methods in determinism and nccl_one_gpu, no bench" | tee -a "$summary"
# The C=256 model of the oracle, the determinism runs and the NCCL runs.
mkdir -p "$out/oracle" "$out/work"
echo '{"vocab": 512, "seq": 64, "channels": 256, "heads": 8, "layers": 8, "batch": 4}' >"$out/oracle/c256.json"
cp "$out/oracle/c256.json" "$out/work/model.json"
# The oracle needs numpy: Debian's python3, else the first python3 on PATH that has it. The PyTorch
# CSV check wants the interpreter whose torch has pipelining, which may be another one.
python=/usr/bin/python3
$python -c 'import numpy' 2>/dev/null || python=python3
torch_python=$python
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch.distributed.pipelining' 2>/dev/null; then torch_python=$candidate; break; fi
done

# --- layers vs CPU reference, and the test suite -------------------------------------------------
if want cuda_tests; then
  "$build/tests/cuda_tests" --durations yes >"$out/cuda_tests.log" 2>&1
  case $? in
    0) result cuda_tests PASS "$(tail -2 "$out/cuda_tests.log" | tr '\n' ' ')" ;;
    77) result cuda_tests FAIL "nvidia-smi lists $gpus GPU(s), but the tests saw none (cuda_tests.log)" ;;
    *) result cuda_tests FAIL "see cuda_tests.log" ;;
  esac
fi
# The PyTorch -> CPU link of the oracle chain runs in CI; here too where PyTorch is installed.
exclude=()
if ! want ctest; then
  :
elif [ -n "$prebuilt" ] && [ ! -f "$build/CTestTestfile.cmake" ]; then
  result ctest SKIP "--build $build holds no ctest files (a bundle of the programs); CI runs the suite"
else
  if ! $python -c 'import torch' 2>/dev/null; then
    exclude=(-E '^oracle')
    result "oracle (PyTorch vs CPU)" SKIP "python3-torch not installed here; CI runs it"
  fi
  (cd "$build" && ctest --output-on-failure -j4 "${exclude[@]}") >"$out/ctest.log" 2>&1 &&
    result ctest PASS "$(grep -E 'tests passed' "$out/ctest.log")" || result ctest FAIL "see ctest.log"
fi

# --- CPU -> CUDA, tensor by tensor ----------------------------------------------------------------
# One step of each model on both backends (zbpp_step_dump: one virtual stage per block, clipping,
# AdamW). A planted sign error must fail the same comparison, or the comparison proves nothing.
if ! want oracle; then
  :
elif ! $python -c 'import numpy' 2>/dev/null; then
  result cpu_vs_cuda FAIL "$python cannot import numpy (install python3-numpy)"
else
  for model in tiny "$here/tests/oracle/models/wide.json" "$here/tests/oracle/models/odd.json" "$out/oracle/c256.json"; do
    name=$(basename "$model" .json)
    log="$out/oracle/$name.log"
    if "$build/tools/zbpp_step_dump" "$out/oracle/$name-cpu" --model "$model" >"$log" 2>&1 &&
      timeout 600 "$build/tools/zbpp_step_dump" "$out/oracle/$name-cuda" --model "$model" --backend cuda >>"$log" 2>&1 &&
      $python "$here/tests/oracle/oracle.py" compare "$out/oracle/$name-cpu" "$out/oracle/$name-cuda" >>"$log" 2>&1; then
      result "cpu_vs_cuda ($name)" PASS "$(tail -1 "$log") (oracle/$name.log)"
    else
      result "cpu_vs_cuda ($name)" FAIL "see oracle/$name.log"
    fi
  done
  for planted in grad.h1.mlp.fc.w param_after.h1.mlp.fc.w; do
    if $python "$here/tests/oracle/oracle.py" compare "$out/oracle/tiny-cpu" "$out/oracle/tiny-cuda" \
      --expect-mismatch $planted >"$out/oracle/planted-$planted.log" 2>&1; then
      result "cpu_vs_cuda (planted error)" PASS "a sign flipped in $planted is caught"
    else
      result "cpu_vs_cuda (planted error)" FAIL "a planted error in $planted went unnoticed (oracle/planted-$planted.log)"
    fi
  done
fi

# --- the other attention variants (the oracle above ran the default, flash), against the CPU too
# Against the CPU like the default.
for variant in warp lane; do
  want oracle || break
  check="cpu_vs_cuda (c256, ZBPP_CUDA_ATTENTION=$variant)"
  log="$out/oracle/c256-$variant.log"
  if [ ! -d "$out/oracle/c256-cpu" ]; then
    result "$check" FAIL "no CPU dump of c256 to compare with (oracle/c256.log)"
  elif ZBPP_CUDA_ATTENTION=$variant "$build/tools/zbpp_step_dump" "$out/oracle/c256-$variant" \
    --model "$out/oracle/c256.json" --backend cuda >"$log" 2>&1 &&
    $python "$here/tests/oracle/oracle.py" compare "$out/oracle/c256-cpu" "$out/oracle/c256-$variant" >>"$log" 2>&1; then
    result "$check" PASS "$(tail -1 "$log") (oracle/c256-$variant.log)"
  else
    result "$check" FAIL "see oracle/c256-$variant.log"
  fi
done
# --- determinism across schedules on one GPU ----------------------------------------------------
work="$out/work"
run_gpu() { timeout 600 "$zbrun" "$1" --single-gpu --model "$work/model.json" --timeout 60 "${@:2}" 2>&1; }
digest() { grep -o 'weights digest [0-9a-f]*' | awk '{print $3}'; }
# One GPU, p = 4: with green-context partitions (--single-gpu) and with plain streams
# (--backend cuda --local, the fallback). Within a mode every method must give the same bits.
methods=(1f1b zb-h1 zb-h2 heuristic ilp zb-v)
[ $quick -eq 1 ] && methods=(1f1b zb-h1 zb-v)
det="$out/determinism.txt"
if want determinism; then
  : >"$det"
  for method in "${methods[@]}"; do
    extra=()
    [ "$method" = ilp ] && extra=(--ilp-seconds 5)
    "$zbplan" plan --method "$method" -p 4 -m 8 --tf 1 --tb 1 --tw 1 --mem-limit 3p --optimizer sync "${extra[@]}" \
      -o "$work/det_$method.json" >/dev/null 2>>"$det" || echo "$method: planning failed" >>"$det"
  done
  for mode in single-gpu streams; do
    args=(--single-gpu)
    [ $mode = streams ] && args=(--backend cuda --local)
    for method in "${methods[@]}"; do
      log="$work/det_${mode}_$method.log"
      timeout 600 "$zbrun" "$work/det_$method.json" "${args[@]}" --model "$work/model.json" --steps 8 --timeout 60 \
        >"$log" 2>&1 || echo "$mode $method: run failed (see work/det_${mode}_$method.log)" >>"$det"
      losses=$(grep -o 'loss [0-9.e+-]*' "$log" | awk '{print $2}' | tr '\n' ' ')
      digest=$(digest <"$log")
      printf "%-10s %-10s digest %s losses %s\n" "$mode" "$method" "$digest" "$losses" >>"$det"
    done
    runs=$(grep "^$mode " "$det" | grep -c ' digest [0-9a-f]\{16\} losses [0-9]')
    digests=$(grep "^$mode .* digest " "$det" | awk '{print $4}' | sort -u | wc -l)
    loss_sets=$(grep "^$mode .* digest " "$det" | sed 's/.*losses //' | sort -u | wc -l)
    if [ "$runs" -eq ${#methods[@]} ] && [ "$digests" -eq 1 ] && [ "$loss_sets" -eq 1 ]; then
      result "determinism ($mode)" PASS "${methods[*]}: one digest, the same 8 losses"
    else
      result "determinism ($mode)" FAIL "see determinism.txt"
    fi
  done
fi

# The three attention variants on the same run: each reproduces its own bits; their speed.
if want determinism; then
  variants=(flash warp lane)
  d=() t=()
  for variant in "${variants[@]}"; do
    for run in 1 2; do
      d+=("$(ZBPP_CUDA_ATTENTION=$variant run_gpu "$work/det_zb-h1.json" --steps 8 | tee "$work/attention_${variant}_$run.log" |
        digest)")
    done
    t+=("$(grep -o 'iteration time [0-9.]* s' "$work/attention_${variant}_2.log")")
  done
  # They round differently, so equal digests would mean the variable was not read.
  ok=1 line=""
  for i in 0 1 2; do
    a=${d[$((2 * i))]} b=${d[$((2 * i + 1))]}
    { [ -n "$a" ] && [ "$a" = "$b" ]; } || ok=0
    line+="${variants[$i]}: '$a' '$b', ${t[$i]}; "
  done
  [ "${d[0]}" != "${d[2]}" ] && [ "${d[0]}" != "${d[4]}" ] && [ "${d[2]}" != "${d[4]}" ] || ok=0
  if [ $ok = 1 ]; then
    result attention_variants PASS "${line}each twice (zb-h1, p=4, C=256)"
  else
    result attention_variants FAIL "${line}(each twice, the three must differ; work/attention_*.log)"
  fi
fi

# --- optimizer post-validation on the GPU (rollback in place) -----------------------------------------
# Without clipping it must give sync's bits. With clipping it must reproduce its own bits and take
# the CPU backend's decisions on the same file (rollbacks, replayed and held iterations), at least one
# of them a rollback or a replay, so that the rollback path ran on the GPU.
if want post_validation || want checkpoint; then
  "$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 1 -o "$work/pv.json" >/dev/null
  "$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 1 --optimizer sync -o "$work/pv_sync.json" >/dev/null
fi
if want post_validation; then
  decisions() { grep -o 'post-validation: [0-9]* speculative steps* rolled back .*' "$1"; }
  a=$(run_gpu "$work/pv.json" --steps 4 --clip-norm 1e6 | tee "$work/pv_noclip.log" | digest)
  b=$(run_gpu "$work/pv_sync.json" --steps 4 --clip-norm 1e6 | digest)
  c=$(run_gpu "$work/pv.json" --steps 6 --clip-norm 0.05 | tee "$work/pv_clip.log" | digest)
  d=$(run_gpu "$work/pv.json" --steps 6 --clip-norm 0.05 | digest)
  timeout 600 "$zbrun" "$work/pv.json" --local --model "$work/model.json" --timeout 60 --steps 6 --clip-norm 0.05 \
    >"$work/pv_clip_cpu.log" 2>&1
  gpu_decisions=$(decisions "$work/pv_clip.log")
  cpu_decisions=$(decisions "$work/pv_clip_cpu.log")
  undone=$(grep -oE '[0-9]+ (speculative|iterations? replayed)' <<<"$gpu_decisions" | awk '{n += $1} END {print n + 0}')
  if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$c" ] && [ "$c" = "$d" ] && [ -n "$gpu_decisions" ] &&
    [ "$gpu_decisions" = "$cpu_decisions" ] && [ "${undone:-0}" -gt 0 ]; then
    result post_validation PASS "no clipping: $a = sync; clipping: $c twice, as the CPU decided ($gpu_decisions)"
  else
    result post_validation FAIL "no clipping '$a' vs sync '$b'; clipping '$c' vs '$d'; decisions '$gpu_decisions' vs the CPU's '$cpu_decisions' (work/pv_*.log)"
  fi
fi

# --- checkpoints: a run that fails after a checkpoint resumes bit-identically on the GPU --------------
if want checkpoint; then
  ck="$work/ckpt"
  rm -rf "$ck"
  whole=$(run_gpu "$work/pv.json" --steps 6 --quiet | digest)
  run_gpu "$work/pv.json" --steps 6 --quiet --checkpoint "$ck" --every 2 --fail-at 1:3@4 >"$work/ckpt_killed.log"
  killed=$?
  resumed=$(run_gpu "$work/pv.json" --steps 6 --checkpoint "$ck" --every 2 --resume | tee "$work/ckpt_resumed.log" | digest)
  # Steps count from 0: the run fails in step 4, after the checkpoint that ends step 3.
  if [ $killed -ne 0 ] && [ $killed -ne 124 ] && grep -q 'step 4, rank 1, op 3' "$work/ckpt_killed.log" &&
    grep -q 'resumed from .* after step 3 (' "$work/ckpt_resumed.log" && [ -n "$whole" ] && [ "$whole" = "$resumed" ]; then
    result checkpoint PASS "failed in step 4 (exit $killed), resumed after step 3: digest $resumed = the uninterrupted run's"
  else
    result checkpoint FAIL "failing run exit $killed (must fail, not hang), resumed '$resumed' vs '$whole' (work/ckpt_*.log)"
  fi
fi

# --- errors end the run, naming rank and op ---------------------------------------------------------
if want errors; then
  "$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$work/err.json" >/dev/null
  timeout 120 "$zbrun" "$work/err.json" --single-gpu --steps 3 --fail-at 1:3 --timeout 20 >"$out/errors.txt" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep -q 'rank 1, op 3' "$out/errors.txt"; then
    result errors PASS "--fail-at 1:3 exits 1 naming rank 1, op 3"
  else
    result errors FAIL "exit $rc (124 = hung); see errors.txt"
  fi
  timeout 120 "$zbrun" "$work/err.json" --single-gpu --steps 3 --fail-at 1:3 --fault hang --timeout 5 >>"$out/errors.txt" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep -q 'rank 1 is stuck' "$out/errors.txt"; then
    result errors_hang PASS "--fault hang under --single-gpu: exit 1 naming the stuck rank 1"
  else
    result errors_hang FAIL "exit $rc (124 = hung); see errors.txt"
  fi
  # A kernel of rank 1 traps before its op 4 (B0): the fault surfaces at a later call (ops run
  # asynchronously; in one process every stage's next call fails), and the run ends with exit 1 and a
  # place: rank 1's op 4 at the latest, or another rank's ops with "other work on the GPU".
  # A run that only ended by timing out (20 s) must not pass: the device's own error must be what
  # ended it, well within --timeout.
  started=$SECONDS
  timeout 120 "$zbrun" "$work/err.json" --single-gpu --steps 3 --fail-at 1:4 --fault device --timeout 20 \
    >"$out/errors_device.txt" 2>&1
  rc=$?
  took=$((SECONDS - started))
  placed=$(grep -o 'rank [0-9]*, op [0-9]* ([^)]*)[^:]*' "$out/errors_device.txt" | head -1)
  if [ $rc -eq 1 ] && [ -n "$placed" ] && [ $took -lt 15 ] && ! grep -q 'nothing after' "$out/errors_device.txt" &&
    grep -qiE 'launch failure|illegal instruction|the device failed' "$out/errors_device.txt"; then
    result errors_device PASS "--fault device: exit 1 in $took s, placed at \"$placed\""
  else
    result errors_device FAIL "exit $rc (124 = hung) in $took s, placed at \"$placed\"; see errors_device.txt"
  fi
fi

# --- NCCL across two GPUs -------------------------------------------------------------------------
if want nccl; then
  if [ "$gpus" -ge 2 ] && command -v "$mpirun" >/dev/null; then
    "$zbplan" plan --method zb-h1 -p 2 -m 8 --tf 1 --tb 1 --tw 1 -o "$work/nccl.json" >/dev/null
    timeout 300 "$mpirun" -n 2 --oversubscribe "$zbrun" "$work/nccl.json" --backend cuda --model "$work/model.json" --steps 6 \
      --timeout 60 >"$out/nccl.txt" 2>&1
    timeout 300 "$zbrun" "$work/nccl.json" --backend cuda --local --model "$work/model.json" --steps 6 >"$work/nccl_local.log" 2>&1
    a=$(grep -o 'weights digest [0-9a-f]*' "$out/nccl.txt")
    b=$(grep -o 'weights digest [0-9a-f]*' "$work/nccl_local.log")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then result nccl PASS "mpirun -n 2 (NCCL) = in-process: $a"
    else result nccl FAIL "'$a' vs '$b'; see nccl.txt"; fi
    timeout 120 "$mpirun" -n 2 --oversubscribe "$zbrun" "$work/nccl.json" --backend cuda --steps 2 --fail-at 0:2 --timeout 10 \
      >>"$out/nccl.txt" 2>&1
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && result nccl_errors PASS "--fail-at under mpirun ends the job (exit $rc)" ||
      result nccl_errors FAIL "exit $rc (124 = hung)"
  elif [ "$gpus" -ge 2 ]; then
    echo "skipped: $gpus GPUs but no mpirun here" >"$out/nccl.txt"
    result nccl SKIP "no mpirun on this machine (install Open MPI or set MPIRUN)"
  else
    echo "skipped: $gpus GPU(s); NCCL refuses two ranks on one GPU" >"$out/nccl.txt"
    result nccl SKIP "needs 2 GPUs"
  fi
fi

# --- NCCL with several ranks on ONE GPU (tools/nccl_one_gpu_checks.sh) -----------------------------
# Each rank its own NCCL_HOSTID, so NCCL connects them by its socket transport over loopback.
if want nccl_one_gpu; then
  quick_flag=()
  [ $quick -eq 1 ] && quick_flag=(--quick)
  PYTHON=$python bash "$here/tools/nccl_one_gpu_checks.sh" "${quick_flag[@]}" "$zbplan" "$zbrun" "$work/model.json" \
    "$work/nccl_one_gpu" >"$out/nccl_one_gpu.txt" 2>&1
  rc=$?
  cat "$work"/nccl_one_gpu/methods_n*.txt >>"$out/nccl_one_gpu.txt" 2>/dev/null
  lines=$(grep -E '^(PASS|FAIL|SKIP) ' "$out/nccl_one_gpu.txt")
  if [ $rc -eq 77 ] && [ -n "$only" ]; then
    result nccl_one_gpu FAIL "asked for with --only, but: ${lines#SKIP nccl_one_gpu: }"
  elif [ -z "$lines" ]; then
    result nccl_one_gpu FAIL "no results (exit $rc); see nccl_one_gpu.txt"
  else
    while read -r status rest; do result "${rest%%: *}" "$status" "${rest#*: }"; done <<<"$lines"
    if [ $rc -ne 0 ] && [ $rc -ne 77 ] && ! grep -q '^FAIL ' <<<"$lines"; then
      result nccl_one_gpu FAIL "exit $rc without a failed check; see nccl_one_gpu.txt"
    fi
  fi
fi

# --- PyTorch's pipelining reads our V and interleaved schedules --------------------------------------
# Not a GPU check: it is here because GPU machines tend to have a recent PyTorch, and CI has 1.13.
if want pytorch_csv; then
  $torch_python "$here/tests/pytorch_csv_check.py" "$zbplan" "$work/pytorch_csv" >"$out/pytorch_csv.txt" 2>&1
  case $? in
    0) result pytorch_csv PASS "$(head -1 "$out/pytorch_csv.txt"): our V (style v) and interleaved (style loop) schedules read, validated, lowered and simulated" ;;
    77) result pytorch_csv SKIP "$(tail -1 "$out/pytorch_csv.txt")" ;;
    *) result pytorch_csv FAIL "see pytorch_csv.txt" ;;
  esac
fi

# --- benchmark ---------------------------------------------------------------------------------------
if ! want bench; then
  :
elif [ $bench -eq 0 ]; then
  result bench SKIP "--no-bench"
elif [ $quick -eq 1 ]; then
  result bench SKIP "--quick"
elif bash "$here/tools/gpu_bench.sh" "$out/bench" "$build" >"$out/bench.log" 2>&1; then
  result bench PASS "bench/gpu_bench.md (copied to docs/gpu_bench.md)"
else
  result bench FAIL "see bench.log"
fi

echo "results in $out (summary.txt)"
exit $failed
