#!/bin/bash
# The GPU tests' main must fail (exit 1, saying why) when nvidia-smi lists a GPU that CUDA cannot
# see, as on a machine whose driver is too old for this CUDA: a fake nvidia-smi listing one GPU
# comes first on PATH. On a machine where CUDA does see a GPU this cannot be staged: skipped (77).
# usage: fake_nvidia_smi_test.sh CUDA_TESTS TMPDIR
set -u
tests=$1 tmp=$2/fake_nvidia_smi
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "a real GPU is listed: nothing to stage here"
  exit 77
fi
mkdir -p "$tmp"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-fake)"\n' >"$tmp/nvidia-smi"
chmod +x "$tmp/nvidia-smi"
out=$(PATH="$tmp:$PATH" "$tests" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 1 ]; then
  echo "FAIL: cuda_tests exited $rc with a GPU listed by nvidia-smi and none seen by CUDA (expected 1)"
  exit 1
fi
if ! grep -q "nvidia-smi lists 1 GPU(s) but CUDA sees none" <<<"$out"; then
  echo "FAIL: cuda_tests did not say why it failed"
  exit 1
fi
# Without the fake, the same binary skips (77): the failure above came from the listed GPU.
PATH="$(echo "$PATH" | tr ':' '\n' | grep -vx "$tmp" | paste -sd:)" "$tests" >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 77 ]; then
  echo "FAIL: cuda_tests exited $rc without a GPU (expected 77, skipped)"
  exit 1
fi
echo "ok: fails with a listed GPU CUDA cannot see, skips without one"
