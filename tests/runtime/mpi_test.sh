#!/usr/bin/env bash
# zbrun under mpirun (Open MPI): the same weights as the in-process and no-pipeline runs for p=2 and
# p=4, with the synchronous optimizer and with post-validation; a wrong rank count refused, and a
# failing rank ending the job with its message.
# Usage: mpi_test.sh ZBPLAN ZBRUN TMPDIR
set -u
zbplan=$1 zbrun=$2 tmp=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "ok      $1"; else failed=$((failed + 1)); echo "FAILED  $1"; fi; }
digest() { grep -o 'weights digest [0-9a-f]*' | awk '{print $3}'; }
plan() { "$zbplan" plan --method "$1" -p "$2" -m 8 --tf 1 --tb 1 --tw 0.5 -o "$tmp/mpi_$1_p$2.json" --optimizer sync "${@:3}" > /dev/null; }

plan 1f1b 1
ref=$("$zbrun" "$tmp/mpi_1f1b_p1.json" --local --steps 3 --quiet | digest)
for p in 2 4; do
  for method in zb-h1 zb-v; do
    plan "$method" "$p"
    got=$(timeout 120 mpirun -n "$p" "$zbrun" "$tmp/mpi_${method}_p$p.json" --steps 3 --quiet 2>&1 | digest)
    check "mpirun -n $p $method: weights digest $got equals the no-pipeline run's $ref" '[ -n "$got" ] && [ "$got" = "$ref" ]'
  done
done

# Post-validation: without clipping the same bits as sync; with clipping (every step here) the
# same bits as the in-process run of the same file, rollbacks, replays and all.
"$zbplan" plan --method zb-h1 -p 4 -m 8 --tf 1 --tb 1 --tw 0.5 -o "$tmp/mpi_pv_p4.json" > /dev/null
got=$(timeout 120 mpirun -n 4 "$zbrun" "$tmp/mpi_pv_p4.json" --steps 3 --quiet --clip-norm 100 2>&1 | digest)
sync=$("$zbrun" "$tmp/mpi_1f1b_p1.json" --local --steps 3 --quiet --clip-norm 100 | digest)
check "mpirun -n 4 post-validation without clipping: digest $got equals sync's $sync" '[ -n "$got" ] && [ "$got" = "$sync" ]'
out=$(timeout 120 mpirun -n 4 "$zbrun" "$tmp/mpi_pv_p4.json" --steps 6 2>&1)
got=$(echo "$out" | digest)
local=$("$zbrun" "$tmp/mpi_pv_p4.json" --local --steps 6 --quiet | digest)
check "mpirun -n 4 post-validation with clipping: digest $got equals the in-process run's $local" '[ -n "$got" ] && [ "$got" = "$local" ]'
check "... after rolling back speculative steps" 'echo "$out" | grep -q "optimizer post-validation: [1-9][0-9]* speculative steps rolled back"'
out=$(timeout 120 mpirun -n 4 "$zbrun" "$tmp/mpi_pv_p4.json" --steps 4 --clip-norm 100 --inject-nonfinite 1:3 2>&1)
got=$(echo "$out" | digest)
local=$("$zbrun" "$tmp/mpi_pv_p4.json" --local --steps 4 --quiet --clip-norm 100 --inject-nonfinite 1:3 | digest)
check "mpirun -n 4 post-validation, NaN on rank 3 at step 1: step skipped" 'echo "$out" | grep -q "step 1: loss .* (skipped: non-finite gradient)"'
check "... digest $got equals the in-process run's $local" '[ -n "$got" ] && [ "$got" = "$local" ]'

out=$(timeout 60 mpirun -n 2 "$zbrun" "$tmp/mpi_zb-h1_p4.json" --steps 1 2>&1); code=$?
check "a 4-rank schedule under 2 ranks exits non-zero" '[ $code -ne 0 ]'
check "... saying so" 'echo "$out" | grep -q "planned for 4 ranks, but 2 ranks are running"'

out=$(timeout 60 mpirun -n 1 "$zbrun" "$tmp/mpi_zb-h1_p2.json" --steps 1 : -n 1 "$zbrun" "$tmp/mpi_zb-v_p2.json" --steps 1 2>&1); code=$?
check "ranks given different schedule files exit non-zero" '[ $code -ne 0 ] && [ $code -ne 124 ]'
check "... naming the rank whose file differs" 'echo "$out" | grep -q "rank 1 replays another schedule file than rank 0"'

# A rank killed mid-run (SIGKILL): mpirun ends the job and names it, well within the timeout.
start=$(date +%s)
timeout 60 mpirun -n 2 "$zbrun" "$tmp/mpi_zb-h1_p2.json" --steps 100000 --quiet --timeout 30 > "$tmp/killed.log" 2>&1 &
job=$!
for _ in $(seq 50); do pgrep -f "zbrun $tmp/mpi_zb-h1_p2.json" > /dev/null && break; sleep 0.1; done
sleep 1
pkill -9 -n -f "zbrun $tmp/mpi_zb-h1_p2.json"
wait $job; code=$?
elapsed=$(( $(date +%s) - start ))
check "a killed rank ends the job non-zero ($code) within seconds ($elapsed s), not the 30 s timeout" '[ $code -ne 0 ] && [ $code -ne 124 ] && [ $elapsed -lt 20 ]'
check "... and mpirun names the dead process" 'grep -qi "signal 9\|killed" "$tmp/killed.log"'

start=$(date +%s)
out=$(timeout 60 mpirun -n 4 "$zbrun" "$tmp/mpi_zb-h1_p4.json" --steps 2 --fail-at 2:5 --timeout 30 2>&1); code=$?
elapsed=$(( $(date +%s) - start ))
check "a failing rank ends the job non-zero" '[ $code -ne 0 ] && [ $code -ne 124 ]'
check "... naming its rank and op" 'echo "$out" | grep -q "rank 2, op 5 (SEND_F1 to rank 3): injected failure"'
check "... within seconds, not the 30 s timeout ($elapsed s)" '[ $elapsed -lt 20 ]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
