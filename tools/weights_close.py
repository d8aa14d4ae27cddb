#!/usr/bin/env python3
"""Whether two runs' weights (zbrun --dump-weights DIR: tensor<id>.f32, raw little-endian floats)
agree within bf16 tolerance: each tensor within 2e-2 of the reference's largest magnitude, plus
2 lr per step (Adam's first steps turn a rounding-level gradient sign into a +-lr move, so two
runs whose GEMMs round differently may part by that much; docs/oracle.md).

    weights_close.py OURS REF --lr LR --steps N

Prints one line, "ok ..." or "FAIL ...", and exits 0 or 1. Plain Python (no numpy): the GPU
machine's interpreter may have none.
"""
import argparse
import math
import os
import sys
from array import array


def load(path):
    values = array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours")
    ap.add_argument("ref")
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--steps", type=int, required=True)
    a = ap.parse_args()
    names = sorted(n for n in os.listdir(a.ref) if n.endswith(".f32"))
    mine = sorted(n for n in os.listdir(a.ours) if n.endswith(".f32"))
    if not names or mine != names:
        print(f"FAIL the tensor files differ: {len(mine)} here, {len(names)} in the reference")
        return 1
    worst, worst_name = -1.0, ""
    for name in names:
        x, y = load(os.path.join(a.ours, name)), load(os.path.join(a.ref, name))
        if len(x) != len(y):
            print(f"FAIL {name}: {len(x)} values, the reference {len(y)}")
            return 1
        if not all(math.isfinite(v) for v in x):
            print(f"FAIL {name}: not finite")
            return 1
        bound = 2e-2 * max(abs(v) for v in y) + 2 * a.lr * a.steps
        excess = max(abs(p - q) for p, q in zip(x, y)) / bound
        if excess > worst:  # the first tensor at least, so the line names one
            worst, worst_name = excess, name
    verdict = "ok" if worst <= 1 else "FAIL"
    print(f"{verdict} {len(names)} weight tensors, the largest difference {worst:.2g} of its bound ({worst_name})")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
