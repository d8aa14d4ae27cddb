#!/usr/bin/env bash
# Small 1p problems with per-stage times (issue 10): ZB-H1's wall clock against the heuristic and
# the ILP, both minimising the wall clock (--objective wall --optimizer sync, the all-reduce taken
# as instant so that the wall clock is the makespan), and the bound the ILP certified. Times as
# tools/ilp_random.cpp draws them (per stage T_F U[0.8,1.2], T_B U[0.8,1.3], T_W U[0.4,0.8],
# M_W U[0.3,0.5]; T_comm U[0,0.1]; 3 decimals), from Python's seeded generator.
# Prints wall clocks (not bubbles: the stages' busy times differ).
# Usage: tools/ilp_wall_small.sh [problems=8] [seconds per ILP=30] [p=4] [m=8] [seed=1] [path/to/zbplan]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
count="${1:-8}" seconds="${2:-30}" p="${3:-4}" m="${4:-8}" seed="${5:-1}"
zbplan="${6:-$here/build/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# One line of flags per problem.
python3 - "$count" "$p" "$seed" > "$tmp/problems" <<'PY'
import random, sys
count, p, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
u = lambda a, b: f"{round(rng.uniform(a, b), 3):g}"
for _ in range(count):
    tf = ",".join(u(0.8, 1.2) for _ in range(p)); tb = ",".join(u(0.8, 1.3) for _ in range(p))
    tw = ",".join(u(0.4, 0.8) for _ in range(p)); mw = ",".join(u(0.3, 0.5) for _ in range(p))
    print(f"--tf {tf} --tb {tb} --tw {tw} --mem-w {mw} --tcomm {u(0, 0.1)}")
PY
sync=(--optimizer sync --allreduce-latency 0 --objective wall --mem-limit 1p --quiet)
wall() { "$zbplan" plan -o "$tmp/s.json" "${sync[@]}" "$@" | awk '$1 == "makespan" {print $2}'; }
printf "%2s %2s %3s | %8s %9s %8s | %8s %-14s %-12s %6s\n" "#" p m zb-h1 heuristic ilp bound source status seconds
i=0
while read -r -a flags; do
  common=(-p "$p" -m "$m" "${flags[@]}")
  h1=$(wall --method zb-h1 "${common[@]}" 2>/dev/null || echo "-")
  he=$(wall --method heuristic "${common[@]}")
  out=$("$zbplan" plan -o "$tmp/i.json" "${sync[@]}" --method ilp --time-limit "$seconds" "${common[@]}")
  il=$(awk '$1 == "makespan" {print $2}' <<<"$out")
  read -r bound src st secs < <(awk '/bound: wall >= / {b = $4; s = $5; st = $NF; gsub(/[(),]/, "", s); gsub(/[()]/, "", st)}
      /warm-started from the heuristic/ {match($0, /[0-9.]+ s$/); t = substr($0, RSTART, RLENGTH - 2)}
      END {print b, s, st, t}' <<<"$out")
  printf "%2d %2d %3d | %8s %9s %8s | %8s %-14s %-12s %6s\n" "$i" "$p" "$m" "$h1" "$he" "$il" "$bound" "$src" "$st" "$secs"
  i=$((i + 1))
done < "$tmp/problems"
