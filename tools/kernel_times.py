#!/usr/bin/env python3
"""Sums the GPU time of each kernel in an Nsight Compute CSV (ncu --csv --metrics
gpu__time_duration.sum), so a profile says where a layer's time goes:

    ncu --clock-control none --metrics gpu__time_duration.sum --csv PROGRAM ARGS > kernels.csv
    tools/kernel_times.py kernels.csv [--top N]

Prints one row per kernel name (templates and arguments cut): launches, total, mean and share of
the total, largest first."""
import argparse
import csv
import io
import re
import sys
from collections import defaultdict


def short_name(name):
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"\(.*", "", name)  # arguments
    name = re.sub(r"<.*>", "", name)  # template arguments
    return name.split("::")[-1].strip() or name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    text = open(a.csv, encoding="utf-8", errors="replace").read()
    start = text.find('"ID"')  # ncu prints its own lines (==PROF==) before the table
    if start < 0:
        sys.exit(f"{a.csv}: no ncu CSV table in it (expected a header row starting with \"ID\")")
    total = defaultdict(float)
    count = defaultdict(int)
    unit_scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        ms = value * unit_scale.get(row.get("Metric Unit", "nsecond"), 1e-6)
        name = short_name(row.get("Kernel Name", "?"))
        total[name] += ms
        count[name] += 1
    if not total:
        sys.exit(f"{a.csv}: no gpu__time_duration.sum rows")
    whole = sum(total.values())
    print(f"| kernel | launches | total (ms) | mean (us) | share |")
    print(f"|---|---:|---:|---:|---:|")
    for name, ms in sorted(total.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"| {name} | {count[name]} | {ms:.3f} | {1000 * ms / count[name]:.1f} | {100 * ms / whole:.1f} % |")
    print(f"| (all {sum(count.values())} launches) | | {whole:.3f} | | 100 % |")


if __name__ == "__main__":
    main()
