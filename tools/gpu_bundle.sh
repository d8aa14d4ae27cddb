#!/usr/bin/env bash
# Packs a CUDA build's programs for a GPU machine that lacks the packages the build used (CBC,
# OpenBLAS, Open MPI: a lent machine with only the CUDA toolkit and a driver, say), as one tarball:
#     tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz
# There, unpacked into DIR:  tools/gpu_checks.sh --build DIR/build OUT_DIR
# DIR/bin holds the programs gpu_checks.sh and gpu_bench.sh run, stripped, with the ILP module beside
# them; DIR/lib the shared libraries they load, except the C/C++ runtime and the two GPU libraries
# (cuBLASLt and NCCL, hundreds of MB each), which that machine's CUDA install or its Python packages
# provide. DIR/build holds one small script per program in the build's layout, so that only these
# programs see DIR/lib (Python and the rest keep the machine's own libraries).
set -euo pipefail
build="${1:?usage: tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz}"
tarball="${2:?usage: tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz}"
programs=(zbplan zbrun tests/cuda_tests tools/zbpp_step_dump tools/zbpp_gpu_gemm_bench)
for p in "${programs[@]}" libzbpp_ilp.so; do
  [ -f "$build/$p" ] || {
    echo "gpu_bundle.sh: $build/$p is missing: build it first (cmake --build $build --target zbplan zbrun cuda_tests zbpp_step_dump zbpp_gpu_gemm_bench zbpp_ilp)" >&2
    exit 1
  }
done
if ! "$build/zbrun" --version | grep -qE '^ +CUDA: [0-9]'; then
  echo "gpu_bundle.sh: $build/zbrun was built without the CUDA backend" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/zbpp-gpu"
mkdir -p "$root/bin" "$root/lib" "$root/build/tests" "$root/build/tools"
for p in "${programs[@]}" libzbpp_ilp.so; do
  strip -o "$root/bin/$(basename "$p")" "$build/$p"
done
# Every library the programs and the module load, but the ones any Linux machine has (the C and
# C++ runtime) and the GPU libraries that come with a CUDA install.
skip='^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso|libcublasLt|libcublas|libnccl|libcuda)\.'
for lib in $(ldd "$root"/bin/* | awk '/=> \//{print $1 " " $3}' | sort -u | awk '{print $1 "=" $2}'); do
  name=${lib%%=*}
  grep -qE "$skip" <<<"$name" && continue
  cp -L "${lib#*=}" "$root/lib/$name"
done
# The wrapper: finds cuBLASLt and NCCL once (the loader's cache, then CUDA's and Python's folders).
cat >"$root/bin/run.sh" <<'EOF'
#!/bin/sh
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$root/gpu-lib-path" ]; then
  dirs=""
  for lib in libcublasLt.so.13 libnccl.so.2; do
    found=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {print $NF; exit}')
    [ -n "$found" ] || found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
    [ -n "$found" ] && dirs="$dirs:$(dirname "$found")"
  done
  echo "$dirs" >"$root/gpu-lib-path"
fi
program="$1"
shift
LD_LIBRARY_PATH="$root/lib$(cat "$root/gpu-lib-path")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$root/bin/$program" "$@"
EOF
chmod +x "$root/bin/run.sh"
for p in "${programs[@]}"; do
  up=$(dirname "$p" | sed 's|[^/.][^/]*|..|g; s|^\.$||')
  printf '#!/bin/sh\nexec "$(dirname "$0")/%s../bin/run.sh" %s "$@"\n' "${up:+$up/}" "$(basename "$p")" >"$root/build/$p"
  chmod +x "$root/build/$p"
done
tar -C "$stage" -cJf "$tarball" zbpp-gpu
echo "$tarball: $(du -h "$tarball" | cut -f1); on the GPU machine: tar -xJf $(basename "$tarball") -C DIR &&" \
  "tools/gpu_checks.sh --build DIR/zbpp-gpu/build OUT_DIR"
