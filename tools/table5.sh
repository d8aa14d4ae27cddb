#!/usr/bin/env bash
# Prints our bubble rates next to the paper's Table 5 for 1F1B, ZB-H1, ZB-H2 and 1F1B-I, from the
# settings in tests/golden/table5.tsv. Usage: tools/table5.sh [path/to/zbplan]
set -euo pipefail
source "$(dirname "$0")/zbplan_rate.sh"
printf "%-6s %3s %4s | %-15s | %-15s | %-15s | %-15s\n" model p m "1F1B ours/paper" "ZB-H1" "ZB-H2" "1F1B-I"
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc ch h a r1 ri h1 h2 z1 z2 zi; do
  common=(-p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw")
  a1=$(rate --method 1f1b "${common[@]}" --tcomm "$tc")
  ah1=$(rate --method zb-h1 "${common[@]}" --tcomm "$tc")
  ah2=$(rate --method zb-h2 "${common[@]}" --tcomm "$tc")
  # 1F1B-I: chunks per stage as the authors' calculator; per-chunk times T/v, scaled by v (bubble rate is scale-free).
  ai=$(rate --method 1f1b-i --chunks "$ch" "${common[@]}" --tcomm "$(awk "BEGIN {print $tc * $ch}")")
  printf "%-6s %3s %4s | %s / %s | %s / %s | %s / %s | %s / %s\n" "$model" "$p" "$m" "$a1" "$r1" "$ah1" "$h1" "$ah2" "$h2" "$ai" "$ri"
done
