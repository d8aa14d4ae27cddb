#!/usr/bin/env bash
# Whole-process timing of `zbplan plan --method heuristic` (issue 20): start, search, lowering,
# validation, simulation, writing the file, exit. For each problem (the paper's 28.3B times, 2p),
# `hyperfine -N --warmup 3 --runs RUNS` and one line of min / median / max wall milliseconds per
# zbplan given (e.g. a build of main beside this one). Prints figures, asserts nothing.
# Usage: tools/process_bench.sh [--runs N] [--out DIR] ZBPLAN [ZBPLAN...]
#   --out DIR   where the schedule is written (default: the current directory; a tmpfs such as
#               /dev/shm leaves the disk's fsync out)
set -euo pipefail
runs=30 out=.
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--runs N] [--out DIR] ZBPLAN [ZBPLAN...]" >&2; exit 2; }
command -v hyperfine > /dev/null || { echo "$0: needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
times="--tf 10.402 --tb 10.248 --tw 7.698 --tcomm 0.46 --mem-b 1 --mem-w 0.3664 --mem-limit 2p"
json=$(mktemp)
trap 'rm -f "$json" "$json.err" "$out"/process_bench_$$.json' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); output in $out; hyperfine -N --warmup 3 --runs $runs"
printf "%-14s %7s %9s %9s %9s  %s\n" problem ops "min ms" "median" "max" zbplan
for pm in "8 24" "16 128" "32 256" "64 512"; do
  read -r p m <<< "$pm"
  for zbplan in "$@"; do
    # hyperfine's warnings (outliers on a busy machine) would interleave with the table.
    if ! hyperfine -N --warmup 3 --runs "$runs" --export-json "$json" \
        "$zbplan plan --method heuristic -p $p -m $m $times -o $out/process_bench_$$.json" > /dev/null 2> "$json.err"; then
      cat "$json.err" >&2
      exit 1
    fi
    python3 - "$json" "p=$p m=$m" $((3 * p * m)) "$zbplan" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"][0]["times"]
ms = sorted(t * 1e3 for t in r)
print(f"{sys.argv[2]:<14} {sys.argv[3]:>7} {ms[0]:9.2f} {statistics.median(ms):9.2f} {ms[-1]:9.2f}  {sys.argv[4]}")
EOF
  done
done
