#!/usr/bin/env bash
# `zbplan plan --method auto` of two builds side by side on the paper's Table 5 settings
# (tests/golden/table5.tsv, M_W/M_B from its h and a at s = 1024), at 1p and 2p: each one's
# objective (the period, optimizer included), wall time and peak RSS, and whether the second's
# pick is worse. Neither gets --time-limit (that would add the ILPs): each runs as a user's call.
# Usage: tools/auto_compare.sh OLD_ZBPLAN NEW_ZBPLAN [MAX_P (default 16)]
# Exits 1 where the second's objective is above the first's anywhere.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
old=$1 new=$2 max_p=${3:-16}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
run() {  # run ZBPLAN ARGS...: "objective seconds MiB"
  local bin=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" plan --method auto --quiet -o "$tmp/s.json" "$@" > "$tmp/out"
  local objective
  objective=$(awk '$1 == "objective" {print $4; exit}' "$tmp/out" | tr -d ,)
  read -r seconds kb < "$tmp/time"
  echo "$objective $seconds $((kb / 1024))"
}
printf "| setting | limit | old objective | new objective | old s | new s | old MiB | new MiB | new worse |\n"
printf "|---|---|---:|---:|---:|---:|---:|---:|---|\n"
worse=0
while IFS=$'\t' read -r model p m tf tb tw tc _ h a _; do
  [ "$p" -le "$max_p" ] || continue
  mw=$(awk "BEGIN {printf \"%.4f\", 32 * $h / (34 * $h + 5 * $a * 1024)}")
  for limit in 1p 2p; do
    args=(-p "$p" -m "$m" --tf "$tf" --tb "$tb" --tw "$tw" --tcomm "$tc" --mem-b 1 --mem-w "$mw" --mem-limit "$limit")
    read -r o_obj o_s o_mb <<< "$(run "$old" "${args[@]}")"
    read -r n_obj n_s n_mb <<< "$(run "$new" "${args[@]}")"
    flag=no
    if awk "BEGIN {exit !($n_obj > $o_obj)}"; then flag=YES; worse=1; fi
    printf "| %s p=%s m=%s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$model" "$p" "$m" "$limit" "$o_obj" "$n_obj" \
      "$o_s" "$n_s" "$o_mb" "$n_mb" "$flag"
  done
done < <(grep -v '^#' "$here/tests/golden/table5.tsv")
exit $worse
