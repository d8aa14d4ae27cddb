#!/usr/bin/env bash
# tools/gpu_checks.sh must never pass where it checked nothing: without a GPU it exits 1 and says so.
# On a machine with a GPU this test is skipped (77): there the script is the GPU owner's command.
# Usage: gpu_checks_test.sh OUT_DIR
set -u
if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then exit 77; fi
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
dir="$(cd "$1" && pwd)"
out=$(bash "$here/tools/gpu_checks.sh" "$dir" 2>&1)
rc=$?
echo "exit $rc: $out"
[ $rc -eq 1 ] && [ "$out" = "no GPU: nothing was checked (nvidia-smi lists none; see $dir/nvidia-smi.txt)" ]
