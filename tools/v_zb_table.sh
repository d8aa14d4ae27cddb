#!/usr/bin/env bash
# V-ZB against ZB-V at 1F1B's memory on the paper's settings (tests/golden/table5.tsv): span
# bubble rate of `zbplan plan --method zb-v` and `--method v-zb`, each chunk half a stage's times,
# M_B = 0.5 and M_W = 0.25 a chunk. Prints the markdown rows of docs/v-shape.md's V-ZB table.
# Usage: tools/v_zb_table.sh [path/to/zbplan]
set -euo pipefail
source "$(dirname "$0")/zbplan_rate.sh"
echo "| setting | zb-v | v-zb |"
echo "|---|---|---|"
grep -v '^#' "$here/tests/golden/table5.tsv" | while IFS=$'\t' read -r model p m tf tb tw tc _; do
  read -r hf hb hw < <(awk -v f="$tf" -v b="$tb" -v w="$tw" 'BEGIN {printf "%.10g %.10g %.10g\n", f / 2, b / 2, w / 2}')
  args=(-p "$p" -m "$m" --chunks 2 --tf "$hf" --tb "$hb" --tw "$hw" --tcomm "$tc" --mem-b 0.5 --mem-w 0.25 --compute-only)
  echo "| $model p=$p m=$m | $(rate --method zb-v "${args[@]}") | $(rate --method v-zb "${args[@]}") |"
done
