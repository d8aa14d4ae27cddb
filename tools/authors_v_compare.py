#!/usr/bin/env python3
"""The authors' own V schedules beside zbplan's V search at the same memory (issue 21).

Runs the schedule generators of the authors' repository (sail-sg/zero-bubble-pipeline-parallelism)
from a checkout of it, loaded by path and never copied into this project:
  v_auto_schedule.schedule(p, m, cost, max_mem)   their search over building blocks at a memory limit
                                                   ("Pipeline Parallelism with Controllable Memory")
  zbv_greedy.PipelineGraph(.., 'min' | 'half')    V-Min and V-Half
  zbv.PipelineGraph(.., max_mem = 2p)              V-ZB (ZB-V within 1F1B's memory)
Each schedule goes through `zbplan import` as a PyTorch CSV (rank r holds virtual stages r and
2p-1-r; F, I = their B, W), so our exact simulator gives its span bubble rate and peak memory.
Then `zbplan plan --method heuristic --chunks 2 --placement v` plans at that peak.

Memory is the authors' model: each chunk's F holds one unit until its W (B frees nothing), so
`--mem-b 1 --mem-w 1` per chunk and units of one chunk activation (their max_mem). Times are per
chunk: the authors' cost (f, b, w, c), here --tf f --tb b --tw w --tcomm c with --chunks 2.

Usage: tools/authors_v_compare.py AUTHORS_CHECKOUT ZBPLAN [WORK_DIR]
Prints one markdown table per setting and a summary. Exit 0 if zbplan's V search is no worse
than every schedule of theirs at that schedule's peak, 1 otherwise, 2 on a usage error.
"""
import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import tempfile
import types
from types import SimpleNamespace

SCHEDULERS = "megatron/core/pipeline_parallel/zerobubble/scheduler"
# (name, p, m, per-chunk f, b, w, c): their own assumption (equal times, no communication), and
# the paper's Table 6 times for 1.5B p=8 m=24 and 14.6B p=16 m=48, halved per chunk.
SETTINGS = [("equal times", 4, 8, 1, 1, 1, 0), ("equal times", 8, 24, 1, 1, 1, 0),
            ("1.5B", 8, 24, 9.261, 9.043, 4.6685, 0.601), ("14.6B", 16, 48, 5.6735, 5.624, 4.066, 0.377)]


def load_authors(checkout):
    """Their generator modules, loaded from the checkout by file path."""
    folder = os.path.join(checkout, SCHEDULERS)
    if not os.path.isfile(os.path.join(folder, "v_auto_schedule.py")):
        print(f"authors_v_compare.py: {folder}/v_auto_schedule.py not found: give a checkout of "
              "sail-sg/zero-bubble-pipeline-parallelism", file=sys.stderr)
        sys.exit(2)
    # zbv and zbv_greedy import graph.py through its package path; the package's __init__ would
    # pull in Megatron, so empty modules stand for the packages above graph.
    package = SCHEDULERS.replace("/", ".")
    parts = package.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))

    def load(name, file):
        spec = importlib.util.spec_from_file_location(name, os.path.join(folder, file))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    load(package + ".graph", "graph.py")
    return load("authors_v_auto", "v_auto_schedule.py"), load("authors_zbv_greedy", "zbv_greedy.py"), \
        load("authors_zbv", "zbv.py")


def csv_rows(stages, p):
    """Their per-stage node lists as PyTorch CSV rows (V placement)."""
    rows = []
    for r, nodes in enumerate(stages):
        row = []
        for n in nodes:
            kind = n.type if isinstance(n.type, str) else n.type.value
            mb = n.microbatch if hasattr(n, "microbatch") else n.minibatch
            row.append(f"{r if int(n.chunk) == 0 else 2 * p - 1 - r}{ {'F': 'F', 'B': 'I', 'W': 'W'}[kind]}{mb}")
        rows.append(row)
    return rows


def zbplan_figures(zbplan, args):
    """(span bubble rate, peak memory) that zbplan prints, or (None, the first line of its error)."""
    run = subprocess.run([zbplan, *args], capture_output=True, text=True)
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines()
        return None, lines[0] if lines else f"exit {run.returncode}"
    bubble = float(re.search(r"span bubble rate\s+([0-9.]+)", run.stdout).group(1))
    peak = max(float(x) for x in re.search(r"peak memory\s+\[([^\]]*)\]", run.stdout).group(1).split(","))
    return (bubble, peak), None


def compare(authors, zbplan, work, setting):
    v_auto, zbv_greedy, zbv = authors
    label, p, m, f, b, w, c = setting
    cost = (f, b, w, c)
    flags = ["-p", str(p), "-m", str(m), "--chunks", "2", "--tf", str(f), "--tb", str(b), "--tw", str(w),
             "--tcomm", str(c), "--mem-b", "1", "--mem-w", "1", "--compute-only"]
    config = SimpleNamespace(max_chunks=2, n_stages=p)
    theirs = [("V-Min", lambda: zbv_greedy.PipelineGraph(p, m, "min", *cost).create_schedule(config)),
              ("V-Half", lambda: zbv_greedy.PipelineGraph(p, m, "half", *cost).create_schedule(config)),
              ("V-ZB", lambda: zbv.PipelineGraph(p, m, *cost, 1, 0, -1, 2 * p).create_schedule(config))]
    theirs += [(f"auto, max_mem {k}", lambda k=k: v_auto.schedule(p, m, cost, k)) for k in range(2, 2 * p + 1)]
    rows = []
    for name, make in theirs:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # they print as they go
                stages = make()
        except Exception as e:  # their search finds nothing at the smallest limits, and then fails
            rows.append((name, None, f"none (their code raised {type(e).__name__})"))
            continue
        tag = re.sub("[^A-Za-z0-9]+", "_", f"{label}_p{p}_m{m}_{name}")
        csv = os.path.join(work, tag + ".csv")
        with open(csv, "w") as out:
            out.write("\n".join(",".join(r) for r in csv_rows(stages, p)) + "\n")
        # One chunk's figures, as --chunks 2 gives them to plan.
        theirs_fig, err = zbplan_figures(zbplan, ["import", csv, "--per-chunk", *flags[6:], "-o", csv + ".json"])
        if err:
            rows.append((name, None, "zbplan import refused it: " + err))
            continue
        ours_fig, err = zbplan_figures(zbplan, ["plan", "--method", "heuristic", "--placement", "v", "--time-limit", "0", *flags,
                                                "--mem-limit", f"{theirs_fig[1]:g}", "-o", csv + ".ours.json"])
        rows.append((name, theirs_fig, ours_fig if not err else "zbplan plan failed: " + err))
    return rows


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    authors = load_authors(sys.argv[1])
    zbplan = sys.argv[2]
    work = sys.argv[3] if len(sys.argv) == 4 else tempfile.mkdtemp(prefix="authors_v_")
    os.makedirs(work, exist_ok=True)
    worse = better = equal = 0
    for setting in SETTINGS:
        label, p, m, f, b, w, c = setting
        print(f"{label}, p={p} m={m}, per chunk T_F {f} T_B {b} T_W {w} T_comm {c} (memory in chunk activations)\n")
        print("| theirs | its peak | its bubble rate | ours at that peak | ours - theirs |")
        print("|---|---:|---:|---:|---:|")
        for name, fig, ours in compare(authors, zbplan, work, setting):
            if fig is None:
                print(f"| {name} | | {ours} | | |")
                continue
            if not isinstance(ours, tuple):
                print(f"| {name} | {fig[1]:g} | {fig[0]:.4f} | {ours} | |")
                worse += 1
                continue
            diff = ours[0] - fig[0]
            worse, better, equal = worse + (diff > 0), better + (diff < 0), equal + (diff == 0)
            print(f"| {name} | {fig[1]:g} | {fig[0]:.4f} | {ours[0]:.4f} | {diff:+.4f} |")
        print()
    print(f"zbplan's V search against their schedules, each at its peak: {better} lower, {equal} equal, "
          f"{worse} higher (files in {work})")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
