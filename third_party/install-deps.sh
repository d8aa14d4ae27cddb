#!/usr/bin/env bash
# Installs every build and test dependency of zbpp from Debian packages, idempotently.
# CUDA and NCCL are not installed here: they are optional and found under /usr/local/cuda.
# Usage: third_party/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

# One package a line, with what it brings.
packages=(
  cmake g++ make pkg-config git
  coinor-libcbc-dev      # CBC, for the appendix-G ILP refinement
  nlohmann-json3-dev     # JSON reader/writer for problem and schedule files
  catch2                 # Catch2 v2 tests (single header)
  libcli11-dev           # command lines of zbplan and zbrun
  libopenmpi-dev openmpi-bin   # zbrun's MPI transport and mpirun
  libopenblas-dev        # CPU reference backend GEMMs
  python3-jsonschema     # checks written files against schema/*.schema.json in tests
  python3-torch          # the oracle tests: PyTorch autograd checks the CPU backend (tests/oracle)
  librsvg2-bin python3-pil     # render test of zbplan show: SVG -> PNG, count the blocks
  fontconfig             # fc-match: the font tools/pictures.sh records in each PNG (tests/check_pictures.py)
  chromium               # viewer test: zbplan show's HTML page in headless Chromium (tests/check_viewer.py)
  clang-14 libclang-rt-14-dev llvm-14  # sanitizer and libFuzzer builds (tools/ci-sanitize.sh); llvm-symbolizer
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
