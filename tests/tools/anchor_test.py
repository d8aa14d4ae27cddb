#!/usr/bin/env python3
"""Tests of the PyTorch anchor of tools/gpu_bench.sh (issue 33, item 5).

  anchor_test.py compare TMP   tools/anchor_compare.py on the fixtures (no PyTorch needed): the
                               table's rows and ratios, and files of two different models refused.
  anchor_test.py torch TMP     tools/torch_anchor.py --device cpu --dtype fp32 on the tiny model,
                               2 repeats, then anchor_compare.py on its JSON and the fixture layers
                               file. Exits 77 (skipped) when this python cannot import torch.
"""
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = os.path.join(HERE, "anchor_tiny.model.json")
LAYERS = os.path.join(HERE, "anchor_tiny.layers.json")
TORCH_FIXTURE = os.path.join(HERE, "anchor_tiny.torch.json")
COMPARE = os.path.join(ROOT, "tools", "anchor_compare.py")
ANCHOR = os.path.join(ROOT, "tools", "torch_anchor.py")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def row(out, kind):
    """The cells of the table row of `kind`, or None."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == kind:
            return cells
    return None


def check_table(out, what):
    check("Times in ms per microbatch" in out, f"{what}: the units are said")
    header = row(out, "layer")
    check(header is not None and header[1:] == ["zbrun F (ms)", "zbrun B+W (ms) (B, W)", "PyTorch F (ms)",
                                                "PyTorch backward (ms)", "F ratio", "B+W / backward ratio"],
          f"{what}: the header names zbrun F, B+W, PyTorch F, backward and the ratios, in ms")
    rows = {kind: row(out, kind) for kind in ("block", "head")}
    for kind, cells in rows.items():
        check(cells is not None and len(cells) == 7, f"{what}: a {kind} row with 7 cells")
    return rows


def compare(tmp):
    code, out, err = run(COMPARE, LAYERS, TORCH_FIXTURE)
    print(out + err)
    check(code == 0, "anchor_compare.py on the fixtures exits 0")
    rows = check_table(out, "fixtures")
    # Fixture figures: zbrun block F 0.0329, B 0.020815 + W 0.007371; head F 0.012092, B 0.002769 +
    # W 0.001517. PyTorch (fixture) block F 0.0658, backward 0.0564; head F 0.0242, backward 0.0086.
    want = {"block": ["block", "0.0329", "0.0282 (0.0208, 0.0074)", "0.0658", "0.0564", "0.50", "0.50"],
            "head": ["head", "0.0121", "0.0043 (0.0028, 0.0015)", "0.0242", "0.0086", "0.50", "0.50"]}
    for kind, cells in want.items():
        check(rows[kind] == cells, f"fixtures: {kind} row is {cells} (got {rows[kind]})")
    # A torch run of another model (vocabulary 256, not 64) is refused, naming both.
    other = json.load(open(TORCH_FIXTURE))
    other["model"]["vocab"] = 256
    path = os.path.join(tmp, "other_model.torch.json")
    with open(path, "w") as f:
        json.dump(other, f)
    code, out, err = run(COMPARE, LAYERS, path)
    check(code == 1 and "different models" in err and "head's parameter_bytes" in err,
          f"another model's torch figures are refused (exit {code}: {err.strip()})")
    # A file that is not a layers file is refused.
    code, out, err = run(COMPARE, TORCH_FIXTURE, TORCH_FIXTURE)
    check(code == 1 and "not a zbpp-layers-1 file" in err, f"a torch JSON as the layers file is refused ({err.strip()})")


def torch_run(tmp):
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {sys.executable} cannot import torch ({e})")
        sys.exit(77)
    out_json = os.path.join(tmp, "torch_anchor.json")
    code, out, err = run(ANCHOR, "--model", MODEL, "--device", "cpu", "--dtype", "fp32", "--repeats", "2",
                         "--warmup", "1", "--threads", "1", "--json", out_json)
    print(out + err)
    check(code == 0, f"torch_anchor.py --device cpu --dtype fp32 exits 0 (got {code})")
    for kind in ("block", "head"):
        check(re.search(rf"^{kind} +(\d+\.\d+ +){{5}}\d+\.\d+$", out, re.M) is not None,
              f"torch_anchor.py prints a {kind} row of six times")
    check(re.search(r"^attention: ", out, re.M) is not None, "torch_anchor.py says which attention it ran")
    d = json.load(open(out_json))
    check(d["format"] == "zbpp-torch-anchor-1" and d["units"] == "ms per microbatch", "the JSON's format and units")
    check(d["checks"]["block_output_shape"] == [2, 16, 32], f"block output is batch x seq x channels "
          f"({d['checks']['block_output_shape']})")
    loss = d["checks"]["head_loss"]
    check(math.isfinite(loss) and abs(loss - math.log(64)) < 0.5, f"head loss {loss} is finite and near ln 64 "
          "(small weights: near-uniform logits)")
    check(all(d["checks"][k] for k in ("block_output_finite", "block_input_grad_finite", "head_input_grad_finite")),
          "block output and both input gradients are finite")
    for kind in ("block", "head"):
        for part in ("f", "backward"):
            s = d["layers"][kind][part]
            check(0 < s["min"] <= s["median"] <= s["max"], f"{kind} {part}: 0 < min <= median <= max ({s})")
    code, out, err = run(COMPARE, LAYERS, out_json)
    print(out + err)
    check(code == 0, "anchor_compare.py on torch_anchor.py's JSON exits 0")
    check_table(out, "torch run")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("compare", "torch"):
        sys.exit("usage: anchor_test.py compare|torch TMP")
    tmp = sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    (compare if sys.argv[1] == "compare" else torch_run)(tmp)
    print(f"anchor_test {sys.argv[1]}: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
