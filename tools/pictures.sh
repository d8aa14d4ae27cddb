#!/usr/bin/env bash
# Draws the 1.5B / p=8 / m=24 schedules of the paper's setting (Table 6 times, M_W = 0.3664 M_B)
# with `zbplan show` and rasterises them into docs/img/ (needs rsvg-convert: librsvg2-bin).
# Usage: tools/pictures.sh [build dir]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
zbplan="$build/planner/zbplan"
out="$here/docs/img"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
problem=(-p 8 -m 24 --tf 18.522 --tb 18.086 --tw 9.337 --tcomm 0.601 --mem-b 1 --mem-w 0.3664)
plan() { "$zbplan" plan -o "$tmp/$1.json" --compute-only "${problem[@]}" "${@:2}" > /dev/null; }
plan 1f1b --method 1f1b
plan zb-h1 --method zb-h1
plan zb-2p --method heuristic --mem-limit 2p
plan ilp-2p --method ilp --mem-limit 2p --ilp-seconds 5
for name in 1f1b zb-h1 zb-2p ilp-2p; do
  "$zbplan" show "$tmp/$name.json" -o "$tmp/$name.svg" > /dev/null
  rsvg-convert "$tmp/$name.svg" -o "$out/$name-p8-m24.png"
  echo "wrote docs/img/$name-p8-m24.png"
done
# The README's picture: a lowered ZB-H1 (send/recv ticks and the optimizer step) on 4 stages.
"$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 0.5 -o "$tmp/small.json" > /dev/null
"$zbplan" show "$tmp/small.json" -o "$here/docs/img/zb-h1-p4-m8.svg" > /dev/null
echo "wrote docs/img/zb-h1-p4-m8.svg"
# Three iterations of ZB-2p back to back with each optimizer (docs/post-validation.md).
for optimizer in sync post-validation; do
  "$zbplan" plan -o "$tmp/$optimizer.json" "${problem[@]}" --method heuristic --mem-limit 2p --optimizer "$optimizer" > /dev/null
  "$zbplan" show "$tmp/$optimizer.json" --iterations 3 -o "$tmp/$optimizer.svg" > /dev/null
  rsvg-convert -w 1600 "$tmp/$optimizer.svg" -o "$out/zb-2p-3-iterations-$optimizer.png"
  echo "wrote docs/img/zb-2p-3-iterations-$optimizer.png"
done
