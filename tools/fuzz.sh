#!/usr/bin/env bash
# Runs each libFuzzer harness of a -DZBPP_FUZZ=ON build for SECONDS (default 60), starting from
# seeds made of real files: docs/examples problems, schedules zbplan writes and their PyTorch
# CSVs, the bad-input corpus, and zbplan and zbrun command lines. New inputs accumulate in
# BUILD/fuzz/corpus/HARNESS; a crash leaves its input in BUILD/fuzz/artifacts and fails the script.
# ZBPP_JOBS harnesses run at once (default 2), each one process on one core.
# Usage: tools/fuzz.sh BUILD [SECONDS] [HARNESS...] [-- LIBFUZZER_FLAGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "$1" && pwd); seconds=${2:-60}; shift $(( $# >= 2 ? 2 : 1 ))
harnesses=(); extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
  harnesses+=("$1"); shift
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_problem fuzz_schedule fuzz_zbplan_cli fuzz_csv_import fuzz_zbrun_cli
                                          fuzz_measured_trace)
zbplan=$build/zbplan
work=$build/fuzz
mkdir -p "$work/artifacts"

# Seeds (rebuilt each run; small files only, so libFuzzer's default input size stays small).
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{fuzz_problem,fuzz_schedule,fuzz_zbplan_cli,fuzz_csv_import,fuzz_zbrun_cli,fuzz_measured_trace}
cp docs/examples/*.problem.json "$seeds/fuzz_problem/"
find tests/bad_inputs/problem -name '*.json' -size -16k -exec cp {} "$seeds/fuzz_problem/" \;
find tests/bad_inputs/schedule -name '*.json' -size -16k -exec cp {} "$seeds/fuzz_schedule/" \;
n=0
plan() { n=$((n + 1)); "$zbplan" plan "$@" -o "$seeds/fuzz_schedule/planned$n.json" > /dev/null; }
plan --method 1f1b -p 2 -m 3 --tf 1 --tb 1 --tw 1
plan --method zb-h1 -p 3 -m 4 --tf 1,2,1 --tb 1 --tw 0.5 --tcomm 0.1
plan --method zb-h2 -p 2 -m 4 --tf 1 --tb 1 --tw 1 --compute-only
plan --method heuristic -p 3 -m 5 --tf 1 --tb 1.5 --tw 0.7 --mem-limit 2p
plan --method zb-v -p 2 -m 3 --tf 2 --tb 2 --tw 1
plan --method dualpipe-v -p 2 -m 4 --tf 2 --tb 2 --tw 1
plan --method 1f1b-i -p 2 -m 4 --chunks 2 --tf 1 --tb 1 --tw 1 --compute-only
plan --method zb-h1 --problem docs/examples/heterogeneous-p4.problem.json
# A partition chosen from layer costs under a device memory: the partition record, per-stage limits.
plan --method heuristic --layers docs/examples/heavy-head.layers.json -p 3 -m 4 --device-memory 1GiB
# PyTorch CSVs: every planned schedule exported, the golden CSVs, and any CSV bad input.
for s in "$seeds"/fuzz_schedule/planned*.json; do
  "$zbplan" export "$s" --format pytorch-csv -o "$seeds/fuzz_csv_import/$(basename "$s" .json).csv" > /dev/null
done
cp tests/golden/*.csv tests/golden/pytorch/*.csv "$seeds/fuzz_csv_import/"
find tests/bad_inputs -name '*.csv' -size -16k -exec cp {} "$seeds/fuzz_csv_import/" \;
# Traces for show --measured (fuzz_measured_trace draws under a 4-stage plan): a planned trace, and
# the same relabelled as zbrun's measured process (pid 1).
"$zbplan" plan --method zb-h1 -p 4 -m 4 --tf 1 --tb 1 --tw 0.5 -o "$work/trace-plan.json" > /dev/null
"$zbplan" simulate "$work/trace-plan.json" --trace "$seeds/fuzz_measured_trace/planned.json" > /dev/null
sed 's/"pid":0/"pid":1/g' "$seeds/fuzz_measured_trace/planned.json" > "$seeds/fuzz_measured_trace/measured.json"
# zbplan command lines, one argument a line (see tests/fuzz/fuzz_zbplan_cli.cpp for the fixtures).
k=0
cli() { k=$((k + 1)); printf '%s\n' "$@" | head -c -1 > "$seeds/fuzz_zbplan_cli/cli$k"; }
cli plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 0.5 -o out.json
cli plan --method heuristic --problem problem.json --mem-limit 1.5p -o out.json
cli plan --method zb-v -p 3 -m 5 --tf 1,2,1 --tb 1 --tw 1 --tcomm 0.2 --compute-only -o out.json
cli plan --method 1f1b-i -p 2 -m 4 --chunks 2 --tf 1 --tb 1 --tw 1 -o out.json
cli simulate s.json --trace t.json
cli validate c.json
cli show s.json -o s.svg
cli show c.json -o s.html --measured trace.json
cli export s.json --format pytorch-csv -o out.csv
cli import in.csv --tf 1 --tb 2 --tw 1 -o out.json
cli plan --help
# zbrun command lines (tests/fuzz/fuzz_zbrun_cli.cpp adds --check --local and holds the fixtures).
k=0
run() { k=$((k + 1)); printf '%s\n' "$@" | head -c -1 > "$seeds/fuzz_zbrun_cli/run$k"; }
run s.json --steps 3
run v.json --model model.json --data data.txt --layer-split 1,1,0,1
run s.json --fail-at 1:3@0 --fault truncate --checkpoint ck --every 2
run c.json --inject-nonfinite 0:1 --pace 0.5
run s.json --metrics m.jsonl --trace t.json --profile p.json --dump-weights . --resume
run v.json --backend cuda --timeout 0.5 --lr 1e-3 --clip-norm 0

# One harness: its figures, or its log's end when it failed (non-zero).
fuzz_one() {
  local h=$1 dict=$src/tests/fuzz/json.dict
  mkdir -p "$work/corpus/$h"
  echo "== $h: ${seconds} s"
  # -timeout: one input may take 10 s at most; -rss_limit_mb: 2 GiB; both count as failures.
  # Absolute paths: the CLI harnesses work in their own temporary directories.
  [ "$h" = fuzz_zbplan_cli ] && dict=$src/tests/fuzz/cli.dict
  [ "$h" = fuzz_csv_import ] && dict=$src/tests/fuzz/csv.dict
  [ "$h" = fuzz_zbrun_cli ] && dict=$src/tests/fuzz/zbrun.dict
  if ! "$build/tests/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -dict="$dict" -artifact_prefix="$work/artifacts/$h-" "${extra[@]}" \
      "$work/corpus/$h" "$seeds/$h" > "$work/$h.log" 2>&1; then
    echo "$h FAILED; its log ($work/$h.log) ends:"; tail -40 "$work/$h.log"
    return 1
  fi
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$work/$h.log" || true
}

# ZBPP_JOBS harnesses at a time (default 2: each is one process on one core); their reports in order.
jobs=${ZBPP_JOBS:-2}
status=0 running=0
for h in "${harnesses[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$h" > "$work/$h.report" 2>&1 &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
for h in "${harnesses[@]}"; do cat "$work/$h.report"; done
exit $status
