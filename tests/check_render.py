#!/usr/bin/env python3
"""Render check of `zbplan show`: rasterise the SVG with rsvg-convert, check the picture is not
blank, and count the blocks along each stage's row: it must equal the schedule's compute ops.
Usage: ZBPLAN=path check_render.py TMP_DIR"""
import os
import subprocess
import sys

from PIL import Image

zbplan, tmp = os.environ["ZBPLAN"], sys.argv[1]
FILLS = [(0x6f, 0xa8, 0xdc), (0x93, 0xc4, 0x7d), (0xff, 0xd9, 0x66), (0xb4, 0xa7, 0xd6)]
failures = 0


def expect(ok, what):
    global failures
    print(("ok      " if ok else "FAILED  ") + what)
    failures += not ok


def is_fill(px):
    return any(sum(abs(a - b) for a, b in zip(px[:3], f)) < 24 for f in FILLS)


def count_blocks(png, p, top, row_h, gap, left, plot_w):
    img = Image.open(png).convert("RGB")
    per_row = []
    for st in range(p):
        y = top + st * (row_h + gap) + row_h - 3  # below the labels, clear of the ticks
        runs, inside = 0, False
        for x in range(left, left + plot_w):
            fill = is_fill(img.getpixel((x, y)))
            runs += fill and not inside
            inside = fill
        per_row.append(runs)
    return img, per_row


for method, p, m, extra in [("zb-h1", 4, 8, []), ("1f1b", 8, 24, []), ("heuristic", 8, 24, ["--mem-limit", "2p"])]:
    sched = os.path.join(tmp, f"render_{method}.json")
    svg, png = sched[:-5] + ".svg", sched[:-5] + ".png"
    subprocess.run([zbplan, "plan", "--method", method, "-p", str(p), "-m", str(m), "--tf", "1", "--tb", "1",
                    "--tw", "0.5", "-o", sched] + extra, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([zbplan, "show", sched, "-o", svg], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["rsvg-convert", svg, "-o", png], check=True)
    ops_per_stage = 2 * m if method == "1f1b" else 3 * m
    plot_w = max(900, ops_per_stage * 6)
    img, rows = count_blocks(png, p, top=76, row_h=22, gap=4, left=70, plot_w=plot_w)
    colours = len(set(img.getdata()))
    expect(colours > 10, f"{method} p={p} m={m}: the picture is not blank ({colours} colours)")
    expect(rows == [ops_per_stage] * p, f"{method} p={p} m={m}: {ops_per_stage} blocks in every row, counted {rows}")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
