#!/usr/bin/env bash
# The 24 ZB cells of Table 5 (limits 1p and 2p): the paper's bubble rate, the heuristic's, the
# ILP's (warm-started from the heuristic, --time-limit each), the bubble rate no schedule can beat
# (the certified bound), the remaining gap and the ILP's status.
# Usage: tools/ilp_table.sh [path/to/zbplan] [seconds per cell, default 60]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
zbplan="${1:-$here/build/zbplan}"
limit="${2:-60}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
printf "%-6s %3s %4s %3s | %6s | %9s | %9s | %9s | %8s | %-13s | %5s\n" model p m lim paper heuristic ilp bound "gap %" status s
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc ch h a r1 ri h1 h2 z1 z2 zi; do
  # Table 1 activation memory per token-layer, s = 1024 (as tests/planner/search_heuristic_test.cpp).
  mb=$((34 * h + 5 * a * 1024)); mw=$((32 * h))
  for lim in 1p 2p; do
    paper=$([ "$lim" = 1p ] && echo "$z1" || echo "$z2")
    common=(-p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc" --mem-b "$mb" --mem-w "$mw" --mem-limit "$lim" --compute-only)
    "$zbplan" plan --method heuristic "${common[@]}" -o "$tmp/h.json" > /dev/null
    "$zbplan" plan --method ilp --time-limit "$limit" --quiet "${common[@]}" -o "$tmp/i.json" > /dev/null
    printf "%-6s %3s %4s %3s | %6s | %9.6f | %9.6f | %9.6f | %8.4f | %-13s | %5.1f\n" "$model" "$p" "$m" "$lim" "$paper" \
      "$(field "$tmp/h.json" "d['span_bubble_rate']")" "$(field "$tmp/i.json" "d['span_bubble_rate']")" \
      "$(field "$tmp/i.json" "d['solver']['bubble_rate_bound']")" "$(field "$tmp/i.json" "100*d['solver']['gap']")" \
      "$(field "$tmp/i.json" "d['solver']['status']")" "$(field "$tmp/i.json" "d['solver']['seconds']")"
  done
done
