#!/usr/bin/env python3
"""Render check of `zbplan show`: rasterise the SVG with rsvg-convert, check the picture is not
blank, and count the blocks along each stage's row: it must equal the schedule's compute ops.
Blocks 1-2 px wide keep their colour (no outline, no antialiasing seams): W's colour covers the
area the W blocks take, and the last stage's cool-down is W-coloured. A V schedule's chunks show
in two shades a kind.
Usage: ZBPLAN=path check_render.py TMP_DIR"""
import os
import re
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



def rects(svg, kind):
    """(x, y, width) of each block of a kind, as the SVG places it."""
    return [(float(x), int(y), float(w)) for x, y, w in
            re.findall(r'class="op op-' + kind + r'" x="([0-9.]+)" y="([0-9]+)" width="([0-9.]+)"', svg)]


def draw(name, plan_args, show_args=()):
    sched = os.path.join(tmp, f"render_{name}.json")
    svg, png = sched[:-5] + ".svg", sched[:-5] + ".png"
    subprocess.run([zbplan, "plan", "--compute-only", "-o", sched] + plan_args, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([zbplan, "show", sched, "-o", svg] + list(show_args), check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["rsvg-convert", svg, "-o", png], check=True)
    return open(svg).read(), Image.open(png).convert("RGB")


# ZB-2p on 32 stages, 256 microbatches (the 1.5B model's times) in 1200 px: W blocks about 0.9 px.
svg, img = draw("thin", ["--method", "heuristic", "--mem-limit", "2p", "-p", "32", "-m", "256", "--tf", "18.522",
                         "--tb", "18.086", "--tw", "9.337", "--tcomm", "0.601", "--mem-b", "1", "--mem-w", "0.3664"],
                ["--width", "1200"])
W = FILLS[2]
w_rects = rects(svg, "W")
want = sum(w for _, _, w in w_rects) * 14
got = sum(n for n, c in img.getcolors(1 << 20) if c == W)
expect(abs(got - want) <= 0.03 * want, f"p=32 m=256 in 1200 px: W's colour covers {got} px, its blocks {want:.0f} px")
last_y = max(y for _, y, _ in w_rects)
row = {k: [r for r in rects(svg, k) if r[1] == last_y] for k in ("B", "W")}
start, end = max(x + w for x, _, w in row["B"]), max(x + w for x, _, w in row["W"])
box = (int(start) + 1, last_y, int(end) - 1, last_y + 14)
share = sum(1 for px in img.crop(box).getdata() if px == W) / ((box[2] - box[0]) * 14)
expect(box[2] - box[0] > 100 and share >= 0.95,
       f"p=32 m=256 in 1200 px: stage 31's cool-down ({box[2] - box[0]} px) is {100 * share:.1f} % W's colour")

# ZB-V: each kind in a light (chunk 0) and a dark (chunk 1) shade, both drawn.
svg, img = draw("zbv", ["--method", "zb-v", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "0.5"])
colours = {c: n for n, c in img.getcolors(1 << 20)}
for kind in ("F", "B", "W"):
    shades = sorted(set(re.findall(r'class="op op-' + kind + r'" [^>]* fill="#([0-9a-f]{6})"', svg)))
    px = [colours.get(tuple(int(h[i:i + 2], 16) for i in (0, 2, 4)), 0) for h in shades]
    expect(len(shades) == 2 and min(px) > 1000, f"zb-v: {kind} in two shades {shades}, {px} px each")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
