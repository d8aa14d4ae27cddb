#!/usr/bin/env bash
# tools/nccl_one_gpu_checks.sh, the GPU script's one-GPU NCCL group, run here with --cpu (the CPU
# backend over MPI, --local as both references) so that its own logic is tested without a GPU:
# planning, launching through the rank wrapper, reading digests and losses, the tolerance
# comparisons and the three fault checks. Then a run where one method's weights differ (zbrun
# given another --seed for zb-v plans) must FAIL the methods check, or the check proves nothing.
# Usage: nccl_one_gpu_checks_test.sh ZBPLAN ZBRUN TMPDIR
set -u
zbplan=$1 zbrun=$2
here="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$3/nccl_one_gpu_checks
rm -rf "$tmp" && mkdir -p "$tmp"
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan, as in mpi_test.sh: the slow unwinder, so tools/sanitizers/lsan.supp matches Open
# MPI's allocations (its libraries have no frame pointers); a leak of ours still fails the run.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "ok      $1"; else failed=$((failed + 1)); echo "FAILED  $1"; fi; }

out=$(bash "$here/tools/nccl_one_gpu_checks.sh" --quick --cpu "$zbplan" "$zbrun" tiny "$tmp/good" 2>&1); code=$?
echo "$out"
check "--quick --cpu: exit 0 ($code)" '[ $code -eq 0 ]'
for name in "methods (n=2)" "in-process (n=2)" "--local (n=2)" fail_at hang killed; do
  check "... PASS nccl_one_gpu $name" 'grep -q "^PASS nccl_one_gpu $name: " <<<"$out"'
done
check "... and no other line" '[ "$(wc -l <<<"$out")" -eq 6 ]'

# The weights comparison (tools/weights_close.py): a run against itself passes; a tensor moved by
# 0.5 everywhere, or one missing, fails.
close() { python3 "$here/tools/weights_close.py" "$1" "$tmp/good/n2_single_gpu_weights" --lr 0.001 --steps 3; }
out=$(close "$tmp/good/n2_weights"); code=$?
check "weights_close.py: the same weights pass ($code): $out" '[ $code -eq 0 ] && [[ $out == "ok 53 weight tensors, "* ]]'
rm -rf "$tmp/moved" && cp -r "$tmp/good/n2_weights" "$tmp/moved"
python3 -c 'import sys; from array import array; a = array("f"); f = open(sys.argv[1], "rb"); a.frombytes(f.read()); f.close()
open(sys.argv[1], "wb").write(array("f", [v + 0.5 for v in a]).tobytes())' "$tmp/moved/tensor5.f32"
out=$(close "$tmp/moved"); code=$?
check "... a tensor moved by 0.5 fails ($code): $out" '[ $code -eq 1 ] && [[ $out == "FAIL 53 weight tensors, "*"(tensor5.f32)" ]]'
rm "$tmp/moved/tensor5.f32"
out=$(close "$tmp/moved"); code=$?
check "... a missing tensor fails ($code): $out" '[ $code -eq 1 ] && [ "$out" = "FAIL the tensor files differ: 52 here, 53 in the reference" ]'

# zb-v's run trains other weights: the methods check must fail, naming the digests' count.
fake="$tmp/zbrun_other_seed_for_zb-v"
printf '#!/bin/sh\ncase "$1" in *zb-v*) exec "%s" "$@" --seed 7 ;; esac\nexec "%s" "$@"\n' "$zbrun" "$zbrun" >"$fake"
chmod +x "$fake"
out=$(bash "$here/tools/nccl_one_gpu_checks.sh" --quick --cpu "$zbplan" "$fake" tiny "$tmp/bad" 2>&1); code=$?
echo "$out"
check "one method's weights differ: exit 1 ($code)" '[ $code -eq 1 ]'
check "... FAIL nccl_one_gpu methods, 2 digests" 'grep -q "^FAIL nccl_one_gpu methods (n=2): 3 of 3 runs ended, 2 digests" <<<"$out"'

# A PATH with what the script needs before it looks for mpirun, and no mpirun.
mkdir -p "$tmp/bin" && ln -sf "$(command -v dirname)" "$(command -v mkdir)" "$tmp/bin/"
out=$(MPIRUN='' PATH="$tmp/bin" /bin/bash "$here/tools/nccl_one_gpu_checks.sh" --quick --cpu "$zbplan" "$zbrun" tiny "$tmp/none" 2>&1); code=$?
check "no mpirun: exit 77 ($code), one SKIP line saying so" \
  '[ $code -eq 77 ] && [ "$out" = "SKIP nccl_one_gpu: no mpirun on this machine (a bundle has none; install Open MPI or set MPIRUN)" ]'
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
