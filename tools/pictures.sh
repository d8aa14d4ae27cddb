#!/usr/bin/env bash
# Draws the 1.5B / p=8 / m=24 schedules of the paper's setting (Table 6 times, M_W = 0.3664 M_B)
# with `zbplan show`, and the bubble rate against the memory limit (tools/v_picture.py), and
# rasterises them into docs/img/ (needs rsvg-convert: librsvg2-bin).
# Each PNG records the SHA-256 of the SVG it was drawn from and the rasteriser (tools/png_stamp.py),
# so tests/check_pictures.py can tell that a redraw gives the committed pictures.
# Usage: tools/pictures.sh [build dir] [output dir, default docs/img]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
zbplan="$build/zbplan"
out="${2:-$here/docs/img}"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# What draws the pixels: the same SVG gives the same PNG only with the same program, libraries
# and font.
font="$(fc-match sans-serif 2>/dev/null || echo "unknown (no fc-match)")"
libraries="$(dpkg-query -W -f='${Package} ${Version}, ' librsvg2-2 libcairo2 libpango-1.0-0 libharfbuzz0b \
             libfreetype6 2>/dev/null || echo "unknown (no dpkg-query)")"
rasteriser="$(rsvg-convert --version | head -1); ${libraries%, }; sans-serif $font"
png() {  # png SVG PNG [rsvg-convert options]
  rsvg-convert "${@:3}" "$1" -o "$2"
  python3 "$here/tools/png_stamp.py" stamp "$1" "$2" "$rasteriser"
  echo "wrote $2"
}
problem=(-p 8 -m 24 --tf 18.522 --tb 18.086 --tw 9.337 --tcomm 0.601 --mem-b 1 --mem-w 0.3664)
plan() { "$zbplan" plan -o "$tmp/$1.json" --compute-only "${problem[@]}" "${@:2}" > /dev/null; }
plan 1f1b --method 1f1b
plan zb-h1 --method zb-h1
plan zb-2p --method heuristic --mem-limit 2p
plan ilp-2p --method ilp --mem-limit 2p --ilp-seconds 5 --quiet
plan zb-v --method zb-v
for name in 1f1b zb-h1 zb-2p ilp-2p zb-v; do
  "$zbplan" show "$tmp/$name.json" -o "$tmp/$name.svg" > /dev/null
  png "$tmp/$name.svg" "$out/$name-p8-m24.png"
done
# The README's picture: a lowered ZB-H1 (send/recv ticks and the optimizer step) on 4 stages.
"$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 0.5 -o "$tmp/small.json" > /dev/null
"$zbplan" show "$tmp/small.json" -o "$out/zb-h1-p4-m8.svg" > /dev/null
echo "wrote $out/zb-h1-p4-m8.svg"
# Three iterations of ZB-2p back to back with each optimizer (docs/post-validation.md).
for optimizer in sync post-validation; do
  "$zbplan" plan -o "$tmp/$optimizer.json" "${problem[@]}" --method heuristic --mem-limit 2p --optimizer "$optimizer" > /dev/null
  "$zbplan" show "$tmp/$optimizer.json" --iterations 3 -o "$tmp/$optimizer.svg" > /dev/null
  png "$tmp/$optimizer.svg" "$out/zb-2p-3-iterations-$optimizer.png" -w 1600
done
# Bubble rate against the memory limit, one chunk and V (docs/v-shape.md; about a minute).
python3 "$here/tools/v_picture.py" "$zbplan" "$out/v-bubble-memory.svg" > /dev/null
echo "wrote $out/v-bubble-memory.svg"
png "$out/v-bubble-memory.svg" "$out/v-bubble-memory.png"
