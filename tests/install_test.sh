#!/usr/bin/env bash
# cmake --install into a scratch prefix: bin/zbplan, bin/zbrun, share/zbpp/schema/*.json and
# share/doc/zbpp are there, and the installed programs run: --version, a plan, a two-step run.
# Also: the build-info script says "unknown" for a source tree that is not a git checkout.
# Usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -u
cmake=$1 build=$2 source=$3
rm -rf "$4" && mkdir -p "$4" && scratch=$(cd "$4" && pwd) || exit 1
prefix="$scratch/prefix"
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "ok      $1"; else failed=$((failed + 1)); echo "FAILED  $1"; fi; }

"$cmake" --install "$build" --prefix "$prefix" > "$scratch/install.log" 2>&1; code=$?
check "cmake --install exits 0 ($code)" '[ $code -eq 0 ]'
for f in bin/zbplan bin/zbrun share/zbpp/schema/problem.schema.json share/zbpp/schema/schedule.schema.json \
         share/doc/zbpp/README.md share/doc/zbpp/docs/architecture.md share/doc/zbpp/docs/examples/gpt-1.5b-p8.problem.json; do
  check "installed $f" '[ -s "$prefix/$f" ]'
done
check "bin/ holds only the two programs" '[ "$(ls "$prefix/bin" | tr "\n" " ")" = "zbplan zbrun " ]'

for program in zbplan zbrun; do
  out=$("$prefix/bin/$program" --version 2>&1); code=$?
  check "$program --version exits 0 ($code)" '[ $code -eq 0 ]'
  check "... names the program, version and git commit: $(echo "$out" | head -1)" \
    'echo "$out" | head -1 | grep -Eq "^$program [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{12}(-modified)?|unknown)\)$"'
  check "... and what the build found" 'echo "$out" | grep -Eq "^  CBC: " && echo "$out" | grep -Eq "^  MPI: " && echo "$out" | grep -Eq "^  CUDA: "'
done

cd "$scratch" || exit 1
out=$("$prefix/bin/zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 0.5 -o s.json 2>&1); code=$?
check "the installed zbplan plans (exit $code)" '[ $code -eq 0 ] && echo "$out" | grep -q "^wrote s.json$"'
out=$("$prefix/bin/zbplan" validate s.json 2>&1)
check "... a valid file: $out" '[ "$out" = "s.json: ok (zb-h1, lowered, p=2, m=4, chunks=1, 48 ops)" ]'
out=$("$prefix/bin/zbrun" s.json --local --steps 2 --quiet 2>&1); code=$?
check "the installed zbrun runs it (exit $code)" '[ $code -eq 0 ] && echo "$out" | grep -q "weights digest [0-9a-f]\{16\}"'

# A release tarball has no .git: the commit is "unknown", not an error.
mkdir -p "$scratch/tarball"
"$cmake" -DZBPP_SOURCE_DIR="$scratch/tarball" -DZBPP_TEMPLATE="$source/cli/build_info.h.in" \
  -DZBPP_OUTPUT="$scratch/tarball/info.h" -DZBPP_VERSION=0.1.0 -P "$source/cmake/build_info.cmake"; code=$?
check "outside a git checkout the build info says git unknown (exit $code)" \
  '[ $code -eq 0 ] && grep -q "^#define ZBPP_GIT_COMMIT \"unknown\"$" "$scratch/tarball/info.h"'

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
