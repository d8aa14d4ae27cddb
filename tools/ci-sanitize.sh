#!/usr/bin/env bash
# The checked builds CI runs after the plain one (.ci/run):
#   build-asan  clang, AddressSanitizer + UndefinedBehaviorSanitizer (+ libFuzzer coverage): the
#               whole test suite, then each fuzz harness for ZBPP_FUZZ_SECONDS (default 30: six
#               harnesses in the time three took at 60).
#   build-tsan  ThreadSanitizer: the runtime tests, which run every rank as a thread of one process
#               over the in-process transport (zbrun --local).
# Any sanitizer report aborts the process, so the test that triggered it fails.
# Usage: tools/ci-sanitize.sh [asan|tsan|fuzz]...   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(asan fuzz tsan)
jobs=${ZBPP_JOBS:-2}
sup=$PWD/tools/sanitizers
# Open MPI keeps its own allocations alive at exit (leaks by design): tools/sanitizers/lsan.supp.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:hard_rss_limit_mb=4096:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$sup/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] && export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export OPENBLAS_NUM_THREADS=1  # OpenBLAS's own threads are not instrumented; TSan would see false races

for step in "${steps[@]}"; do
  case $step in
    asan|fuzz)
      if [ ! -f build-asan/CMakeCache.txt ] || [ "$step" = asan ]; then
        cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
          -DCMAKE_CXX_COMPILER=clang++-14 -DZBPP_SANITIZE=address,undefined -DZBPP_FUZZ=ON -DZBPP_ENABLE_CUDA=OFF
        cmake --build build-asan -j"$jobs"
      fi
      if [ "$step" = asan ]; then
        ctest --test-dir build-asan --output-on-failure -j"$jobs"
      else
        bash tools/fuzz.sh build-asan "${ZBPP_FUZZ_SECONDS:-30}"
      fi
      ;;
    tsan)
      cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZBPP_SANITIZE=thread -DZBPP_ENABLE_CUDA=OFF
      cmake --build build-tsan -j"$jobs" --target runtime_tests
      ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R '^runtime:'
      ;;
    *) echo "ci-sanitize: unknown step '$step' (asan, tsan or fuzz)" >&2; exit 2 ;;
  esac
done
