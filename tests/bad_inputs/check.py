#!/usr/bin/env python3
"""Runs zbplan/zbrun on one bad input file (or all of them) and checks each command its .expect file
lists: exit code 1 (invalid input), never a crash, a hang or running out of memory, and stderr
holding the expected, located message.

NAME.expect, one command a line: `zbplan validate {file} => substring of stderr`. Commands run in
the file's directory on its bare name, so messages read `NAME.json: stage 1, op 4 (W2): ...`.
{out} is a path in a scratch directory (no file may appear there). A malformed command line exits 2,
not 1: `zbrun {file} --steps 010 => exit 2: zbrun: --steps: ...` (the message after "exit N: ").

Usage: ZBPLAN=... ZBRUN=... check.py FILE.json [FILE.json ...]   (ctest: one file each)
       ZBPLAN=... ZBRUN=... check.py --table DIR                 (the docs table, markdown)
Environment: ZBPP_CHECK_TIMEOUT (seconds, default 30), ZBPP_CHECK_MEMORY_MB (address-space limit,
default 4096; 0 = none, for ASan builds, which reserve terabytes of address space).
"""
import glob
import os
import resource
import shlex
import subprocess
import sys
import tempfile

TIMEOUT = float(os.environ.get("ZBPP_CHECK_TIMEOUT", "30"))
MEMORY_MB = int(os.environ.get("ZBPP_CHECK_MEMORY_MB", "4096"))


def limit_memory():
    if MEMORY_MB > 0:
        limit = MEMORY_MB << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def commands(path):
    """(argv, expected substring) for each line of the file's .expect."""
    expect = os.path.splitext(path)[0] + ".expect"
    if not os.path.exists(expect):
        raise SystemExit(f"{path}: no {os.path.basename(expect)} next to it")
    out = []
    for line in open(expect, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        if " => " not in line:
            raise SystemExit(f"{expect}: expected 'COMMAND ARGS => message', got: {line}")
        cmd, want = line.split(" => ", 1)
        code = 1
        if want.startswith("exit ") and ": " in want:
            code, want = int(want[5:want.index(": ")]), want[want.index(": ") + 2:]
        out.append((shlex.split(cmd), code, want))
    if not out:
        raise SystemExit(f"{expect}: lists no command")
    return out


def run(argv, path, scratch):
    tools = {"zbplan": os.path.abspath(os.environ["ZBPLAN"]), "zbrun": os.path.abspath(os.environ["ZBRUN"])}
    if argv[0] not in tools:
        raise SystemExit(f"unknown program {argv[0]} (zbplan or zbrun)")
    full = [tools[argv[0]]] + [a.replace("{file}", os.path.basename(path)).replace("{out}", os.path.join(scratch, "out"))
                               for a in argv[1:]]
    try:
        p = subprocess.run(full, cwd=os.path.dirname(os.path.abspath(path)), capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT, preexec_fn=limit_memory)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or "")


def check(path):
    failures = 0
    for argv, expected, want in commands(path):
        with tempfile.TemporaryDirectory() as scratch:
            code, err = run(argv, path, scratch)
            left = os.listdir(scratch)
        what = " ".join(argv)
        problems = []
        if code is None:
            problems.append(f"did not finish in {TIMEOUT:g} s")
        elif code < 0 or code >= 128:
            problems.append(f"crashed (exit {code})")
        elif code != expected:
            problems.append(f"exit {code}, expected {expected} ({'invalid input' if expected == 1 else 'bad command line'})")
        if want not in err:
            problems.append(f"stderr lacks: {want}")
        if left:
            problems.append(f"wrote {left} although it failed")
        if problems:
            failures += 1
            print(f"FAILED  {os.path.basename(path)}: {what}: " + "; ".join(problems) + "\n--- stderr ---\n" + err[-4000:])
        else:
            print(f"ok      {os.path.basename(path)}: {what}: exit {expected}, {want}")
    return failures


def table(directory):
    """Markdown: each input, each command, its exit code and the first line of its message."""
    print("| input | command | exit | message (first line of stderr) |")
    print("|---|---|---|---|")
    files = sorted(f for f in glob.glob(os.path.join(directory, "**", "*"), recursive=True)
                   if os.path.isfile(f) and not f.endswith((".expect", ".py", ".md", ".schedule")))
    for path in files:
        rel = os.path.relpath(path, directory)
        for argv, _, _ in commands(path):
            with tempfile.TemporaryDirectory() as scratch:
                code, err = run(argv, path, scratch)
            first = (err.strip().splitlines() or [""])[0]
            first = first.replace("|", "\\|")
            if len(first) > 220:
                first = first[:217] + "..."
            shown = " ".join(argv[:2]) if argv[0] == "zbplan" else "zbrun --local"
            print(f"| `{rel}` | {shown} | {'timeout' if code is None else code} | `{first}` |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.exit(1 if sum(check(p) for p in sys.argv[1:]) else 0)
