#!/usr/bin/env python3
"""Runs the examples in README.md and docs/*.md and compares their output with what the docs show.

An example is a fenced code block right after a marker line:

    <!-- example -->                      the block holds `$ command` lines, each followed by its output
    <!-- example: command=CMD -->         the block is the output of CMD (shown elsewhere in the doc)

Options after the colon, separated by ` ; `:
    vary=REGEX     a part of an expected line matching REGEX matches any text REGEX matches in the
                   output (times, say: `vary=[0-9.]+ s`); give it more than once for several patterns
    setup=CMD      run first (its output is not compared), e.g. to write a file the example reads
    exit=N         the exit status the last command must return (default 0)
    kernels=REGEX  the output shows the bits of these OpenBLAS kernel sets (the CPU backend's losses and
                   weights digest depend on them: README.md); on a machine whose OpenBLAS picks another
                   set, losses and the digest line match any value
A line `...` in the expected output stands for any number of lines.

Examples of one doc run in order in one scratch directory, where `build` links to the build tree and
the repository's top-level folders and files are linked in, so commands read as the docs print them
(`build/zbplan ...`, `tools/table5.sh`, `docs/examples/...`). Exit 0 when every example
prints what its doc shows; 1 otherwise, with a diff per example. Usage:

    tools/doc_examples.py BUILD_DIR [DOC.md ...] [--list]
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!-- example(?::\s*(.*?))?\s*-->\s*$")


def parse_options(text, where):
    opts = {"vary": [], "setup": [], "exit": 0, "command": None, "kernels": None}
    if not text:
        return opts
    for part in text.split(" ; "):
        key, eq, value = part.strip().partition("=")
        if not eq or key not in opts:
            raise SystemExit(f"{where}: bad example option '{part.strip()}' "
                             "(expected vary=, setup=, exit=, kernels= or command=)")
        if key == "exit":
            opts["exit"] = int(value)
        elif key in ("command", "kernels"):
            opts[key] = value
        else:
            opts[key].append(value)
    return opts


def examples_in(path):
    """Yields (line number, options, [(command, expected lines)]) for each marked block of a doc."""
    lines = open(path, encoding="utf-8").read().split("\n")
    rel = os.path.relpath(path, ROOT)
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        where = f"{rel}:{i + 1}"
        opts = parse_options(m.group(1), where)
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"{where}: an example marker must stand right before a ``` block")
        j = i + 2
        body = []
        while j < len(lines) and not lines[j].startswith("```"):
            body.append(lines[j])
            j += 1
        steps = []
        if opts["command"] is not None:
            steps.append((opts["command"], body))
        else:
            for line in body:
                if line.startswith("$ "):
                    steps.append((line[2:], []))
                elif not steps:
                    raise SystemExit(f"{where}: the block must start with a '$ command' line "
                                     "(or give command= in the marker)")
                else:
                    steps[-1][1].append(line)
        yield where, opts, steps
        i = j + 1


def line_pattern(expected, vary):
    """A regex for one expected line: literal, except the parts that match a vary pattern."""
    if not vary:
        return re.escape(expected)
    any_vary = re.compile("|".join(f"(?:{v})" for v in vary))
    out, pos = [], 0
    for m in any_vary.finditer(expected):
        if m.end() == m.start():
            continue
        out.append(re.escape(expected[pos:m.start()]))
        out.append("(?:" + "|".join(f"(?:{v})" for v in vary) + ")")
        pos = m.end()
    out.append(re.escape(expected[pos:]))
    return "".join(out)


def matches(expected, actual, vary):
    """True when the actual lines match the expected ones (`...` = any run of lines)."""
    pats = [None if e == "..." else re.compile(line_pattern(e, vary) + r"\Z") for e in expected]

    memo = {}

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(pats):
            r = j == len(actual)
        elif pats[i] is None:
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and pats[i].match(actual[j]) is not None and go(i + 1, j + 1)
        memo[key] = r
        return r

    return go(0, 0)


def blas_kernels():
    """The kernel set this machine's OpenBLAS picks ("SkylakeX", "Haswell"), as zbrun names it."""
    import ctypes
    import ctypes.util
    lib = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    name = lib.openblas_get_corename().decode()
    return name[:1].upper() + name[1:]


# What a kernel set other than the doc's changes in the CPU backend's output: the losses' last digits
# and the weights digest.
KERNEL_VARY = [r"loss [0-9]+\.[0-9]+", r"weights digest [0-9a-f]{16} \(OpenBLAS [A-Za-z0-9]+ kernels\)"]


def scratch_dir(build):
    d = tempfile.mkdtemp(prefix="zbpp-doc-")
    for name in os.listdir(ROOT):
        if name.startswith(".") or name.startswith("build"):
            continue
        os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
    os.symlink(os.path.abspath(build), os.path.join(d, "build"))
    return d


def run(cmd, cwd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,vader", LC_ALL="C")
    # Under ASan the examples run zbrun under mpirun: Open MPI has no frame pointers, so only the
    # slow unwinder lets LeakSanitizer match tools/sanitizers/lsan.supp (see tests/runtime/mpi_test.sh).
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":fast_unwind_on_malloc=0"
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=600)
    out = p.stdout.decode("utf-8", "replace").rstrip("\n")
    # Trailing blanks are invisible in a doc (and editors strip them): compare without them.
    return p.returncode, [line.rstrip() for line in out.split("\n")] if out else []


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if not args:
        print(__doc__.strip().split("\n")[-1].strip(), file=sys.stderr)
        return 2
    build = args[0]
    docs = args[1:] or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    if not os.path.isdir(build):
        print(f"doc_examples: {build}: no such build directory (build first: cmake --build build)",
              file=sys.stderr)
        return 2
    failed = passed = 0
    for doc in docs:
        found = list(examples_in(doc))
        if not found:
            continue
        if "--list" in argv:
            for where, _, steps in found:
                print(where, " && ".join(c for c, _ in steps))
            continue
        cwd = scratch_dir(build)
        try:
            for where, opts, steps in found:
                for cmd in opts["setup"]:
                    rc, out = run(cmd, cwd)
                    if rc != 0:
                        print(f"FAIL {where}: setup '{cmd}' exited {rc}:\n  " + "\n  ".join(out[-20:]))
                        failed += 1
                        break
                else:
                    problems = []
                    vary = opts["vary"]
                    if opts["kernels"] and not re.fullmatch(opts["kernels"], blas_kernels()):
                        vary = vary + KERNEL_VARY
                    for k, (cmd, expected) in enumerate(steps):
                        rc, out = run(cmd, cwd)
                        want_rc = opts["exit"] if k == len(steps) - 1 else 0
                        if rc != want_rc:
                            problems.append(f"$ {cmd}\n  exited {rc}, the doc expects {want_rc}")
                        if not matches(expected, out, vary):
                            diff = difflib.unified_diff(expected, out, "doc", "actual", lineterm="", n=1)
                            problems.append(f"$ {cmd}\n" + "\n".join("  " + d for d in diff))
                    if problems:
                        failed += 1
                        print(f"FAIL {where}:\n" + "\n".join(problems))
                    else:
                        passed += 1
                        print(f"ok   {where}")
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
    if "--list" not in argv:
        print(f"doc examples: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
