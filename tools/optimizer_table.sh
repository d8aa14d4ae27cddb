#!/usr/bin/env bash
# Post-validation against a synchronous optimizer on the paper's Table 5 settings: for ZB-1p and
# ZB-2p (the heuristic at 1p and 2p) and ZB-V (two chunks per stage, at 1p), the period of
# iterations back to back (zbplan's k-iteration simulation) with sync, with post-validation
# before each stage's first B (default: speculative warm-up), and with post-validation holding
# each stage's first F until post-validated; last, the span's bubble rate (the paper's figure).
# Each plan is made for its optimizer placement (the heuristic's grid ranks by what it costs there).
# Usage: tools/optimizer_table.sh [path/to/zbplan]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
zbplan="${1:-$here/build/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Prints "period period_bubble_rate" of one plan, from its "period" line.
period() {
  "$zbplan" plan -o "$tmp/s.json" "$@" | awk '$1 == "period" {r = $NF; sub(/\)$/, "", r); print $2, r}'
}
printf "%-6s %3s %4s %3s %-5s | %-17s | %-17s | %-17s | %s\n" model p m mem plan "sync period/bubble" \
  "post-val (spec.)" "post-val (hold)" "span bubble"
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc rest; do
  for plan in zb-1p zb-2p zb-v; do
    case "$plan" in
      zb-1p) method=heuristic mem=1p ;;
      zb-2p) method=heuristic mem=2p ;;
      zb-v) method=zb-v mem=1p ;;
    esac
    common=(--method "$method" --mem-limit "$mem" -p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc")
    sync=$(period "${common[@]}" --optimizer sync)
    spec=$(period "${common[@]}" --optimizer post-validation)
    hold=$(period "${common[@]}" --optimizer post-validation --post-validation-at start)
    span=$("$zbplan" plan -o "$tmp/s.json" "${common[@]}" | awk '$1 == "span" && $2 == "bubble" {print $4}')
    printf "%-6s %3s %4s %3s %-5s | %-17s | %-17s | %-17s | %s\n" "$model" "$p" "$m" "$mem" "$plan" "$sync" "$spec" \
      "$hold" "$span"
  done
done
