#!/usr/bin/env bash
# Packs a CUDA build's programs for a GPU machine that lacks the packages the build used (CBC,
# OpenBLAS, Open MPI: a lent machine with only the CUDA toolkit and a driver, say), as one tarball:
#     tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz
# There, unpacked into DIR:  tools/gpu_checks.sh --build DIR/zbpp-gpu/build OUT_DIR
# DIR/bin holds the programs gpu_checks.sh and gpu_bench.sh run, stripped, with the ILP module beside
# them; DIR/lib the shared libraries they load, except the C/C++ runtime and the two GPU libraries
# (cuBLASLt and NCCL, hundreds of MB each), which that machine's CUDA install or its Python packages
# provide. DIR/build holds one small script per program in the build's layout, so that only these
# programs see DIR/lib (Python and the rest keep the machine's own libraries).
set -euo pipefail
build="${1:?usage: tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz}"
tarball="${2:?usage: tools/gpu_bundle.sh BUILD_DIR OUT.tar.xz}"
programs=(zbplan zbrun tests/cuda_tests tools/zbpp_step_dump tools/zbpp_gpu_gemm_bench)
# Built now, so the programs are those of the sources as they are.
cmake --build "$build" -j"$(nproc)" --target zbplan zbrun cuda_tests zbpp_step_dump zbpp_gpu_gemm_bench zbpp_ilp >/dev/null ||
  { echo "gpu_bundle.sh: building $build failed (run the cmake --build above to see why)" >&2; exit 1; }
version=$("$build/zbrun" --version)
if ! grep -qE '^ +CUDA: [0-9]' <<<"$version"; then
  echo "gpu_bundle.sh: $build/zbrun was built without the CUDA backend" >&2
  exit 1
fi
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/zbpp-gpu"
mkdir -p "$root/bin" "$root/lib" "$root/build/tests" "$root/build/tools"
for p in "${programs[@]}" libzbpp_ilp.so; do
  strip -o "$root/bin/$(basename "$p")" "$build/$p"
done
# Every library the programs and the module load, but the ones any Linux machine has (the C and
# C++ runtime) and the GPU libraries that come with a CUDA install (found there by run.sh).
system='^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso|libcuda)\.'
gpu='^lib(cublasLt|cublas|nccl)\.'
deps=$(ldd "$root"/bin/*)
if grep -q 'not found' <<<"$deps"; then
  echo "gpu_bundle.sh: a library the programs need is missing here: $(grep 'not found' <<<"$deps" | sort -u | tr -s ' \t' ' ')" >&2
  exit 1
fi
for lib in $(awk '/=> \//{print $1 "=" $3}' <<<"$deps" | sort -u); do
  name=${lib%%=*}
  grep -qE "$system|$gpu" <<<"$name" && continue
  cp -L "${lib#*=}" "$root/lib/$name"
done
# The GPU libraries by the names the programs ask for (libcublasLt.so.13 with CUDA 13, .so.12 with 12).
gpu_libs=$(awk '/=>/{print $1}' <<<"$deps" | grep -E "$gpu" | sort -u | tr '\n' ' ')
# Which sources these programs are: tools/gpu_checks.sh --build refuses a bundle of other sources.
(cd "$source_dir" && git ls-files -z -- '*.cpp' '*.h' '*.cu' '*.cuh' '*CMakeLists.txt' '*.cmake' | sort -z |
  xargs -0 sha256sum) >"$root/SOURCES.sha256"
# The wrapper: finds cuBLASLt and NCCL once (the loader's cache, then CUDA's and Python's folders).
cat >"$root/bin/run.sh" <<'EOF'
#!/bin/sh
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$root/gpu-lib-path" ]; then
  dirs=""
  for lib in GPU_LIBS; do
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
sed -i "s/GPU_LIBS/$gpu_libs/" "$root/bin/run.sh"
chmod +x "$root/bin/run.sh"
for p in "${programs[@]}"; do
  up=$(dirname "$p" | sed 's|[^/.][^/]*|..|g; s|^\.$||')
  printf '#!/bin/sh\nexec "$(dirname "$0")/%s../bin/run.sh" %s "$@"\n' "${up:+$up/}" "$(basename "$p")" >"$root/build/$p"
  chmod +x "$root/build/$p"
done
tar -C "$stage" -cJf "$tarball" zbpp-gpu
echo "$tarball: $(du -h "$tarball" | cut -f1); on the GPU machine: tar -xJf $(basename "$tarball") -C DIR &&" \
  "tools/gpu_checks.sh --build DIR/zbpp-gpu/build OUT_DIR"
