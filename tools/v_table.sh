#!/usr/bin/env bash
# Bubble rate (span bubble rate, the paper's cost) against the activation memory limit, for one
# chunk per stage (zbplan's heuristic) and for the V placement (the V search: --chunks 2 with each
# chunk half a stage's times and memory), beside the V-Min, V-Half and V-ZB blocks at their own
# peak memory and the V search at exactly that memory, with the gap of the V search's plan to its
# certified lower bound (core/bounds.h). Settings: the paper's 1.5B p=8 m=24 and its
# 14.6B p=16 m=48 (tests/golden/table5.tsv). Limits are multiples of p*M_B (1F1B's memory is 1p).
# Usage: tools/v_table.sh [path/to/zbplan]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
zbplan="${1:-$here/build/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# "RATE PEAK GAP" of one plan (GAP: "12.34 % (memory)", its certified bound's gap and which bound),
# or "- - -" when nothing fits the limit.
plan() {
  # Searches run whole (--time-limit 0): the table is the same on any machine.
  if "$zbplan" plan --compute-only --time-limit 0 -o "$tmp/s.json" "$@" > "$tmp/out" 2> /dev/null; then
    awk '$1 == "span" && $2 == "bubble" {r = $4} $1 == "peak" {gsub(/[\[\],]/, " "); m = 0;
         for (i = 3; i <= NF && $i ~ /^[0-9.]+$/; i++) if ($i + 0 > m) m = $i + 0; pk = m}
         $1 == "bound:" {src = $5; gsub(/[(),]/, "", src); for (i = 1; i < NF; i++) if ($i == "gap") g = $(i + 1)}
         END {printf "%s %s %.2f %% (%s)\n", r, pk, g, src}' "$tmp/out"
  else
    echo "- - -"
  fi
}
limits="0.125 0.25 0.33 0.5 0.75 1 1.5 2"
for setting in "1.5B 8 24" "14.6B 16 48"; do
  read -r model p m <<< "$setting"
  IFS=$'\t' read -r _ _ _ tf tb tw tc _ < <(awk -F'\t' -v md="$model" -v p="$p" -v m="$m" '$1 == md && $2 == p && $3 == m' "$here/tests/golden/table5.tsv")
  one=(-p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc")
  half() { awk -v x="$1" 'BEGIN {printf "%.6g", x / 2}'; }
  v=(-p "$p" -m "$m" --chunks 2 --tf "$(half "$tf")" --tb "$(half "$tb")" --tw "$(half "$tw")" --tcomm "$tc"
     --mem-b 0.5 --mem-w 0.25)
  echo "$model p=$p m=$m (M_B = 1 per stage, M_W = 0.5; limit as a multiple of p)"
  echo
  echo "| limit | 1 chunk (heuristic) | V (search) | V's gap to its bound |"
  echo "|---|---|---|---|"
  for l in $limits; do
    read -r r1 _ <<< "$(plan --method heuristic "${one[@]}" --mem-limit "${l}p")"
    read -r rv _ gv <<< "$(plan --method heuristic "${v[@]}" --mem-limit "${l}p")"
    echo "| ${l}p | $r1 | $rv | $gv |"
  done
  echo
  echo "| block | its peak memory | its bubble rate | V search at that memory |"
  echo "|---|---|---|---|"
  for method in v-min v-half v-zb; do
    read -r rb pk _ <<< "$(plan --method "$method" "${v[@]}")"
    read -r rs _ <<< "$(plan --method heuristic "${v[@]}" --mem-limit "$pk")"
    echo "| $method | $pk ($(awk -v x="$pk" -v p="$p" 'BEGIN {printf "%.3gp", x / p}')) | $rb | $rs |"
  done
  echo
done
