#!/usr/bin/env bash
# Span-optimised against wall-optimised schedules on the paper's Table 5 settings (issue 10). For
# each cell, the heuristic planned for the period under post-validation (where the period is the
# span, the paper's cost) and for the wall clock under a synchronous step (--objective wall
# --optimizer sync, the all-reduce taken as instant so that the wall clock is the makespan), each
# scored both ways as a bubble rate: by the span and by the makespan; the best hand schedule that
# fits (ZB-H1 at 1p, ZB-H2 at 2p) by makespan; and the ramp bound, the least makespan bubble any
# schedule can have.
# With --ilp SECONDS, also the ILP minimising the wall clock (--method ilp --objective wall) with
# that time limit: its makespan bubble, the bubble of the bound it certified (the span bounds,
# the ramp bound or CBC's, whichever is largest), that bound's source and the ILP's status.
# --mem 1p|2p keeps only those cells (the default run, without --ilp, takes about a minute).
# Usage: tools/objective_table.sh [--ilp SECONDS] [--mem 1p|2p] [path/to/zbplan]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
ilp=""
mems=(1p 2p)
while [ $# -gt 0 ]; do
  case "$1" in
    --ilp) ilp="$2"; shift 2 ;;
    --mem) mems=("$2"); shift 2 ;;
    *) break ;;
  esac
done
zbplan="${1:-$here/build/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
period=(--optimizer post-validation --objective period)
wall=(--optimizer sync --allreduce-latency 0 --objective wall)
# Prints "span_bubble makespan_bubble bound_bubble" of one plan; busy = m (T_F + T_B + T_W).
score() {
  local busy=$1
  shift
  "$zbplan" plan --time-limit 0 -o "$tmp/s.json" "$@" |
    awk -v busy="$busy" '$1 == "span" && $2 != "bubble" {span = $2} $1 == "makespan" {mk = $2}
      $1 == "ramp" && $2 == "bound" {bound = $3}
      END {printf "%.4f %.4f %.4f\n", (span - busy) / span, (mk - busy) / mk, (bound - busy) / bound}'
}
# Prints "makespan_bubble bound_bubble source status" of the wall-minimising ILP, from its
# "bound: wall >= B (source), ..., gap G % (status)" line.
ilp_score() {
  local busy=$1
  shift
  "$zbplan" plan -o "$tmp/i.json" "${wall[@]}" --method ilp --time-limit "$ilp" --quiet "$@" |
    awk -v busy="$busy" '$1 == "makespan" {mk = $2}
      /bound: wall >= / {bound = $4; src = $5; st = $NF; gsub(/[(),]/, "", src); gsub(/[()]/, "", st)}
      END {printf "%.4f %.4f %s %s\n", (mk - busy) / mk, (bound - busy) / bound, src, st}'
}
# The last column is padded only when another follows it.
last="%s"
[ -n "$ilp" ] && last="%-10s"
header=$(printf "%-6s %3s %4s %3s | %-15s | %-15s | %-11s | $last" model p m mem "period-opt s/mk" "wall-opt s/mk" \
  "hand (mk)" "ramp bound")
[ -n "$ilp" ] && header+=$(printf " | %s" "ilp wall (${ilp} s): makespan / bound (source, status)")
echo "$header"
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc rest; do
  busy=$(awk "BEGIN {print $m * ($tf + $tb + $tw)}")
  common=(-p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc")
  for mem in "${mems[@]}"; do
    read -r ps pw bound < <(score "$busy" --method heuristic --mem-limit "$mem" "${period[@]}" "${common[@]}")
    read -r ws ww _ < <(score "$busy" --method heuristic --mem-limit "$mem" "${wall[@]}" "${common[@]}")
    hand=$([ "$mem" = 1p ] && echo zb-h1 || echo zb-h2)
    read -r _ hw _ < <(score "$busy" --method "$hand" --mem-limit "$mem" "${wall[@]}" "${common[@]}")
    line=$(printf "%-6s %3s %4s %3s | %s / %s | %s / %s | %s %s | $last" "$model" "$p" "$m" "$mem" "$ps" "$pw" "$ws" "$ww" "$hand" "$hw" "$bound")
    if [ -n "$ilp" ]; then
      read -r iw ib isrc ist < <(ilp_score "$busy" --mem-limit "$mem" "${common[@]}")
      line+=$(printf " | %s / %s (%s, %s)" "$iw" "$ib" "$isrc" "$ist")
    fi
    echo "$line"
  done
done
