#!/usr/bin/env python3
"""The partition planned from per-layer profiles against zbrun's default split, measured (issue 32).

For MODEL on P stages, M microbatches and METHOD: profiles the layers (zbrun --profile-layers), plans
with the partition searched (zbplan plan --layers), plans every contiguous partition (--partition) to
rank them by planned period, then runs zbrun --local on the searched one, the default split ("even,
extra blocks in the middle") and the K best-planned others, RUNS times each, and prints the planned
period beside the measured one (min / median / max seconds over runs of the steady-state period).
Prints figures, asserts nothing. Usage:

    tools/partition_bench.py BUILD_DIR MODEL P [--m 8] [--method zb-h1] [--steps 6] [--runs 3] [--top 6]
"""
import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def default_blocks(layers, stages):
    """zbrun's default split (runtime/model.cpp split_layers): middle stages take the extra blocks first."""
    base, extra = divmod(layers, stages)
    order = list(range(1, stages - 1)) + [0] + ([stages - 1] if stages > 1 else [])
    counts = [base] * stages
    for k in range(extra):
        counts[order[k]] += 1
    return counts


def layer_counts(blocks):
    """Blocks per stage -> the layer file's counts (the embedding on stage 0, the head on the last)."""
    counts = list(blocks)
    counts[0] += 1
    counts[-1] += 1
    return counts


def run(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("p", type=int)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--method", default="zb-h1")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    zbplan, zbrun = os.path.join(a.build, "zbplan"), os.path.join(a.build, "zbrun")
    tmp = tempfile.mkdtemp(prefix="partition_bench_")
    layers_file = os.path.join(tmp, "layers.json")
    print(run([zbrun, "--profile-layers", layers_file, "--model", a.model]).strip())
    layers = json.load(open(layers_file))["layers"]
    n, blocks = len(layers), len(layers) - 2

    def plan(name, extra):
        out = os.path.join(tmp, name + ".json")
        run([zbplan, "plan", "--layers", layers_file, "-p", str(a.p), "-m", str(a.m), "--method", a.method,
             "-o", out] + extra)
        doc = json.load(open(out))
        return out, doc["partition"]["counts"], doc["iterations"]["period"]

    searched = plan("searched", [])
    default = layer_counts(default_blocks(blocks, a.p))
    planned = {}
    for cuts in itertools.combinations(range(1, n), a.p - 1):
        counts = [b - a_ for a_, b in zip((0,) + cuts, cuts + (n,))]
        planned[tuple(counts)] = plan("all", ["--partition", ",".join(map(str, counts))])[2]
    ranked = sorted(planned, key=lambda c: (planned[c], c))
    chosen = list(dict.fromkeys([tuple(searched[1]), tuple(default)]))
    chosen += [c for c in ranked if c not in chosen][:a.top]
    print(f"{len(planned)} contiguous partitions planned; best planned period {planned[ranked[0]]:.3f} ms "
          f"({'/'.join(map(str, ranked[0]))}), searched {searched[2]:.3f} ms ({'/'.join(map(str, searched[1]))})")
    print(f"{'layers per stage':<18} {'blocks':<12} {'planned ms':>11} {'measured s: min':>16} {'median':>8} {'max':>8}  note")
    rows = []
    for counts in chosen:
        name = "p_" + "_".join(map(str, counts))
        path, _, period = plan(name, ["--partition", ",".join(map(str, counts))])
        measured = []
        for _ in range(a.runs):
            out = run([zbrun, path, "--local", "--model", a.model, "--steps", str(a.steps)])
            m = re.search(r"measured per iteration: period ([0-9.]+) s", out)
            measured.append(float(m.group(1)))
        note = " = ".join(n for n, c in (("searched", searched[1]), ("default", default)) if list(counts) == c)
        blk = "/".join(str(c - (i == 0) - (i == len(counts) - 1)) for i, c in enumerate(counts))
        rows.append((counts, period, measured, note))
        print(f"{'/'.join(map(str, counts)):<18} {blk:<12} {period:>11.3f} {min(measured):>16.4f} "
              f"{statistics.median(measured):>8.4f} {max(measured):>8.4f}  {note}", flush=True)
    best = min(rows, key=lambda r: statistics.median(r[2]))
    s = next(r for r in rows if "searched" in r[3])
    d = next(r for r in rows if "default" in r[3])
    med = lambda r: statistics.median(r[2])
    print(f"searched vs default: {med(d) / med(s):.3f}x shorter measured period (planned {d[1] / s[1]:.3f}x); "
          f"searched vs best measured here ({'/'.join(map(str, best[0]))}): {med(s) / med(best) - 1:+.1%}")


if __name__ == "__main__":
    main()
