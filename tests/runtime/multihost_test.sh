#!/usr/bin/env bash
# zbrun across hosts (issue 34, class 9): two network namespaces stand for two hosts, joined by a
# veth pair (10.77.x.1 and .2); mpirun starts in the first and launches the second's rank through
# an rsh agent that enters its namespace; Open MPI talks TCP over the veth only. Checks:
#  1. the run across the two hosts gives the digest of the same run in one process (--local);
#  2. cutting the link mid-run ends the job within --timeout + 5 s, exit non-zero, naming the lost
#     host (with the keepalive settings docs/runtime.md gives for multi-host runs);
#  3. the checkpoints written before the cut resume, across the hosts again, to the digest of an
#     uninterrupted run.
# Skips (77) without root, network namespaces or mpirun.
set -uo pipefail
zbplan=$1 zbrun=$2
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
command -v mpirun >/dev/null || skip "no mpirun"
command -v ip >/dev/null || skip "no ip (iproute2)"
tag=$$
net=10.$((77 + tag % 100)).$((tag / 100 % 250))
h0=zbh0_$tag h1=zbh1_$tag
ip netns add "$h0" 2>/dev/null || skip "cannot create a network namespace here"
tmp=$(mktemp -d)
cleanup() { ip netns del "$h0" 2>/dev/null; ip netns del "$h1" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ip netns add "$h1" || fail "second namespace"
ip link add "v0_$tag" type veth peer name "v1_$tag" || skip "cannot create a veth pair here"
ip link set "v0_$tag" netns "$h0" && ip link set "v1_$tag" netns "$h1"
ip netns exec "$h0" ip addr add "$net.1/24" dev "v0_$tag"
ip netns exec "$h1" ip addr add "$net.2/24" dev "v1_$tag"
for n in 0 1; do
  ns=$h0; [ $n = 1 ] && ns=$h1
  ip netns exec "$ns" ip link set "v${n}_$tag" up
  ip netns exec "$ns" ip link set lo up
done
# The rsh agent: "agent [options] HOST command" runs the command in HOST's namespace.
cat >"$tmp/agent.sh" <<AGENT
#!/bin/bash
while [[ "\$1" == -* ]]; do shift; done
host=\$1; shift
case "\$host" in
  $net.1) ns=$h0 ;;
  $net.2) ns=$h1 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$tmp/agent.sh"
printf '%s slots=1\n%s slots=1\n' "$net.1" "$net.2" >"$tmp/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# What docs/runtime.md asks of multi-host runs: a lost host is noticed in seconds, not minutes.
export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1 OMPI_MCA_oob_tcp_keepalive_probes=3
across() {
  ip netns exec "$h0" mpirun -n 2 --hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" "$zbrun" "$@"
}
digest() { grep -o 'weights digest [0-9a-f]*' | awk '{print $3}'; }
"$zbplan" plan --method zb-h1 -p 2 -m 4 --tf 1 --tb 1 --tw 1 -o "$tmp/s.json" >/dev/null || fail "plan"

# 1. Across the two hosts, bit for bit the run in one process.
one=$("$zbrun" "$tmp/s.json" --local --steps 2 --model small --quiet | digest)
two=$(timeout 120 bash -c "$(declare -f across); $(declare -p tmp h0 net zbrun); across '$tmp/s.json' --steps 2 --model small --quiet" 2>&1 | digest)
[ -n "$one" ] && [ "$one" = "$two" ] || fail "two hosts gave digest '$two', one process '$one'"
echo "ok: two hosts, digest $two = one process's"

# 2. The link cut mid-run (after the checkpoint of step 2).
timeout_s=10
(timeout 120 bash -c "$(declare -f across); $(declare -p tmp h0 net zbrun); across '$tmp/s.json' --steps 100000 --model small \
   --timeout $timeout_s --checkpoint '$tmp/ck' --every 2" >"$tmp/cut.log" 2>&1; echo $? >"$tmp/cut.rc") &
runner=$!
for _ in $(seq 1 600); do [ -e "$tmp/ck/step2.rank1.ckpt" ] && break; sleep 0.1; done
[ -e "$tmp/ck/step2.rank1.ckpt" ] || { kill $runner 2>/dev/null; fail "no checkpoint of step 2 within 60 s: $(tail -3 "$tmp/cut.log")"; }
cut_at=$(date +%s.%N)
ip netns exec "$h0" ip link set "v0_$tag" down
wait $runner
took=$(python3 -c "import time; print('%.1f' % (time.time() - $cut_at))")
rc=$(cat "$tmp/cut.rc")
[ "$rc" != 0 ] || fail "the job exited 0 after its link was cut"
[ "$rc" != 124 ] || fail "the job did not end after its link was cut (killed after 120 s)"
python3 -c "import sys; sys.exit(0 if $took <= $timeout_s + 5 else 1)" || fail "the job ended ${took} s after the cut, over --timeout $timeout_s + 5"
grep -q "lost communication with a remote daemon\|$net.2\|rank 1" "$tmp/cut.log" || fail "nothing names the lost host or rank: $(tail -5 "$tmp/cut.log")"
echo "ok: link cut: the job ended ${took} s after the cut (exit $rc), naming the lost host"

# 3. The checkpoints resume across the hosts, link up, to the uninterrupted run's digest.
ip netns exec "$h0" ip link set "v0_$tag" up
whole=$("$zbrun" "$tmp/s.json" --local --steps 4 --model small --quiet | digest)
resumed=$(timeout 120 bash -c "$(declare -f across); $(declare -p tmp h0 net zbrun); across '$tmp/s.json' --steps 4 --model small \
   --checkpoint '$tmp/ck' --every 2 --resume --quiet" 2>&1 | digest)
[ -n "$whole" ] && [ "$whole" = "$resumed" ] || fail "resumed digest '$resumed', uninterrupted '$whole'"
echo "ok: resumed across the hosts to digest $resumed = the uninterrupted run's"
echo PASS
