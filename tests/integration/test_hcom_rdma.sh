#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hcom4db over droce's RoCE (server.create.type=RDMA) between two
# processes, each starting its own droce stack from DROCE_HCOM_CONF and
# DROCE_HCOM_EAL on net_af_packet, in network namespaces of the test's
# own joined by a veth pair:
#   - hcom_stress with a segment size of 64 KiB: calls of random sizes up
#     to 64 KiB (a frame in several SENDs), then up to 4 MiB (those over
#     the segment size by rendezvous: the server READs them), from 4
#     threads, every byte checked;
#   - 10^5 calls up to 64 KiB with one polling thread a side
#     (worker.inline), each on a cpu of its own;
#   - calls up to 4 MiB from a client that started the EAL itself;
#   - the same from a run-to-completion client: its one thread polls the
#     droce stack it lent to the library, and makes every call;
#   - 10^4 calls up to 64 KiB with TLS on both sides, inline (certificates
#     from tests/tools/make_test_pki.sh), then calls up to 4 MiB (sealed
#     rendezvous);
#   - the same through a bad wire (both sides inline)
#     (tests/tools/wire_faults between two veth pairs): calls up to
#     64 KiB with 10 % of the frames each way dropped, 10 % duplicated,
#     10 % reordered; up to 256 KiB (rendezvous) with 10 % dropped and 10 %
#     reordered;
#   - TLS through a wire that flips one byte of a SEND, or of a READ
#     response (a sealed rendezvous buffer), and fixes its ICRC: RC takes
#     it, TLS or the unsealing does not; the session breaks, its calls
#     fail, no answer is wrong;
#   - one-sided WRITEs and READs (hcom_stress's rounds) through a wire
#     that looks for their plaintext: seen without TLS, never with it;
#     and with TLS through a wire that flips a byte of a WRITE, the
#     client's (a WRITE's) or the server's (a READ's sealed bytes): the
#     unsealing side refuses it, the session breaks, nothing is wrong;
#   - the example server and client (openGauss's usage);
#   - kill -9 of each side mid-run: the other hears within the bound.
# Not net_memif: DPDK 22.11's memif unmaps a link's rings from its
# interrupt thread while the lcores may be polling them, so a process
# whose memif peer exits or is killed can fault; a veth outlives its ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stress=${HCOM_STRESS:?path of hcom_stress}
stepped=${HCOM_STRESS_STEPPED_BIN:?path of hcom_stress_stepped}
server_bin=${HCOM_SERVER:?path of hcom_server}
client_bin=${HCOM_CLIENT:?path of hcom_client}
wire_faults=${WIRE_FAULTS:?path of wire_faults}
calls=${HCOM_RDMA_CALLS:-5000}
inline_calls=${HCOM_RDMA_INLINE_CALLS:-100000}
tls_calls=${HCOM_RDMA_TLS_CALLS:-10000}
big_calls=${HCOM_RDMA_BIG_CALLS:-300}
fault_calls=${HCOM_RDMA_FAULT_CALLS:-300}
fault_rndv_calls=${HCOM_RDMA_FAULT_RNDV_CALLS:-100}
one_sided_rounds=${HCOM_RDMA_ONE_SIDED_ROUNDS:-400}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a network namespace"; exit 77; }
work=$(mktemp -d /tmp/droce-hcom-rdma.XXXXXX)
# A namespace for each side and one for the wire: af_packet's fanout
# group ids (pid ^ ifindex) must not meet within a namespace.
ns_server=droce-hcr$$-s ns_client=droce-hcr$$-c ns_wire=droce-hcr$$-w
# Whatever this started and is still running goes with it (jobs: this
# shell's own children, never a PID another process may have reused).
cleanup() {
	kill -9 $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	for ns in "$ns_server" "$ns_client" "$ns_wire"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$work" /var/run/dpdk/hcr-"$$"-*
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -n 20 "$work"/*.out 2>/dev/null || true; exit 1; }
export HCOM_STRESS_TYPE=RDMA

for ns in "$ns_server" "$ns_client" "$ns_wire"; do
	ip netns add "$ns"
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done
# veth NS_A A NS_B B: a pair, A in NS_A and B in NS_B, both ends up.
veth() {
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3"
	ip -n "$1" link set "$2" up
	ip -n "$3" link set "$4" up
}
veth "$ns_server" srv "$ns_client" cli

# A droce configuration for each side: the server 198.18.0.1, the client
# 198.18.0.2; two queues. Busy polling: af_packet has no RX interrupts.
side_conf() {  # name address [more lines for the top of the file]
	cat >"$work/$1.conf" <<CONF
${3:-}
[port.0]
device = net_af_packet0
address = $2/24
queues = 2
[worker]
thread.groups = 1
poll.enable = yes
CONF
}
side_conf server 198.18.0.1
side_conf client 198.18.0.2
# One polling thread a side (worker.inline), each on a cpu of its own:
# what a machine with fewer cpus than pollers should run.
cpu_last=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
cpus_list=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
side_conf server-inline 198.18.0.1 "worker.inline = yes
control.cpu = 0"
side_conf client-inline 198.18.0.2 "worker.inline = yes
control.cpu = $cpu_last"
n=0
# as_side SIDE IFACE OUT COMMAND...: COMMAND as side SIDE (server|client)
# on interface IFACE, its output in OUT; its PID in $last.
as_side() {
	local side=$1 iface=$2 out=$3 ns=$ns_server
	shift 3
	[ "${side%-inline}" = server ] || ns=$ns_client
	n=$((n + 1))
	ip netns exec "$ns" env DROCE_HCOM_CONF="$work/$side.conf" \
		DROCE_HCOM_EAL="--no-pci --no-huge -m 256 --file-prefix hcr-$$-$n --vdev=net_af_packet0,iface=$iface,qpairs=2,framecnt=4096" \
		"$@" >"$work/$out" 2>&1 &
	last=$!
}
wait_line() {  # file pattern seconds
	for _ in $(seq $(($3 * 20))); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}

# ---- calls of every size, every byte checked -------------------------------------------
as_side server srv stress_server.out "$stress" server 198.18.0.1 4000 65536
server=$last
wait_line "$work/stress_server.out" '^listening on' 20 || fail "the stress server did not listen"
as_side client cli stress_client.out "$stress" client 198.18.0.1 4000 65536 "$calls" 4 65536 $RANDOM
wait $last || fail "hcom_stress client, up to 64 KiB"
grep 'calls from' "$work/stress_client.out"
as_side client cli stress_big.out "$stress" client 198.18.0.1 4000 65536 "$big_calls" 4 4194304 $RANDOM
wait $last || fail "hcom_stress client, up to 4 MiB"
grep 'calls from' "$work/stress_big.out"
grep -q ' right ([1-9][0-9]* by rendezvous)' "$work/stress_big.out" || fail "no call went by rendezvous"
kill -TERM $server
wait $server || fail "the stress server's end"

# ---- 10^5 such calls, one polling thread a side -----------------------------------------
as_side server-inline srv inline_server.out "$stress" server 198.18.0.1 4000 65536
server=$last
wait_line "$work/inline_server.out" '^listening on' 20 || fail "the inline server did not listen"
grep -q 'the control lcore polls for the 1 workers' "$work/inline_server.out" ||
	fail "the server's workers were launched"
as_side client-inline cli inline_client.out "$stress" client 198.18.0.1 4000 65536 "$inline_calls" 4 65536 $RANDOM
wait $last || fail "hcom_stress client, worker.inline"
echo "worker.inline: $(grep 'calls from' "$work/inline_client.out")"
# ---- a client that started the EAL itself ----------------------------------------------
# An application that runs DPDK (hcom_stress with HCOM_STRESS_APP_EAL):
# the library takes none of its lcores but registers a thread of its own
# in that EAL, which polls the workers too (worker.inline, although the
# client's configuration does not say so). Calls up to 4 MiB, some by
# rendezvous.
as_side client cli app_eal_client.out env -u DROCE_HCOM_EAL \
	HCOM_STRESS_APP_EAL="--no-pci --no-huge -m 256 --file-prefix hcr-$$-app --lcores=0@($cpus_list) --vdev=net_af_packet0,iface=cli,qpairs=2,framecnt=4096" \
	"$stress" client 198.18.0.1 4000 65536 "$big_calls" 4 4194304 $RANDOM
wait $last || fail "hcom_stress client in its own EAL"
grep -q "the application started the EAL: the library's stack runs on lcore [0-9]*, which polls the 1 workers" \
	"$work/app_eal_client.out" || fail "the library did not join the application's EAL"
echo "the application's EAL: $(grep 'calls from' "$work/app_eal_client.out")"
# A run-to-completion application (hcom_stress_stepped): its stack is its
# own, lent to the library, and no thread but the one that calls polls it.
as_side client-inline cli stepped_client.out env -u DROCE_HCOM_EAL \
	HCOM_STRESS_APP_EAL="--no-pci --no-huge -m 256 --file-prefix hcr-$$-stepped --lcores=0@$cpu_last --vdev=net_af_packet0,iface=cli,qpairs=2,framecnt=4096" \
	"$stepped" client 198.18.0.1 4000 65536 "$big_calls" 1 4194304 $RANDOM
wait $last || fail "hcom_stress_stepped client"
grep -q "the application polls its own stack" "$work/stepped_client.out" ||
	fail "the stepped client did not run its own stack"
echo "run to completion: $(grep 'calls from' "$work/stepped_client.out")"
kill -TERM $server
wait $server || fail "the inline server's end"

# ---- TLS, one polling thread a side -------------------------------------------------------
mkdir "$work/pki"
"$here/../tools/make_test_pki.sh" "$work/pki"
as_side server-inline srv tls_server.out env HCOM_STRESS_TLS="$work/pki" \
	"$stress" server 198.18.0.1 4000 65536
server=$last
wait_line "$work/tls_server.out" '^listening on' 20 || fail "the TLS server did not listen"
as_side client-inline cli tls_client.out env HCOM_STRESS_TLS="$work/pki" \
	"$stress" client 198.18.0.1 4000 65536 "$tls_calls" 4 65536 $RANDOM
wait $last || fail "hcom_stress client, TLS"
echo "TLS: $(grep 'calls from' "$work/tls_client.out")"
# Up to 4 MiB: those over the segment by rendezvous, sealed.
as_side client-inline cli tls_big.out env HCOM_STRESS_TLS="$work/pki" \
	"$stress" client 198.18.0.1 4000 65536 "$big_calls" 4 4194304 $RANDOM
wait $last || fail "hcom_stress client, TLS up to 4 MiB"
echo "TLS: $(grep 'calls from' "$work/tls_big.out")"
grep -q ' right ([1-9][0-9]* by rendezvous)' "$work/tls_big.out" || fail "no TLS call went by rendezvous"
kill -TERM $server
wait $server || fail "the TLS server's end"

# ---- through a bad wire ---------------------------------------------------------------
# wire_faults joins two more veth pairs: server (wsrv) <-> wire (ws),
# wire (wc) <-> client (wcli). Both sides run worker.inline: with the
# wire, three pollers share the cpus, not five.
# bad_wire NAME CALLS MAX_BYTES [wire_faults options...]
veth "$ns_server" wsrv "$ns_wire" ws
veth "$ns_wire" wc "$ns_client" wcli
# The wire's lcore floats over every cpu: pinned to the cpu where both
# sides' control lcores poll, its thousands of short sleeps a second
# starved that cpu's kernel workers here (a workqueue lockup of 40 s and
# more, which stalled every process exit behind it).
bad_wire() {
	local name=$1 calls=$2 max=$3 wire
	shift 3
	n=$((n + 1))
	ip netns exec "$ns_wire" "$wire_faults" --no-pci --no-huge -m 256 --file-prefix "hcr-$$-$n" \
		--lcores "0@($cpus_list)" --log-level lib.eal:error \
		"--vdev=net_af_packet0,iface=ws,qpairs=2,framecnt=4096" \
		"--vdev=net_af_packet1,iface=wc,qpairs=2,framecnt=4096" -- \
		--seconds 200 --queues 2 --both --seed $RANDOM "$@" >"$work/$name-wire.out" 2>&1 &
	wire=$!
	wait_line "$work/$name-wire.out" 'wire_faults: running' 20 || fail "wire_faults did not start"
	as_side server-inline wsrv "$name-server.out" "$stress" server 198.18.0.1 4000 65536
	server=$last
	wait_line "$work/$name-server.out" '^listening on' 20 || fail "$name: the stress server did not listen"
	as_side client-inline wcli "$name-client.out" "$stress" client 198.18.0.1 4000 65536 "$calls" 4 "$max" $RANDOM
	wait $last || fail "$name: hcom_stress client through the bad wire"
	grep 'calls from' "$work/$name-client.out"
	kill -TERM $server
	wait $server || fail "$name: the stress server's end"
	kill -TERM $wire
	wait $wire || true
	grep 'wire_faults: port' "$work/$name-wire.out"
}
# HCOM_RDMA_BAD_WIRE=0 leaves them out.
if [ "${HCOM_RDMA_BAD_WIRE:-1}" = 1 ]; then
# Calls up to the segment: 10 % of the frames dropped, 10 % duplicated,
# 10 % reordered, each way.
bad_wire faults "$fault_calls" 65536 --drop 0.1 --duplicate 0.1 --reorder 0.1
# Rendezvous up to 256 KiB (four READ pieces): 10 % dropped and 10 %
# reordered. A session's READs go one at a time and hardly a 64-packet
# piece comes through whole, so with 1 MiB calls on a busy machine a call
# waited past hcom_stress's 30 s timeout; its region was then gone when
# the server's READ came, and that breaks the connection (RC: remote
# access error). Not duplicated: a stale duplicate READ request does that
# too, as on rxe.
bad_wire rndv-faults "$fault_rndv_calls" 262144 --drop 0.1 --reorder 0.1

# tampered NAME MAX_BYTES WHERE WHY [wire_faults options]: TLS through a
# wire that flips one byte of one packet (and makes its ICRC again): RC
# takes it, TLS does not. Some calls fail, none is wrong, and WHERE's log
# (client or server) says WHY.
tampered() {
	local name=$1 max=$2 where=$3 why=$4 wire
	shift 4
	n=$((n + 1))
	ip netns exec "$ns_wire" "$wire_faults" --no-pci --no-huge -m 256 --file-prefix "hcr-$$-$n" \
		--lcores "0@($cpus_list)" --log-level lib.eal:error \
		"--vdev=net_af_packet0,iface=ws,qpairs=2,framecnt=4096" \
		"--vdev=net_af_packet1,iface=wc,qpairs=2,framecnt=4096" -- \
		--seconds 200 --queues 2 "$@" >"$work/$name-wire.out" 2>&1 &
	wire=$!
	wait_line "$work/$name-wire.out" 'wire_faults: running' 20 || fail "wire_faults did not start"
	as_side server-inline wsrv "$name-server.out" env HCOM_STRESS_TLS="$work/pki" \
		"$stress" server 198.18.0.1 4000 65536
	server=$last
	wait_line "$work/$name-server.out" '^listening on' 20 || fail "$name: the stress server did not listen"
	as_side client-inline wcli "$name-client.out" env HCOM_STRESS_TLS="$work/pki" \
		"$stress" client 198.18.0.1 4000 65536 400 4 "$max" $RANDOM
	wait $last && fail "$name: every call succeeded through a tampered packet"
	kill -TERM $server
	wait $server || fail "$name: the stress server's end"
	kill -TERM $wire
	wait $wire || true
	grep 'calls from' "$work/$name-client.out"
	grep -h ' 1 tampered with' "$work/$name-wire.out" || fail "$name: the wire flipped nothing"
	grep -q ' [1-9][0-9]* failed, 0 wrong;' "$work/$name-client.out" ||
		fail "$name: not 'some failed, none wrong'"
	grep -q "$why" "$work/$name-$where.out" || fail "$name: the $where did not say why"
}
# The 50th SEND from the server: the client's TLS refuses the record. (A
# SEND carries the answers to what a session read at once: with 4 calls in
# flight, 400 calls take 100 SENDs or more.)
tampered tamper-send 4096 client 'TLS: .*bad record mac; the session ends' --tamper 50
# The 20th READ response (sealed rendezvous buffers, client to server):
# the server's unsealing refuses the buffer.
tampered tamper-read 1048576 server 'failed its tag' --both --tamper-read 20
else
	echo "bad wire runs: off (HCOM_RDMA_BAD_WIRE=0)"
fi

# one_sided NAME TLS(yes|no) WANT(right|broken) [wire_faults options]:
# hcom_stress's one-sided rounds alone, up to 1 MiB, through wire_faults
# looking for their plaintext. right: every round right; broken: some
# failed, none wrong.
one_sided() {
	local name=$1 tls=$2 want=$3 wire rc=0 side_env=(HCOM_STRESS_ONE_SIDED="$one_sided_rounds")
	shift 3
	[ "$tls" = no ] || side_env+=(HCOM_STRESS_TLS="$work/pki")
	n=$((n + 1))
	ip netns exec "$ns_wire" "$wire_faults" --no-pci --no-huge -m 256 --file-prefix "hcr-$$-$n" \
		--lcores "0@($cpus_list)" --log-level lib.eal:error \
		"--vdev=net_af_packet0,iface=ws,qpairs=2,framecnt=4096" \
		"--vdev=net_af_packet1,iface=wc,qpairs=2,framecnt=4096" -- \
		--seconds 200 --queues 2 --look-for droce-plaintext! "$@" >"$work/$name-wire.out" 2>&1 &
	wire=$!
	wait_line "$work/$name-wire.out" 'wire_faults: running' 20 || fail "wire_faults did not start"
	as_side server-inline wsrv "$name-server.out" env "${side_env[@]}" "$stress" server 198.18.0.1 4000 65536
	server=$last
	wait_line "$work/$name-server.out" '^listening on' 20 || fail "$name: the stress server did not listen"
	as_side client-inline wcli "$name-client.out" env "${side_env[@]}" \
		"$stress" client 198.18.0.1 4000 65536 0 4 1048576 $RANDOM
	wait $last || rc=$?
	kill -TERM $server
	wait $server || fail "$name: the stress server's end"
	kill -TERM $wire
	wait $wire || true
	echo "$name: $(grep 'one-sided rounds' "$work/$name-client.out" || echo 'no rounds line')"
	grep -h 'seen in' "$work/$name-wire.out"
	if [ "$want" = right ]; then
		[ $rc = 0 ] || fail "$name: hcom_stress's one-sided rounds"
	else
		[ $rc != 0 ] || fail "$name: every round succeeded through a tampered packet"
		grep -h ' 1 tampered with' "$work/$name-wire.out" || fail "$name: the wire flipped nothing"
		grep -q ' [1-9][0-9]* failed, 0 wrong;' "$work/$name-client.out" ||
			fail "$name: not 'some failed, none wrong'"
	fi
}
# The wire sees the rounds' plaintext without TLS (the look works)...
one_sided one-sided-plain no right
grep -q '" seen in [1-9][0-9]* frames' "$work/one-sided-plain-wire.out" ||
	fail "one-sided-plain: the wire did not see the plaintext"
# ...and never with TLS: WRITEs carry sealed bytes, READs are the
# server's sealed WRITEs back.
one_sided one-sided-tls yes right
grep -q '" seen in 0 frames' "$work/one-sided-tls-wire.out" ||
	fail "one-sided-tls: plaintext on the wire"
# A byte of the client's 40th WRITE packet (port 1's frames, --back):
# the server's unsealing refuses it.
one_sided one-sided-tamper-write yes broken --back --tamper-write 40
grep -q 'one-sided WRITE.*failed their tag' "$work/one-sided-tamper-write-server.out" ||
	fail "one-sided-tamper-write: the server did not say why"
# A byte of the server's 40th WRITE packet (a READ's sealed bytes): the
# client's unsealing refuses it.
one_sided one-sided-tamper-read yes broken --tamper-write 40
grep -q 'one-sided READ.*failed its tag' "$work/one-sided-tamper-read-client.out" ||
	fail "one-sided-tamper-read: the client did not say why"

# ---- the examples ----------------------------------------------------------------------
as_side server srv ex_server.out "$server_bin" 198.18.0.1 4100 2 no RDMA
server=$last
wait_line "$work/ex_server.out" '^listening on' 20 || fail "the example server did not listen"
as_side client cli ex_client.out "$client_bin" 198.18.0.1 4100 2000 4096 RDMA
wait $last || fail "the example client"
cat "$work/ex_client.out" | grep -v '^EAL\|^TELEMETRY'
wait_line "$work/ex_server.out" ' went: .* 0 bad$' 5 || fail "the example client did not go cleanly"
kill -TERM $server
wait $server || fail "the example server's end"

# ---- kill -9 mid-run, each side --------------------------------------------------------
# The server dies: the client's calls fail and its break handler runs
# within the heartbeat's bound (2 s with idle 1) or RC's retries.
as_side server srv k_server.out "$server_bin" 198.18.0.1 4200 2 no RDMA
server=$last
wait_line "$work/k_server.out" '^listening on' 20 || fail "the server did not listen"
as_side client cli k_client.out timeout 60 "$client_bin" 198.18.0.1 4200 100000000 65536 RDMA
client=$last
wait_line "$work/k_server.out" '^client came' 20 || fail "the client did not come"
sleep 0.5
kill -9 $server
t0=$(date +%s%N)
rc=0; wait $client || rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
echo "server killed: the client ended (status $rc) after $took ms"
[ $rc != 0 ] && [ $rc != 124 ] || fail "the client did not fail"
grep -q 'the session with the server broke' "$work/k_client.out" || fail "no break handler"
[ $took -lt 5000 ] || fail "the client heard after $took ms"

# The client dies: the server's break handler runs for it.
as_side server srv k2_server.out "$server_bin" 198.18.0.1 4300 2 no RDMA
server=$last
wait_line "$work/k2_server.out" '^listening on' 20 || fail "the server did not listen"
as_side client cli k2_client.out "$client_bin" 198.18.0.1 4300 100000000 65536 RDMA
client=$last
wait_line "$work/k2_server.out" '^client came' 20 || fail "the client did not come"
sleep 0.5
kill -9 $client
wait $client || true
t0=$(date +%s%N)
wait_line "$work/k2_server.out" '^client 1 went' 5 || fail "the server did not hear of the client's death"
took=$((($(date +%s%N) - t0) / 1000000))
echo "client killed: the server heard after $took ms"
kill -TERM $server
wait $server || fail "the server's end"
echo PASS
