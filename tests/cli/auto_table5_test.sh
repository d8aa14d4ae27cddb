#!/usr/bin/env bash
# auto's pick on the paper's Table 5 settings is no worse than when issue 35 was filed
# (tests/golden/auto_table5.tsv), for the settings of one model. The searches run whole
# (--time-limit 0, which also leaves the ILPs out), so the figures do not depend on the machine's
# speed; what the default time limit costs is tools/auto_compare.sh's to measure (docs/benchmarks.md).
# Usage: auto_table5_test.sh ZBPLAN MODEL
set -euo pipefail
zbplan=$1 model=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "%-18s %-5s %12s %12s\n" setting limit recorded today
worse=0 cells=0
while IFS=$'\t' read -r name p m limit recorded; do
  [ "$name" = "$model" ] || continue
  # The setting's times, and M_W from its h and a (as tools/auto_compare.sh derives it).
  IFS=$'\t' read -r _ _ _ tf tb tw tc _ h a _ < <(awk -F'\t' -v md="$name" -v p="$p" -v m="$m" \
    '$1 == md && $2 == p && $3 == m' "$here/tests/golden/table5.tsv")
  mw=$(awk "BEGIN {printf \"%.4f\", 32 * $h / (34 * $h + 5 * $a * 1024)}")
  "$zbplan" plan --method auto --quiet --time-limit 0 -o "$tmp/s.json" -p "$p" -m "$m" --tf "$tf" --tb "$tb" \
    --tw "$tw" --tcomm "$tc" --mem-b 1 --mem-w "$mw" --mem-limit "$limit" > "$tmp/out"
  today=$(awk '$1 == "objective" {print $4; exit}' "$tmp/out" | tr -d ,)
  flag=""
  if [ -z "$today" ] || awk "BEGIN {exit !($today > $recorded)}"; then flag="  WORSE"; worse=1; fi
  printf "%-18s %-5s %12s %12s%s\n" "$name p=$p m=$m" "$limit" "$recorded" "${today:-none}" "$flag"
  cells=$((cells + 1))
done < <(grep -v '^#' "$here/tests/golden/auto_table5.tsv")
[ "$cells" -gt 0 ] || { echo "FAIL: no recorded settings of $model" >&2; exit 1; }
[ "$worse" = 0 ] || { echo "FAIL: auto's pick is worse than recorded" >&2; exit 1; }
