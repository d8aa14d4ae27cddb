#!/usr/bin/env bash
# Post-validation against a synchronous optimizer on the paper's Table 5 settings: for ZB-1p and
# ZB-2p (the heuristic at 1p and 2p), the period of iterations back to back (zbplan's k-iteration
# simulation) with sync, with post-validation validating before each stage's first B (default:
# speculative warm-up), and with post-validation holding each stage's first F until validated.
# Usage: tools/optimizer_table.sh [path/to/zbplan]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
zbplan="${1:-$here/build/planner/zbplan}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Prints "period bubble" of one plan.
period() { "$zbplan" plan -o "$tmp/s.json" "$@" | awk '/iterations back to back/ {print $9, $12}' | tr -d ');'; }
printf "%-6s %3s %4s %3s | %-17s | %-17s | %-17s | %s\n" model p m mem "sync period/bubble" "post-val (spec.)" "post-val (hold)" "span bubble"
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc rest; do
  for mem in 1p 2p; do
    common=(--method heuristic --mem-limit "$mem" -p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc")
    sync=$(period "${common[@]}" --optimizer sync)
    spec=$(period "${common[@]}" --optimizer post-validation)
    hold=$(period "${common[@]}" --optimizer post-validation --validate-at start)
    span=$("$zbplan" plan -o "$tmp/s.json" "${common[@]}" | awk '$1 == "bubble" && $2 == "rate" {print $3}')
    printf "%-6s %3s %4s %3s | %-17s | %-17s | %-17s | %s\n" "$model" "$p" "$m" "$mem" "$sync" "$spec" "$hold" "$span"
  done
done
