#!/usr/bin/env bash
# The tests whose bits depend on OpenBLAS's kernel set, run under each set this CPU can execute
# (issue 34: a CI machine of another make picks other kernels): the GEMM tiles and the 1-, 2-,
# 3-thread zbrun digests, and the docs examples (whose losses and digest are exact on the kernels
# they were made with, README.md, and checked for their form on the others). OPENBLAS_CORETYPE
# picks the set; one the CPU lacks the instructions for would die of SIGILL, so it is skipped,
# said, not run. Usage: tools/kernel_sets.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: tools/kernel_sets.sh BUILD_DIR}
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
failed=0
for core in Prescott Haswell SkylakeX; do
  case $core in
    Haswell) need="avx2 fma" ;;
    SkylakeX) need="avx512f avx512bw avx512vl avx512dq" ;;
    *) need="sse2" ;;  # Prescott: SSE3, which /proc/cpuinfo calls pni; every x86-64 has SSE2
  esac
  missing=""
  for f in $need; do has "$f" || missing="$missing $f"; done
  if [ -n "$missing" ]; then
    echo "kernel set $core: skipped (this CPU lacks$missing)"
    continue
  fi
  echo "kernel set $core:"
  if ! OPENBLAS_CORETYPE=$core ctest --test-dir "$build" --output-on-failure \
      -R 'same bits on 1, 2 or 3 threads|gemm: |^docs: every marked example'; then
    echo "kernel set $core: FAILED"
    failed=1
  fi
done
exit $failed
