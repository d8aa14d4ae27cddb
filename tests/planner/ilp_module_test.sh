#!/usr/bin/env bash
# The ILP module (planner/ilp_module.cpp): zbplan and zbrun link no solver library; a plan that runs
# no ILP loads none (nor OpenBLAS, whose threads CBC's LAPACK starts); the ILP finds the module
# beside zbplan or in ../lib/zbpp; and without it, or with a broken one, the ILP fails with a message
# that names the files and what to do (exit 1), while the other methods still work.
# Usage: ilp_module_test.sh ZBPLAN ZBRUN MODULE TMPDIR
set -u
zbplan=$1 zbrun=$2 module=$3
mkdir -p "$4"
tmp=$(cd "$4" && pwd -P)  # the loader names directories as /proc/self/exe resolves them
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "ok      $1"; else failed=$((failed + 1)); echo "FAILED  $1"; fi; }
problem=(-p 3 -m 3 --tf 3,15,7 --tb 12,4,9 --tw 5,11,2 --tcomm 2 --time-limit 5 --quiet)
solvers='cbc|clp|coin|cgl|osi|lapack|openblas|gfortran'

# Library names only: ldd's load addresses are hex, and one like 0x7f46bcbc... holds "cbc".
libs() { ldd "$1" | awk '{print $1}'; }
check "zbplan links no solver library: $(libs "$zbplan" | grep -icE "$solvers") found" \
  '! libs "$zbplan" | grep -qiE "$solvers"'
check "zbrun links no CBC: $(libs "$zbrun" | grep -icE 'cbc|clp|coin') found" '! libs "$zbrun" | grep -qiE "cbc|clp|coin"'

# What the dynamic loader opens: nothing of the ILP's for the heuristic, nor for auto without a
# time budget (it leaves the ILP out); the module and CBC for the ILP.
loaded() { LD_DEBUG=files "$zbplan" plan "$@" -o "$tmp/ilp_module.json" 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | sort -u; }
heuristic=$(loaded --method heuristic -p 16 -m 64 --tf 1 --tb 1 --tw 1 --mem-limit 2p)
check "a heuristic plan loads no solver library: $(echo "$heuristic" | grep -iE "$solvers|zbpp_ilp" | tr '\n' ' ')" \
  '! echo "$heuristic" | grep -qiE "$solvers|zbpp_ilp"'
auto=$(loaded --method auto "${problem[@]:0:12}")
check "auto without --time-limit loads no solver library" '! echo "$auto" | grep -qiE "$solvers|zbpp_ilp"'
ilp=$(loaded --method ilp "${problem[@]}")
check "the ILP loads the module and CBC" 'echo "$ilp" | grep -q libzbpp_ilp.so && echo "$ilp" | grep -q libCbc'

# zbplan alone: the ILP says what is missing and what to do; the rest works.
mkdir -p "$tmp/alone" && cp "$zbplan" "$tmp/alone/zbplan"
err=$("$tmp/alone/zbplan" plan --method ilp "${problem[@]}" -o "$tmp/alone/ilp.json" 2>&1 >/dev/null); code=$?
want="zbplan: ilp: the ILP needs its module libzbpp_ilp.so, which is not at $tmp/alone/libzbpp_ilp.so, \
$tmp/alone/../lib/zbpp/libzbpp_ilp.so; build zbplan where CBC is installed (coinor-libcbc-dev; cmake then builds \
the module beside zbplan), or put libzbpp_ilp.so beside the program or in its ../lib/zbpp"
check "without the module the ILP exits 1 ($code) saying: $err" '[ $code -eq 1 ] && [ "$err" = "$want" ]'
check "without the module the heuristic still plans" \
  '"$tmp/alone/zbplan" plan --method heuristic "${problem[@]:0:12}" -o "$tmp/alone/h.json" > /dev/null'

# An install's layout: bin/zbplan finds lib/zbpp/libzbpp_ilp.so.
mkdir -p "$tmp/inst/bin" "$tmp/inst/lib/zbpp" && cp "$zbplan" "$tmp/inst/bin/" && cp "$module" "$tmp/inst/lib/zbpp/"
out=$("$tmp/inst/bin/zbplan" plan --method ilp "${problem[@]}" -o "$tmp/inst/ilp.json" 2>&1); code=$?
check "installed, the ILP finds ../lib/zbpp/libzbpp_ilp.so (exit $code)" \
  '[ $code -eq 0 ] && echo "$out" | grep -q "ilp (CBC, what the search left of the 5 s time limit"'

# A file of that name that is no library: refused with the loader's reason, never a crash.
mkdir -p "$tmp/broken" && cp "$zbplan" "$tmp/broken/" && echo "not a library" > "$tmp/broken/libzbpp_ilp.so"
err=$("$tmp/broken/zbplan" plan --method ilp "${problem[@]}" -o "$tmp/broken/ilp.json" 2>&1 >/dev/null); code=$?
check "a broken module: exit 1 ($code), saying: $err" \
  '[ $code -eq 1 ] && [[ "$err" == "zbplan: ilp: the ILP module $tmp/broken/libzbpp_ilp.so cannot be loaded: $tmp/broken/libzbpp_ilp.so: "*"; if that names a missing CBC library, install CBC (Debian: coinor-libcbc3), else rebuild zbplan" ]]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
