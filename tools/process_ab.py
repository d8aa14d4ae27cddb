#!/usr/bin/env python3
"""Whole-process timing of `zbplan plan --method heuristic` for two or more zbplan builds, run by run
in turn (A B, B A, A B, ...), so that the machine's drift (on this 2-vCPU VM the same binary's median
moves by 2-4 ms from one minute to the next) hits every build alike. tools/process_bench.sh runs each
build's runs in one block, which is fine on a steady machine. Prints min / median / max wall ms per
problem and build; asserts nothing (issue 20).

usage: tools/process_ab.py [--runs N] [--out DIR] [--problems P:M,...] ZBPLAN ZBPLAN...
  --out DIR   where the schedule is written (default .: the disk; /dev/shm leaves the fsync out)
"""
import argparse
import os
import statistics
import time

TIMES = "--tf 10.402 --tb 10.248 --tw 7.698 --tcomm 0.46 --mem-b 1 --mem-w 0.3664 --mem-limit 2p".split()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--out", default=".")
    ap.add_argument("--problems", default="32:256")
    ap.add_argument("zbplan", nargs="+")
    args = ap.parse_args()
    devnull = os.open(os.devnull, os.O_WRONLY)
    out = os.path.join(args.out, f"process_ab_{os.getpid()}.json")
    print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}; output in {args.out}; "
          f"{args.runs} runs each, builds in turn, 3 warm-up rounds")
    print(f"{'problem':<14} {'min ms':>8} {'median':>8} {'max':>8}  zbplan")
    try:
        for problem in args.problems.split(","):
            p, m = problem.split(":")
            times = {b: [] for b in args.zbplan}
            for i in range(args.runs + 3):
                for b in args.zbplan if i % 2 == 0 else args.zbplan[::-1]:
                    argv = [b, "plan", "--method", "heuristic", "-p", p, "-m", m] + TIMES + ["-o", out]
                    start = time.perf_counter()
                    pid = os.posix_spawn(b, argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
                    _, status = os.waitpid(pid, 0)
                    wall = (time.perf_counter() - start) * 1e3
                    if status != 0:
                        raise SystemExit(f"{' '.join(argv)} failed (wait status {status})")
                    if i >= 3:
                        times[b].append(wall)
            for b in args.zbplan:
                t = sorted(times[b])
                label = f"p={p} m={m}"
                print(f"{label:<14} {t[0]:8.2f} {statistics.median(t):8.2f} {t[-1]:8.2f}  {b}")
    finally:
        if os.path.exists(out):
            os.unlink(out)


if __name__ == "__main__":
    main()
