#!/usr/bin/env bash
# Wall time and peak memory (GNU time) of zbplan plan, then validate and simulate of the file it
# wrote, for every method on one large problem (docs/reliability.md). Prints a markdown table.
# Usage: tools/large_inputs.sh ZBPLAN [P] [M]     (default p = 64, m = 1024)
set -euo pipefail
zbplan=$1 p=${2:-64} m=${3:-1024}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
measure() {  # measure CMD...: "wall s (user+sys s) | peak MB | exit"
  local code=0
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" > "$tmp/out" 2> "$tmp/err" || code=$?
  read -r wall user sys kb < <(tail -1 "$tmp/time")
  printf '%s (%s) | %d | %s' "$wall" "$(awk "BEGIN {print $user + $sys}")" "$((kb / 1024))" "$code"
}
echo "Wall seconds, with CPU seconds (user + sys) in parentheses; peak resident memory in MB."
echo
echo "| method | plan: s | plan: peak MB | exit | file MB | ops | validate: s | validate: peak MB | simulate: s | simulate: peak MB | note |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for method in 1f1b zb-h1 zb-h2 zb-v 1f1b-i heuristic ilp auto; do
  args=(plan --method "$method" -p "$p" -m "$m" --tf 1 --tb 1 --tw 0.5 --tcomm 0.1 -o "$tmp/s.json")
  case $method in
    1f1b-i) args+=(--chunks 2) ;;
    heuristic) args+=(--mem-limit 2p) ;;
    ilp|auto) args+=(--mem-limit 2p --time-limit 10) ;;
  esac
  planned=$(measure "$zbplan" "${args[@]}")
  note=$(cat "$tmp/out" "$tmp/err" | grep -o 'auto: best by .*\|ilp: the model would need [0-9]* order variables' | tail -1 || true)
  if [ -f "$tmp/s.json" ]; then
    size=$(awk "BEGIN {printf \"%.1f\", $(stat -c %s "$tmp/s.json") / 1048576}")
    ops=$(grep -c '"type"' "$tmp/s.json")
    v=$(measure "$zbplan" validate "$tmp/s.json"); v=${v% | *}
    s=$(measure "$zbplan" simulate "$tmp/s.json"); s=${s% | *}
  else
    size=- ops=- v="- | -" s="- | -"
  fi
  echo "| $method | $planned | $size | $ops | $v | $s | $note |"
  rm -f "$tmp/s.json"
done
