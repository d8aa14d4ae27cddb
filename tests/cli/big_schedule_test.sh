#!/usr/bin/env bash
# A big schedule file is read within about twice its size (issue 34, class 8): the ops are streamed
# from the parser into the schedule, not held as a JSON DOM (about ten times the text). Under a
# `ulimit -v` of twice the file plus the program's own 32 MB, validate and simulate read a 22 MB
# file (1f1b, p = 32, m = 2000, 376188 ops) and a bad op in it is still located; the DOM reader
# needed about 300 MB there and ended in std::bad_alloc. An input beyond the limit is said to be
# out of memory, not a crash.
set -euo pipefail
zbplan=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$zbplan" plan --method 1f1b -p 32 -m 2000 --tf 1 --tb 1 --tw 1 -o "$tmp/big.json" >/dev/null
size_kb=$(( $(stat -c %s "$tmp/big.json") / 1024 ))
limit_kb=$(( 2 * size_kb + 32 * 1024 ))
echo "file $((size_kb / 1024)) MB, ulimit -v $((limit_kb / 1024)) MB"

for command in validate simulate; do
  if ! (ulimit -v "$limit_kb"; "$zbplan" "$command" "$tmp/big.json" >"$tmp/out.txt" 2>&1); then
    cat "$tmp/out.txt" >&2
    fail "$command did not read the file within $((limit_kb / 1024)) MB"
  fi
done
grep -q "span              6093 " "$tmp/out.txt" || fail "simulate printed no span"

# The last stage's 1000th op made wrong: the streamed reader names it as the DOM reader did.
python3 - "$tmp/big.json" "$tmp/bad.json" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
stage, at = -1, None
for i, line in enumerate(lines):
    if line.strip() == "[":
        stage, op = stage + 1, 0
    elif line.strip().startswith("{\"type\""):
        if stage == 31 and op == 1000:
            at = i
        op += 1
lines[at] = lines[at].replace('"mb": ', '"mb": -5, "micro": ', 1)
open(sys.argv[2], "w").write("\n".join(lines))
PY
if (ulimit -v "$limit_kb"; "$zbplan" validate "$tmp/bad.json" >"$tmp/bad.txt" 2>&1); then fail "the bad op was accepted"; fi
grep -q "bad.json: /stages/31/1000/micro: unknown op field 'micro'" "$tmp/bad.txt" || { cat "$tmp/bad.txt" >&2; fail "the bad op is not located"; }

# Too little memory for the file: said so, exit 1, no crash.
set +e
(ulimit -v $(( size_kb / 2 + 16 * 1024 )); "$zbplan" validate "$tmp/big.json" >"$tmp/oom.txt" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] || { cat "$tmp/oom.txt" >&2; fail "out of memory exits $rc, not 1"; }
grep -q "zbplan: out of memory in 'zbplan validate" "$tmp/oom.txt" || { cat "$tmp/oom.txt" >&2; fail "out of memory not said"; }
echo "ok"
