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
# When the programs link Open MPI, DIR/openmpi holds the Open MPI of this machine that mpirun needs
# there: orterun and orted, the components (plugins) but the network fabrics' (UCX, libfabric, verbs,
# PSM: one node needs none), PMIx's components, the help texts, and an openmpi-mca-params.conf for one
# node (plm isolated: no ssh needed; btl self,vader,tcp over loopback). DIR/bin/mpirun runs that
# orterun wherever the bundle was unpacked: it points Open MPI and PMIx into DIR/openmpi (OPAL_PREFIX,
# OPAL_PKGLIBDIR, ..., PMIX_PREFIX, PMIX_PKGLIBDIR, ...: these override the directories they were
# built with) and puts DIR/lib first on LD_LIBRARY_PATH. gpu_checks.sh --build uses it (MPIRUN).
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
# copy_libs LDD_OUTPUT: every library in it into DIR/lib, but the system's and the GPU ones.
copy_libs() {
  if grep -q 'not found' <<<"$1"; then
    echo "gpu_bundle.sh: a library the programs need is missing here: $(grep 'not found' <<<"$1" | sort -u | tr -s ' \t' ' ')" >&2
    exit 1
  fi
  for lib in $(awk '/=> \//{print $1 "=" $3}' <<<"$1" | sort -u); do
    name=${lib%%=*}
    grep -qE "$system|$gpu" <<<"$name" && continue
    [ -e "$root/lib/$name" ] || cp -L "${lib#*=}" "$root/lib/$name"
  done
}
copy_libs "$deps"
# Open MPI's runtime for mpirun, where the programs link Open MPI (the header says what and why).
if grep -q '^[[:space:]]*libmpi\.so' <<<"$deps"; then
  if ! command -v ompi_info >/dev/null ||
    ! grep -qF "Open MPI v$(ompi_info --parsable | sed -n 's/^ompi:version:full://p') " <<<"$version"; then
    echo "gpu_bundle.sh: the programs link Open MPI, but this machine's ompi_info is missing or of another version" \
      "(zbrun: $(grep -o 'Open MPI v[0-9.]*' <<<"$version"); install openmpi-bin)" >&2
    exit 1
  fi
  ompi_path() { ompi_info --parsable --path all | sed -n "s/^path:$1://p" | sed -n 1p; }
  ompi="$root/openmpi"
  mkdir -p "$ompi/bin" "$ompi/lib/openmpi" "$ompi/share/openmpi" "$ompi/etc"
  cp "$(ompi_path bindir)/orterun" "$(ompi_path bindir)/orted" "$ompi/bin/"
  cp "$(ompi_path pkgdatadir)"/help-*.txt "$ompi/share/openmpi/"
  cp "$(ompi_path sysconfdir)/openmpi-default-hostfile" "$ompi/etc/"
  fabrics='^lib(ucp|ucs|uct|ucm|fabric|ibverbs|rdmacm|efa|psm_infinipath|psm2|infinipath|oshmem|mca_common_(ucx|ofi|verbs))\.'
  for component in "$(ompi_path pkglibdir)"/mca_*.so; do
    needs=$(ldd "$component" | awk '{print $1}')
    grep -qE "$fabrics" <<<"$needs" || cp "$component" "$ompi/lib/openmpi/"
  done
  # An external PMIx (Debian's libpmix2), loaded by the pmix component: its components and help texts
  # (in their own folders: PMIx complains of every other file in its components' folder).
  pmix=$(ldd "$ompi"/lib/openmpi/mca_pmix_*.so | awk '/libpmix\.so/ && !n++ {print $3}')
  if [ -n "$pmix" ]; then
    pmix=$(dirname "$(readlink -f "$pmix")")
    mkdir -p "$ompi/lib/pmix" "$ompi/share/pmix"
    cp "$pmix"/pmix/pmix_mca_*.so "$ompi/lib/pmix/"
    cp "$pmix"/../share/pmix/help-*.txt "$ompi/share/pmix/"
  fi
  copy_libs "$(ldd "$ompi"/bin/* "$ompi"/lib/*/*.so)"
  cat >"$ompi/etc/openmpi-mca-params.conf" <<'EOF'
# Open MPI's defaults in a zbpp-gpu bundle (tools/gpu_bundle.sh): one node, no network fabrics.
# OMPI_MCA_<name>=<value> or mpirun --mca <name> <value> overrides them.
# Launch on this node alone: Open MPI's rsh launcher will not start without ssh or rsh.
plm = isolated
# Shared memory between the ranks; TCP over loopback where shared memory cannot be had.
btl = self,vader,tcp
btl_tcp_if_include = lo
# No process_vm_readv (CMA) between ranks: containers often forbid it.
btl_vader_single_copy_mechanism = none
btl_base_warn_component_unused = 0
EOF
  cat >"$root/bin/mpirun" <<'EOF'
#!/bin/sh
# Open MPI's mpirun from this bundle (tools/gpu_bundle.sh), wherever the bundle was unpacked.
root="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
o="$root/openmpi"
# Open MPI's directories and PMIx's: these, not the ones they were built with (which may hold another
# version's files). hwloc without the machine's plugins.
export OPAL_PREFIX="$o" OPAL_EXEC_PREFIX="$o" OPAL_BINDIR="$o/bin" OPAL_LIBDIR="$root/lib" \
  OPAL_PKGLIBDIR="$o/lib/openmpi" OPAL_DATAROOTDIR="$o/share" OPAL_DATADIR="$o/share" \
  OPAL_PKGDATADIR="$o/share/openmpi" OPAL_SYSCONFDIR="$o/etc"
export PMIX_PREFIX="$o" PMIX_INSTALL_PREFIX="$o" PMIX_EXEC_PREFIX="$o" PMIX_BINDIR="$o/bin" PMIX_LIBDIR="$root/lib" \
  PMIX_PKGLIBDIR="$o/lib/pmix" PMIX_DATAROOTDIR="$o/share" PMIX_DATADIR="$o/share" \
  PMIX_PKGDATADIR="$o/share/pmix" PMIX_SYSCONFDIR="$o/etc" HWLOC_PLUGINS_PATH="$o/lib/hwloc"
export PATH="$o/bin:$PATH" LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A lent machine is usually run as root, which mpirun refuses unless told.
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}" OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
exec "$o/bin/orterun" "$@"
EOF
  chmod +x "$root/bin/mpirun"
fi
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
