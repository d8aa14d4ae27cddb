#!/usr/bin/env python3
"""Draws docs/img/v-bubble-memory.svg: the span bubble rate (the paper's cost) against the activation
memory limit, from the smallest limit anything fits up to 2p, for one chunk per stage (zbplan's
heuristic) and for the V placement (the V search: --chunks 2, each chunk half a stage's times and
memory), with the v-min, v-half, v-zb and zb-v schedules marked at their own peak memory, and the
authors' own V-Min, V-Half and V-ZB (tests/golden/authors, imported with the same times and memory)
beside them. Settings as tools/v_table.sh: the paper's 1.5B p=8 m=24 and 14.6B p=16 m=48
(tests/golden/table5.tsv), M_B = 1 per stage, M_W = 0.5. Plain SVG written here (no plotting
library); tools/pictures.sh rasterises it.
Usage: v_picture.py ZBPLAN OUT.svg"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = [("1.5B", 8, 24), ("14.6B", 16, 48)]
BLOCKS = ["v-min", "v-half", "v-zb", "zb-v"]
# The authors' schedules of each setting: (their name, file in tests/golden/authors).
AUTHORS = {"1.5B": [("V-Min", "1.5B_p8_m24_v-min_peak8.csv"), ("V-Half", "1.5B_p8_m24_v-half_peak10.csv"),
                    ("V-ZB", "1.5B_p8_m24_v-zb_peak16.csv")],
           "14.6B": [("V-Min", "14.6B_p16_m48_v-min_peak12.csv"), ("V-Half", "14.6B_p16_m48_v-half_peak18.csv"),
                     ("V-ZB", "14.6B_p16_m48_v-zb_peak32.csv")]}


def table5_times(model, p, m):
    with open(os.path.join(HERE, "..", "tests", "golden", "table5.tsv")) as f:
        for line in f:
            v = line.rstrip("\n").split("\t")
            if not line.startswith("#") and v[:3] == [model, str(p), str(m)]:
                return [float(x) for x in v[3:7]]  # T_F, T_B, T_W, T_comm
    sys.exit(f"v_picture.py: {model} p={p} m={m} is not in tests/golden/table5.tsv")


def plan(zbplan, args, command="plan"):
    """(span bubble rate, largest stage peak) of one plan (or import), or None when nothing fits."""
    with tempfile.TemporaryDirectory() as tmp:
        # Searches run whole (--time-limit 0), so the picture is the same on any machine.
        limit = ["--time-limit", "0"] if command == "plan" else []
        run = subprocess.run([zbplan, command, "--compute-only", "-o", os.path.join(tmp, "s.json")] + limit + args,
                             capture_output=True, text=True)
    if run.returncode != 0:
        if command == "import":
            sys.exit(f"v_picture.py: zbplan import {args[0]} failed: {run.stderr.strip()}")
        return None
    rate = float(re.search(r"^\s*span bubble rate\s+([0-9.]+)", run.stdout, re.M).group(1))
    peaks = re.search(r"^\s*peak memory\s+\[([^\]]*)\]", run.stdout, re.M).group(1)
    return rate, max(float(x) for x in peaks.split(","))


def gather(zbplan):
    """Per setting: the two curves [(limit / p, rate)] and the marked schedules [(name, peak / p, rate)]."""
    problems, blocks, jobs = {}, {}, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for model, p, m in SETTINGS:
            tf, tb, tw, tc = table5_times(model, p, m)
            one = ["-p", str(p), "-m", str(m), "--tf", str(tf), "--tb", str(tb), "--tw", str(tw), "--tcomm", str(tc)]
            v = ["-p", str(p), "-m", str(m), "--chunks", "2", "--tf", f"{tf / 2:g}", "--tb", f"{tb / 2:g}",
                 "--tw", f"{tw / 2:g}", "--tcomm", str(tc), "--mem-b", "0.5", "--mem-w", "0.25"]
            problems[model] = (p, one, v)
            for block in BLOCKS:
                blocks[(model, block)] = pool.submit(plan, zbplan, ["--method", block] + v)
            for name, file in AUTHORS[model]:
                path = os.path.join(HERE, "..", "tests", "golden", "authors", file)
                # The figures are one chunk's, as --chunks 2 gives them to plan.
                blocks[(model, "theirs " + name)] = pool.submit(plan, zbplan, [path, "--per-chunk"] + v[6:], "import")
        for model, (p, one, v) in problems.items():
            # Absolute limits (M_B = 1 per stage) from 1 (one microbatch's activations) to 2p, by
            # 0.125p for p=8 and 0.25p for p=16 (the V search at p=16 takes a few seconds a limit);
            # the V search also at each marked schedule's peak, where the curve steps down.
            step = 1 if p <= 8 else 4
            limits = sorted({1, 2} | set(range(step, 2 * p + 1, step)))
            peaks = {r.result()[1] for (md, b), r in blocks.items() if md == model and r.result() is not None}
            for name, args, at in (("1 chunk", one, limits), ("V", v, sorted(set(limits) | peaks))):
                for limit in at:
                    jobs[(model, name, limit)] = pool.submit(
                        plan, zbplan, ["--method", "heuristic"] + args + ["--mem-limit", f"{limit:g}"])
    out = []
    for model, p, m in SETTINGS:
        curves = {}
        for name in ("1 chunk", "V"):
            curves[name] = sorted((limit / p, r.result()[0]) for (md, n, limit), r in jobs.items()
                                  if md == model and n == name and r.result() is not None)
        marks = [(b, r.result()[1] / p, r.result()[0]) for (md, b), r in blocks.items()
                 if md == model and r.result() is not None]
        out.append((f"{model}, p={p}, m={m}", curves, marks))
    return out


COLOURS = {"1 chunk": "#1f77b4", "V": "#d62728"}
PANEL_W, PANEL_H, LEFT, TOP, GAP = 420, 300, 60, 84, 90


def svg(panels):
    width = LEFT + len(panels) * (PANEL_W + GAP)
    height = TOP + PANEL_H + 70
    e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15">Span bubble rate against the '
         f'activation memory limit: one chunk per stage and the V placement</text>']
    # Legend.
    lx = LEFT
    for name, label in (("1 chunk", "1 chunk (heuristic)"), ("V", "V, 2 chunks (V search)")):
        e.append(f'<line x1="{lx}" y1="46" x2="{lx + 24}" y2="46" stroke="{COLOURS[name]}" stroke-width="2"/>')
        e.append(f'<text x="{lx + 30}" y="50">{label}</text>')
        lx += 190
    e.append(f'<text x="{lx}" y="50">marked at their own peak memory: our V schedules (squares), the '
             f'authors\' (triangles)</text>')
    for i, (title, curves, marks) in enumerate(panels):
        x0, y0 = LEFT + i * (PANEL_W + GAP), TOP

        def X(v):
            return x0 + v / 2.0 * PANEL_W

        def Y(v):
            return y0 + PANEL_H - v * PANEL_H

        e.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#444"/>')
        e.append(f'<text x="{x0 + PANEL_W / 2:.1f}" y="{y0 - 8}" text-anchor="middle" font-weight="bold">{title}</text>')
        for k in range(9):  # x: 0 .. 2p by 0.25p
            v = k * 0.25
            e.append(f'<line x1="{X(v):.1f}" y1="{y0}" x2="{X(v):.1f}" y2="{y0 + PANEL_H}" stroke="#ddd"/>')
            e.append(f'<text x="{X(v):.1f}" y="{y0 + PANEL_H + 16}" text-anchor="middle">{v:g}p</text>')
        for k in range(6):  # y: 0 .. 1 by 0.2
            v = k * 0.2
            e.append(f'<line x1="{x0}" y1="{Y(v):.1f}" x2="{x0 + PANEL_W}" y2="{Y(v):.1f}" stroke="#ddd"/>')
            e.append(f'<text x="{x0 - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        e.append(f'<text x="{x0 + PANEL_W / 2:.1f}" y="{y0 + PANEL_H + 36}" text-anchor="middle">memory limit '
                 f'(multiple of p·M_B; 1F1B needs 1p)</text>')
        e.append(f'<text transform="translate({x0 - 40},{y0 + PANEL_H / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">span bubble rate</text>')
        for name, points in curves.items():
            # A step: the rate at a limit holds until the next limit plotted (more memory never hurts).
            corners = [points[0]] + [c for (x, r), (nx, nr) in zip(points, points[1:]) for c in ((nx, r), (nx, nr))]
            path = " ".join(f"{X(x):.1f},{Y(r):.1f}" for x, r in corners)
            e.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[name]}" stroke-width="2"/>')
            for x, r in points:
                e.append(f'<circle cx="{X(x):.1f}" cy="{Y(r):.1f}" r="2.5" fill="{COLOURS[name]}"/>')
        for name, x, r in marks:
            cx, cy = X(x), Y(r)
            if name.startswith("theirs "):  # a triangle, its label under it to the left (ours: right)
                e.append(f'<polygon points="{cx:.1f},{cy - 5:.1f} {cx - 5:.1f},{cy + 4:.1f} {cx + 5:.1f},{cy + 4:.1f}" '
                         f'fill="white" stroke="#2ca02c" stroke-width="1.5"/>')
                e.append(f'<text x="{cx - 7:.1f}" y="{cy + 16:.1f}" text-anchor="end" fill="#2ca02c">'
                         f'theirs: {name[7:]} ({r:.3f})</text>')
                continue
            e.append(f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="white" stroke="black" '
                     f'stroke-width="1.5"/>')
            below = name == "zb-v"  # beside v-zb at the same memory: its label goes under it
            e.append(f'<text x="{cx + 7:.1f}" y="{cy + (16 if below else -6):.1f}">{name} ({r:.3f})</text>')
    e.append("</svg>")
    return "\n".join(e) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    zbplan, out = sys.argv[1:3]
    panels = gather(zbplan)
    text = svg(panels)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    for title, curves, marks in panels:
        print(title)
        for name, points in curves.items():
            print(f"  {name}: " + ", ".join(f"{x:g}p {r:.4f}" for x, r in points))
        for name, x, r in marks:
            print(f"  {name}: peak {x:.3g}p, {r:.4f}")


if __name__ == "__main__":
    main()
