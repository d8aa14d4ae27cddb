#!/usr/bin/env bash
# An output named as standard output (-o /dev/stdout, or a file standard output already writes to)
# holds the file alone: zbplan's summary and zbrun's report go to standard error then (issue 34,
# class 7).
set -euo pipefail
zbplan=$1
zbrun=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o /dev/stdout >"$tmp/out.json" 2>"$tmp/err.txt"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out.json" || fail "-o /dev/stdout: stdout is not the schedule alone"
grep -q '^wrote /dev/stdout' "$tmp/err.txt" || fail "-o /dev/stdout: the summary is not on stderr"

"$zbplan" export "$tmp/out.json" -o /dev/stdout >"$tmp/out.csv" 2>"$tmp/err2.txt"
grep -q 'wrote' "$tmp/out.csv" && fail "export -o /dev/stdout: the summary is in the CSV"
grep -q '^wrote /dev/stdout' "$tmp/err2.txt" || fail "export -o /dev/stdout: the summary is not on stderr"

# A file given to -o by its name while standard output is that same file.
"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$tmp/same.json" >"$tmp/same.json" 2>/dev/null
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/same.json" || fail "-o FILE >FILE: not the schedule alone"

# Elsewhere the summary stays on standard output.
"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$tmp/s.json" >"$tmp/said.txt"
grep -q "^wrote $tmp/s.json" "$tmp/said.txt" || fail "-o FILE: the summary left standard output"
# zbrun's trace on standard output: the JSON alone there, the steps and the report on stderr.
"$zbrun" "$tmp/s.json" --local --steps 1 --model small --trace /dev/stdout >"$tmp/trace.json" 2>"$tmp/run.txt"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/trace.json" || fail "zbrun --trace /dev/stdout: not the trace alone"
grep -q '^done: 1 steps of zb-h1' "$tmp/run.txt" || fail "zbrun --trace /dev/stdout: the report is not on stderr"
echo "PASS"
