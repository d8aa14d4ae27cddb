#!/usr/bin/env bash
# tools/gpu_checks.sh refuses a command line it cannot follow before it checks or writes anything:
# exit 2 with the reason, and no OUT_DIR made (an unknown option once became OUT_DIR's place).
# Usage: gpu_checks_usage_test.sh TMPDIR
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp=$1/gpu_checks_usage
rm -rf "$tmp" && mkdir -p "$tmp"
failed=0
expect() {  # expect WHAT-IT-MUST-SAY ARGS...
  local want=$1
  shift
  out=$(cd "$tmp" && bash "$here/tools/gpu_checks.sh" "$@" 2>&1)
  rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -- "$want" <<<"$out" || [ -n "$(ls -A "$tmp")" ]; then
    echo "FAIL: gpu_checks.sh $*: exit $rc, '$out', made: $(ls -A "$tmp" | tr '\n' ' ')"
    failed=1
  else
    echo "ok: gpu_checks.sh $*: $out"
  fi
  rm -rf "${tmp:?}"/*
}
expect "unknown option '--nobench'" --nobench out
expect "unknown option '--build=x'" --build=x out
expect "one OUT_DIR, got 2" out1 out2
expect "--build 'nowhere': no zbrun there" --build nowhere out
expect "--only: unknown group 'nccl_one_GPU'; the groups are cuda_tests,ctest,oracle," --only cuda_tests,nccl_one_GPU out
expect "--only needs a comma-separated list of groups" --only
expect "--only needs a comma-separated list of groups" --only "" out
expect "--only needs a comma-separated list of groups" --only , out
exit $failed
