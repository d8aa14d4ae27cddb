#!/usr/bin/env python3
"""PyTorch's own pipelining code reads the CSVs `zbplan export` writes (issue 21).

Needs torch.distributed.pipelining (torch >= 2.4; generate_stage_to_rank_mapping came later, with
ZBV); exits 77 (skipped) where the package is missing, as with Debian's torch 1.13, and fails where
it is there but lacks a function this check uses. For each V method (PyTorch's placement style "v")
and interleaved one (style "loop"), p = 4 and 3 ranks, `zbplan plan` then `zbplan export`, then:
  - every cell parses with `_Action.from_str` and prints back as the same text, none twice;
  - every action of row r is on a stage that `generate_stage_to_rank_mapping(p, 2p, style)` gives
    to rank r, and `_validate_schedule` accepts the schedule and infers that placement;
  - `_add_send_recv` lowers it with that mapping and `_simulate_comms_compute` runs it to the end
    (no deadlock); the counts of compute actions and of sends are the expected ones.
A CSV with one F moved after its backward must be refused.
Usage: pytorch_csv_check.py ZBPLAN WORK_DIR   Exit 0 all passed, 1 a check failed, 77 no pipelining package.
"""
import csv
import importlib
import os
import subprocess
import sys

# Skipped only where PyTorch or its pipelining package is missing. Where the package is there but a
# function this check needs is not (moved, renamed), that is a failure to look into, not a skip:
# a check that silently stops running checks nothing.
try:
    import torch
    importlib.import_module("torch.distributed.pipelining")
except Exception as e:
    print(f"skipped: no torch.distributed.pipelining here (it came with torch 2.4): {e}")
    sys.exit(77)


def find(name):
    for module in ("torch.distributed.pipelining.schedules", "torch.distributed.pipelining.runtime",
                   "torch.distributed.pipelining._utils"):
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    print(f"FAIL torch {torch.__version__}: torch.distributed.pipelining has no {name} where this check looks")
    sys.exit(1)


_Action, _add_send_recv, _simulate_comms_compute, _validate_schedule, generate_stage_to_rank_mapping = (
    find(n) for n in ("_Action", "_add_send_recv", "_simulate_comms_compute", "_validate_schedule",
                      "generate_stage_to_rank_mapping"))

# (method, flags, PyTorch's placement style): the V methods, and the interleaved ones with "loop".
METHODS = [("zb-v", [], "v"), ("v-min", [], "v"), ("v-half", [], "v"), ("v-zb", [], "v"), ("dualpipe-v", [], "v"),
           ("heuristic-v", ["--mem-limit", "0.5p"], "v"), ("heuristic-v", ["--mem-limit", "1p"], "v"),
           ("1f1b-i", ["--chunks", "2"], "loop"),
           ("heuristic", ["--chunks", "2", "--placement", "interleaved", "--mem-limit", "1p"], "loop")]


def check(zbplan, work, method, extra, style, p, m):
    name = f"{method}{''.join(a for a in extra if not a.startswith('--'))}_p{p}_m{m}"
    schedule, table = os.path.join(work, name + ".json"), os.path.join(work, name + ".csv")
    plan = [zbplan, "plan", "--method", method, "-p", str(p), "-m", str(m), "--tf", "1", "--tb", "1.1",
            "--tw", "0.7", "--tcomm", "0.05", "--mem-w", "0.5", *extra, "-o", schedule]
    for cmd in (plan, [zbplan, "export", schedule, "-o", table]):
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            return f"{name}: {' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}"
    return read_and_check(name, table, p, m, style)


def read_and_check(name, table, p, m, style):
    num_stages = 2 * p
    mapping = generate_stage_to_rank_mapping(p, num_stages, style=style)
    actions = {}
    seen = set()
    with open(table, newline="") as f:
        for rank, row in enumerate(csv.reader(f)):
            actions[rank] = []
            for col, cell in enumerate(row):
                if not cell.strip():
                    actions[rank].append(None)
                    continue
                action = _Action.from_str(cell)
                if str(action) != cell.strip():
                    return f"{name}: row {rank}, column {col}: '{cell}' reads back as '{action}'"
                if str(action) in seen:  # _validate_schedule counts with sets: a repeat would pass it
                    return f"{name}: row {rank}, column {col}: {cell} appears twice"
                seen.add(str(action))
                if mapping[action.stage_index] != rank:
                    return (f"{name}: row {rank}, column {col}: {cell} is on stage {action.stage_index}, which "
                            f"PyTorch's style '{style}' gives to rank {mapping[action.stage_index]}")
                actions[rank].append(action)
    if len(actions) != p:
        return f"{name}: {len(actions)} rows, expected one per rank ({p})"
    try:
        inferred = _validate_schedule(actions, p, num_stages, m)
    except Exception as e:
        return f"{name}: _validate_schedule refused it: {e}"
    if inferred is not None and dict(inferred) != dict(mapping):  # torch 2.4 returns nothing
        return f"{name}: _validate_schedule placed the stages {dict(inferred)}, style '{style}' {dict(mapping)}"
    compute = {rank: [a for a in row if a is not None] for rank, row in actions.items()}
    computed = sum(len(row) for row in compute.values())
    # Every stage's F of each microbatch, and its B, or its I and W.
    fused = sum(1 for row in compute.values() for a in row if str(a)[len(str(a.stage_index)):].startswith("B"))
    if computed != num_stages * m * 3 - fused:
        return f"{name}: {computed} compute actions, expected {num_stages * m * 3 - fused} ({fused} fused B)"
    try:
        comms = _add_send_recv(compute, stage_to_rank=lambda s: mapping[s], num_stages=num_stages)
        _simulate_comms_compute(comms, stage_to_rank=lambda s: mapping[s], num_stages=num_stages)
    except Exception as e:
        return f"{name}: PyTorch's lowering or its simulation failed: {type(e).__name__}: {e}"
    sends = sum(1 for row in comms.values() for a in row if "SEND_F" in str(a))
    # One per microbatch at each boundary between ranks; versions before 2.6 also send between two
    # stages on one rank (the V's turn).
    between_ranks = sum(1 for st in range(num_stages - 1) if mapping[st] != mapping[st + 1])
    if sends not in (between_ranks * m, (num_stages - 1) * m):
        return f"{name}: PyTorch's lowering sent {sends} activations, expected {between_ranks * m}"
    print(f"ok  {name}: {computed} compute actions read, validated, lowered "
          f"({sends} SEND_F) and simulated with style '{style}'")
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    zbplan, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    print(f"torch {torch.__version__}")
    failures = [f for p, m in ((4, 8), (3, 9)) for method, extra, style in METHODS
                if (f := check(zbplan, work, method, extra, style, p, m))]
    # Shown able to fail: rank 0's first F moved to the end of its row comes after its I and W.
    with open(os.path.join(work, "zb-v_p4_m8.csv"), newline="") as f:
        rows = list(csv.reader(f))
    rows[0] = rows[0][1:] + rows[0][:1]
    broken = os.path.join(work, "broken.csv")
    with open(broken, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    found = read_and_check("broken", broken, 4, 8, "v")
    if found is None:
        failures.append("a CSV whose first F comes after its backward passed every check")
    else:
        print(f"ok  a broken CSV is refused ({found.splitlines()[0][:100]})")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
