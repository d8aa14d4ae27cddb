#!/usr/bin/env bash
# GPU benchmark of the profile -> plan -> run loop (issue 7): a GPT sized to fill one GPU, 4 stages
# on it with zbrun --single-gpu (one green-context SM partition per stage), m = 8, 16, 32.
# For 1F1B, ZB-H1, ZB-2p (heuristic, --mem-limit 2p) and ILP it reports measured iteration time,
# measured and planned bubble rates and peak activation memory per stage; then the raw cuBLASLt
# throughput of the B and W calls against the GPU's peak; and Perfetto traces (measured beside
# planned) with their pictures; and zbrun's per-layer F and B+W (--profile-layers) beside PyTorch
# eager + SDPA on the same shapes (tools/torch_anchor.py, tools/anchor_compare.py; python3 with torch).
# Writes OUT_DIR/gpu_bench.md and copies it to docs/gpu_bench.md.
# Usage: tools/gpu_bench.sh OUT_DIR [BUILD_DIR]     (BUILD_DIR: a CUDA build, default build-gpu)
# ZBPP_BENCH_QUICK=1: m = 8 only, 1f1b and zb-2p only, 3 steps (about 3 minutes); its report is not
# copied to docs/gpu_bench.md. ZBPP_BENCH_PYTHON: the python with PyTorch (default python3).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${OUT:?usage: tools/gpu_bench.sh OUT_DIR [BUILD_DIR]}}"
build="${2:-$here/build-gpu}"
mkdir -p "$out"
zbplan="$build/zbplan"
zbrun="$build/zbrun"
p=4
steps=${ZBPP_BENCH_STEPS:-8}
quick=${ZBPP_BENCH_QUICK:-0}
ms=(8 16 32)
methods=(1f1b zb-h1 zb-2p ilp zb-2p-split)
if [ "$quick" = 1 ]; then
  ms=(8)
  methods=(1f1b zb-2p zb-2p-split)
  steps=${ZBPP_BENCH_STEPS:-3}
fi
python=${ZBPP_BENCH_PYTHON:-python3}
# For a dry run of this script without a GPU: ZBPP_BENCH_RUN=--local ZBPP_BENCH_MODEL=tiny.
read -r -a run_mode <<<"${ZBPP_BENCH_RUN:---single-gpu}"

# ~0.6 B parameters: GEMMs dominate (short sequences keep the simple attention kernel small).
cat >"$out/model.json" <<'EOF'
{"vocab": 50304, "seq": 128, "channels": 1536, "heads": 12, "layers": 16, "batch": 32}
EOF
model="${ZBPP_BENCH_MODEL:-$out/model.json}"

# 1. Profile on a schedule with separate B and W.
"$zbplan" plan --method zb-h1 -p $p -m 8 --tf 1 --tb 1 --tw 1 -o "$out/profile_schedule.json" >/dev/null
"$zbrun" "$out/profile_schedule.json" "${run_mode[@]}" --model "$model" --steps 6 --timeout 120 \
  --profile "$out/problem.json" | tee "$out/profile.log"
partition=$(grep -o 'single GPU: .*' "$out/profile.log" || true)
# Per layer (embedding, a block, the head) on one stage's SM partition, for the partition search
# (zbplan plan --layers, docs/partition.md): the zb-2p-split rows plan the split with the schedule.
layer_args=(--backend cpu)
case " ${run_mode[*]} " in *" --single-gpu "*) layer_args=(--backend cuda --profile-sm-parts $p) ;; esac
"$zbrun" --profile-layers "$out/layers_stage.json" --model "$model" "${layer_args[@]}" --profile-repeats 5 \
  >"$out/profile_layers_stage.log" 2>&1 || echo "gpu_bench.sh: zbrun --profile-layers on a stage's partition failed" >&2

# Model FLOPs per token: 6 x the matrix-multiply parameters (12 C^2 a block, V C the head), the
# convention of MFU figures (llm.c, Megatron); tokens per microbatch: batch x seq.
read -r flops_per_token tokens_per_mb < <("$python" -c '
import json, os, sys
if not os.path.isfile(sys.argv[1]): print(0, 0); sys.exit()  # a preset name (the dry run): no MFU
m = json.load(open(sys.argv[1]))
print(6 * (12 * m["layers"] * m["channels"] ** 2 + m["vocab"] * m["channels"]), m["batch"] * m["seq"])' "$model")

# 2. Plan and run every method for every m.
rows=""
failed=0  # planning and runs that failed: any makes the script exit non-zero after the report
for m in "${ms[@]}"; do
  for method in "${methods[@]}"; do
    source=(--problem "$out/problem.json")
    case $method in
      zb-2p) args=(--method heuristic --mem-limit 2p) ;;
      ilp) args=(--method ilp --mem-limit 2p --ilp-seconds "${ZBPP_BENCH_ILP_SECONDS:-30}") ;;
      zb-2p-split) args=(--method heuristic --mem-limit 2p) source=(--layers "$out/layers_stage.json" -p $p) ;;
      *) args=(--method "$method") ;;
    esac
    sched="$out/${method}_m$m.json"
    if ! "$zbplan" plan "${args[@]}" "${source[@]}" -m $m -o "$sched" >"$out/${method}_m$m.plan.log" 2>&1; then
      rows+="| $m | $method | planning failed | | | | | | | |"$'\n'
      failed=$((failed + 1))
      continue
    fi
    trace=()
    [ $m -eq 16 ] && trace=(--trace "$out/trace_${method}_m$m.json")
    log="$out/${method}_m$m.run.log"
    if ! "$zbrun" "$sched" "${run_mode[@]}" --model "$model" --steps "$steps" --timeout 300 "${trace[@]}" >"$log" 2>&1; then
      rows+="| $m | $method | run failed (${method}_m$m.run.log) | | | | | | | |"$'\n'
      failed=$((failed + 1))
      continue
    fi
    iter=$(grep -o 'iteration time [0-9.]*' "$log" | awk '{print $3}')
    period=$(grep -o 'planned per iteration: period [0-9.]*' "$log" | awk '{print $5}')
    bub=$(grep 'iteration time' "$log" | grep -o 'span bubble rate [0-9.]* measured / [0-9.]* planned' | awk '{print $4, $7}')
    mem=$(grep -o 'measured \[[^]]*\], planned \[[^]]*\]' "$log" | sed 's/ MiB//g')
    mem=${mem#measured }
    # The steady step: the median of the steps after the first that post-validation did not replay.
    steady=$(grep -E '^step [1-9][0-9]*: ' "$log" | grep -v replayed | grep -oE ', [0-9.]+ s,' | tr -d ', s' | sort -n |
      awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}')
    mfu=$(awk -v f="$flops_per_token" -v tok=$((m * tokens_per_mb)) -v t="$steady" \
      'BEGIN {if (t > 0 && f > 0) printf "%.1f %%", 100 * f * tok / t / 989.4e12}')
    rows+="| $m | $method | $iter | ${steady:-?} | $mfu | $period | ${bub% *} | ${bub#* } | ${mem%%, planned*} | ${mem#*planned } |"$'\n'
    if [ ${#trace[@]} -gt 0 ]; then
      "$zbplan" show "$sched" --measured "$out/trace_${method}_m$m.json" -o "$out/trace_${method}_m$m.html" >/dev/null || true
    fi
  done
done

# 3. Raw GEMM throughput of the F, B and W calls, whole GPU and one stage's partition.
gemm_whole=$("$build/tools/zbpp_gpu_gemm_bench" --model "$model") || {
  gemm_whole="(GEMM benchmark failed or no GPU)"
  failed=$((failed + 1))
}
# One stage's partition needs green contexts: without them it is not counted as a failure.
gemm_stage=$("$build/tools/zbpp_gpu_gemm_bench" --model "$model" --parts $p || echo "(no green contexts)")

# 4. zbrun's per-layer F, B and W (one block, the head, each alone on the whole GPU) beside PyTorch
# eager + SDPA on the same shapes. Not counted as a failure of the bench: the section says what failed.
anchor_backend=cpu anchor_device=cpu anchor_dtype=fp32  # the dry run (ZBPP_BENCH_RUN=--local) stays on the CPU
case " ${run_mode[*]} " in *" --single-gpu "* | *" cuda "*) anchor_backend=cuda anchor_device=cuda anchor_dtype=bf16 ;; esac
anchor_failed=1
if ! "$python" -c 'import torch' >/dev/null 2>&1; then
  anchor="SKIP: $python cannot import torch: no PyTorch anchor"
  anchor_failed=0
elif ! "$zbrun" --profile-layers "$out/layers.json" --model "$model" --backend $anchor_backend --profile-repeats 10 \
    >"$out/profile_layers.log" 2>&1; then
  anchor="zbrun --profile-layers failed (profile_layers.log)"
elif ! "$python" "$here/tools/torch_anchor.py" --model "$model" --device $anchor_device --dtype $anchor_dtype \
    --repeats 20 --json "$out/torch_anchor.json" >"$out/torch_anchor.log" 2>&1; then
  anchor="tools/torch_anchor.py failed (torch_anchor.log)"
elif ! anchor=$("$python" "$here/tools/anchor_compare.py" "$out/layers.json" "$out/torch_anchor.json" 2>&1); then
  anchor="tools/anchor_compare.py failed: $anchor"
else
  anchor+=$'\n\n''PyTorch side (tools/torch_anchor.py), min / median / max:'$'\n\n''```'$'\n'"$(cat "$out/torch_anchor.log")"$'\n''```'
  anchor_failed=0
fi
if [ $anchor_failed = 1 ]; then echo "gpu_bench.sh: the PyTorch anchor: $anchor" >&2; else echo "${anchor%%$'\n'*}"; fi

{
  echo "# zbrun on one GPU: planned vs measured (tools/gpu_bench.sh)"
  echo
  echo "$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)."
  [ "$quick" = 1 ] && echo "Quick form (ZBPP_BENCH_QUICK=1): m = 8, 1f1b and zb-2p only."
  echo "Model: $(cat "$model"), p = $p stages on one GPU (zbrun --single-gpu; $partition), $steps steps,"
  echo "times are means of steps 1..$((steps - 1)). Problem measured by zbrun --profile:"
  echo
  echo '```'
  cat "$out/problem.json"
  echo '```'
  echo
  echo "| m | method | iteration, measured (s) | steady step (s) | MFU | planned period (ms) | measured bubble | planned bubble | peak activation memory per stage, measured (MiB) | planned (MiB) |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---|---|"
  printf "%s" "$rows"
  echo
  echo "ZB-2p is the heuristic with --mem-limit 2p; ILP is the appendix-G refinement with the same limit."
  echo "zb-2p-split: ZB-2p planned with the split into stages (zbplan plan --layers layers_stage.json: each layer"
  echo "profiled on one stage's SM partition); the other rows run zbrun's default split. Its split: $(grep -o 'partition: [0-9/]* layers ([^)]*)' "$out/zb-2p-split_m${ms[0]}.plan.log" 2>/dev/null | head -1)."
  echo "Steady step: the median of steps 1.. that post-validation did not replay. MFU: 6 x matmul parameters"
  echo "($flops_per_token FLOP a token) x m x $tokens_per_mb tokens over the steady step, against 989.4 TFLOP/s dense bf16."
  echo "Traces (m = 16): trace_<method>_m16.json (ui.perfetto.dev) and trace_<method>_m16.html (zbplan show --measured)."
  echo
  echo "## cuBLASLt throughput of the linear layers' calls"
  echo
  echo "$gemm_whole"
  echo
  echo "One stage's partition:"
  echo
  echo "$gemm_stage"
  echo
  echo "## zbrun beside PyTorch eager + SDPA (per layer, one microbatch)"
  echo
  echo "zbrun --profile-layers --backend $anchor_backend --profile-repeats 10 (layers.json) against"
  echo "tools/torch_anchor.py --device $anchor_device --dtype $anchor_dtype --repeats 20 (torch_anchor.json), the same model file:"
  echo
  echo "$anchor"
} >"$out/gpu_bench.md"
cat "$out/gpu_bench.md"
if [ "$failed" -gt 0 ]; then
  echo "gpu_bench.sh: $failed of the planning, runs and GEMM benchmark above failed (see the table and $out/*.log);" \
    "docs/gpu_bench.md is left as it was" >&2
  exit 1
fi
if [ "$quick" = 1 ]; then
  echo "gpu_bench.sh: ZBPP_BENCH_QUICK=1: $out/gpu_bench.md is not copied to docs/gpu_bench.md" >&2
elif [ -z "${ZBPP_BENCH_RUN:-}" ]; then cp "$out/gpu_bench.md" "$here/docs/gpu_bench.md"; fi
