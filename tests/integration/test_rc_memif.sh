#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# lib/rc between two processes: droce-rc's stress mode on either side of
# a bad wire (tests/tools/wire_faults, a third process joining two memif
# links). The client sends random SENDs, RDMA WRITEs with immediate and
# RDMA READs of 0..1 MiB in random SGLs; both sides check every byte and
# that each completion came once and in order. Clean first, then with the
# wire dropping, duplicating and reordering 10 % of the client's packets:
# still exactly once and in order, and the counters show the repair work.
#
# RC_STRESS_MESSAGES (default 100000) and RC_STRESS_FAULT_MESSAGES (default
# 5000) set the runs' lengths; the faulty run with 100000 messages of up
# to 1 MiB takes some ten minutes here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DROCE_RC=${DROCE_RC:?set DROCE_RC to the droce-rc binary}
DROCE=$DROCE_RC
. "$here/lib.sh"
. "$here/wire.sh"

CLEAN_N=${RC_STRESS_MESSAGES:-100000}
FAULT_N=${RC_STRESS_FAULT_MESSAGES:-5000}
# The TCP exchange is on loopback; a port of its own for each test run.
TCP_PORT=$((20000 + TAG % 20000))

# stress_run NAME MESSAGES [wire_faults options...]; OWNERS: who runs the
# QPs; INLINE: the workers' rounds on the main lcore, or on their own
OWNERS=control
INLINE=--workers-inline
stress_run() {
	local name=$1 n=$2 rc=0
	shift 2
	wire_start "$name" 880 --seed 7 "$@"
	timeout 900 "$DROCE_RC" --no-pci --no-huge -m 512 --file-prefix "$S_PREFIX" \
		--lcores "0@$CPU_B,1@$CPU_B" --log-level lib.eal:error \
		"--vdev=net_memif0,role=client,socket=$WORK/server.sock" -- \
		stress --server $INLINE --owners "$OWNERS" -p "$TCP_PORT" --timeout 120 \
		port.0.device=net_memif0 port.0.address=198.18.0.1/24 port.0.queues=2 \
		>"$WORK/$name-server.log" 2>&1 &
	SERVER_PID=$!
	timeout 900 "$DROCE_RC" --no-pci --no-huge -m 512 --file-prefix "$C_PREFIX" \
		--lcores "0@$CPU_A,1@$CPU_A" --log-level lib.eal:error \
		"--vdev=net_memif0,role=client,socket=$WORK/client.sock" -- \
		stress --connect 127.0.0.1 $INLINE --owners "$OWNERS" -p "$TCP_PORT" -n "$n" --seed "$TAG" \
		--timeout 120 port.0.device=net_memif0 port.0.address=198.18.0.2/24 \
		port.0.queues=2 >"$WORK/$name-client.log" 2>&1 || rc=$?
	wait "$SERVER_PID" || rc=$((rc == 0 ? 100 : rc))
	SERVER_PID=
	wire_stop
	for side in client server wire; do
		echo "--- $name: $side"
		grep -E "stress:|RC transport|wire_faults: port|droce-rc: " "$WORK/$name-$side.log" || true
	done
	[ "$rc" = 0 ] || { cat "$WORK/$name-client.log" "$WORK/$name-server.log"; fail "$name: exit status $rc (100: the server failed)"; }
	for side in client server; do
		grep -q "stress: $n messages .*byte-exact, every completion once and in order" \
			"$WORK/$name-$side.log" || fail "$name: the $side did not check all $n messages"
		if [ "$OWNERS" = workers ]; then
			grep -q "QP 0x[0-9a-f]* (run by worker 0)" "$WORK/$name-$side.log" ||
				fail "$name: the $side's QP is not run by its worker"
		else
			grep -q "QP 0x[0-9a-f]* (run by the control lcore)" "$WORK/$name-$side.log" ||
				fail "$name: the $side's QP is not run by the control lcore"
		fi
	done
}

# counter LOG NAME: the number after NAME in the RC transport line.
counter() {
	sed -n "s/.*RC transport:.* $2 \([0-9]*\).*/\1/p" "$1" | head -1
}

echo "== clean: $CLEAN_N messages"
stress_run clean "$CLEAN_N"

echo "== faults: $FAULT_N messages, the client's packets 4 % dropped, 3 % duplicated, 3 % reordered"
stress_run faults "$FAULT_N" --drop 0.04 --duplicate 0.03 --reorder 0.03
wire=$(grep "port 0 -> 1" "$WORK/faults-wire.log")
for what in dropped duplicated reordered; do
	v=$(sed -n "s/.* \([0-9]*\) $what.*/\1/p" <<<"$wire")
	[ "${v:-0}" -gt 0 ] || fail "faults: the wire $what nothing ($wire)"
done
retrans=$(counter "$WORK/faults-client.log" retransmits)
naks=$(sed -n 's/.*seq NAKs sent \([0-9]*\).*/\1/p' "$WORK/faults-server.log")
dups=$(counter "$WORK/faults-server.log" duplicates)
[ "${retrans:-0}" -gt 0 ] || fail "faults: the client retransmitted nothing"
[ "${naks:-0}" -gt 0 ] || fail "faults: the server sent no sequence NAK"
[ "${dups:-0}" -gt 0 ] || fail "faults: the server saw no duplicate"
echo "faults repaired: $retrans retransmits, $naks sequence NAKs, $dups duplicates re-ACKed, none executed twice"

echo "== the QPs on workers: $((CLEAN_N / 5)) messages clean, $((FAULT_N / 5)) with the same faults"
OWNERS=workers
stress_run workers-clean "$((CLEAN_N / 5))"
stress_run workers-faults "$((FAULT_N / 5))" --drop 0.04 --duplicate 0.03 --reorder 0.03

# On worker lcores of their own (with the main lcore, four busy threads
# on two cpus here: each round trip waits for time slices, so few).
echo "== the QPs on launched workers: 300 messages clean, 300 with the same faults"
INLINE=
stress_run launched-clean 300
stress_run launched-faults 300 --drop 0.04 --duplicate 0.03 --reorder 0.03
INLINE=--workers-inline
OWNERS=control

echo "== a client asking for more than the server holds is refused, with a reason"
rm -f "$WORK"/*.sock
timeout 60 "$DROCE_RC" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" \
	--lcores "0@$CPU_B,1@$CPU_B" --log-level lib.eal:error \
	"--vdev=net_memif0,role=server,socket=$WORK/direct.sock" -- \
	stress --server --workers-inline -p "$TCP_PORT" -s 4096 --timeout 20 \
	port.0.device=net_memif0 port.0.address=198.18.0.1/24 port.0.queues=2 \
	>"$WORK/refuse-server.log" 2>&1 &
SERVER_PID=$!
rc=0
timeout 60 "$DROCE_RC" --no-pci --no-huge -m 256 --file-prefix "$C_PREFIX" \
	--lcores "0@$CPU_A,1@$CPU_A" --log-level lib.eal:error \
	"--vdev=net_memif0,role=client,socket=$WORK/direct.sock" -- \
	stress --connect 127.0.0.1 --workers-inline -p "$TCP_PORT" -n 10 -s 8192 --timeout 5 \
	port.0.device=net_memif0 port.0.address=198.18.0.2/24 port.0.queues=2 \
	>"$WORK/refuse-client.log" 2>&1 || rc=$?
src=0
wait "$SERVER_PID" || src=$?
SERVER_PID=
# Both fail as programs do (1), neither crashes on the other's leaving.
[ "$rc" = 1 ] && [ "$src" = 1 ] || fail "refusal: client $rc, server $src (both should exit 1)"
grep -q "the client asks for 10 messages of up to 8192 bytes; allowed: 1 or more, of up to 4096 bytes" \
	"$WORK/refuse-server.log" || { cat "$WORK/refuse-server.log"; fail "refusal: no reason given"; }
echo "PASS"
