#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# lib/cm between two droce-rc processes, each on a memif link to
# tests/tools/wire_faults, which joins the two (with no faults here):
#   1. CM_CYCLES (default 1000) rping connections one after another, each
#      made, used (one ping, read, written back, checked) and disconnected;
#   2. 100 ucmatose connections at once, 10 messages each way on each;
#   3. a listener that rejects, with private data the client reports;
#   4. a peer that never answers (a droce-rc without a CM: its stack
#      answers ARP, nothing answers QP1): UNREACHABLE after the retries.
# After each run both sides count what is left: CM ids, QPs and mbufs out
# of the pool must be what they were before it. (wire.sh says why the
# wire is there.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DROCE_RC=${DROCE_RC:?set DROCE_RC to the droce-rc binary}
DROCE=$DROCE_RC
. "$here/lib.sh"
. "$here/wire.sh"

CYCLES=${CM_CYCLES:-1000}
TCP_PORT=$((20000 + TAG % 20000))

# side NAME SIDE CPU ADDRESS ARGS...: one droce-rc on its link to the wire
# (it execs: call it in a subshell or in the background).
side() {
	local name=$1 which=$2 cpu=$3 addr=$4 prefix
	shift 4
	prefix=$([ "$which" = server ] && echo "$S_PREFIX" || echo "$C_PREFIX")
	# exec: in the background, $! is then timeout's own PID, which passes
	# a TERM on to droce-rc.
	exec timeout 600 "$DROCE_RC" --no-pci --no-huge -m 256 --file-prefix "$prefix" \
		--lcores "0@$cpu,1@$cpu" --log-level lib.eal:error \
		"--vdev=net_memif0,role=client,socket=$WORK/$which.sock" -- "$@" --workers-inline \
		port.0.device=net_memif0 "port.0.address=$addr/24" port.0.queues=2 \
		>"$WORK/$name.log" 2>&1
}

# server_ready NAME WORDS: the server's log says WORDS (it listens).
server_ready() {
	for _ in $(seq 200); do
		grep -q "$2" "$WORK/$1-server.log" 2>/dev/null && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$WORK/$1-server.log"
	fail "$1: the server did not start"
}

# run NAME "SERVER ARGS" "CLIENT ARGS": both sides; sets SRC, CRC.
run() {
	local name=$1
	wire_start "$name" 580
	# shellcheck disable=SC2086
	side "$name-server" server "$CPU_B" 198.18.0.1 $2 &
	SERVER_PID=$!
	server_ready "$name" "listening on port"
	CRC=0
	# shellcheck disable=SC2086
	(side "$name-client" client "$CPU_A" 198.18.0.2 $3) || CRC=$?
	SRC=0
	wait "$SERVER_PID" || SRC=$?
	SERVER_PID=
	wire_stop
	for s in server client; do
		echo "--- $name: $s"
		grep -E "droce-rc: (rping|ucmatose|left|CM)" "$WORK/$name-$s.log" || true
	done
}

# nothing_left NAME SIDE: the run's ids, QPs and mbufs all back.
nothing_left() {
	local log="$WORK/$1-$2.log" line out before
	line=$(grep "droce-rc: left after the run:" "$log") || fail "$1: the $2 did not count what is left"
	grep -q ": 0 CM ids, 0 half-open, 0 QPs, 0 CQs, 0 MRs;" <<<"$line" ||
		fail "$1: the $2 left objects behind: $line"
	out=$(sed -n 's/.* \([0-9]*\) mbufs out of the pool (\([0-9]*\) before).*/\1/p' <<<"$line")
	before=$(sed -n 's/.* mbufs out of the pool (\([0-9]*\) before).*/\1/p' <<<"$line")
	[ "$out" = "$before" ] || fail "$1: the $2 has $out mbufs out of the pool, $before before"
}

echo "== $CYCLES rping connections one after another"
run cycles "rping --server --cycles $CYCLES --timeout 20" \
	"rping --connect 198.18.0.1 --cycles $CYCLES -n 1 --timeout 20"
[ "$CRC" = 0 ] && [ "$SRC" = 0 ] || { cat "$WORK/cycles-client.log" "$WORK/cycles-server.log"; fail "cycles: client $CRC, server $SRC"; }
for s in server client; do
	grep -q "rping: $CYCLES connections, each made, used and disconnected" "$WORK/cycles-$s.log" ||
		fail "cycles: the $s did not make $CYCLES connections"
	nothing_left cycles $s
done

echo "== 100 ucmatose connections at once"
run many "ucmatose --server --connections 100 --timeout 20" \
	"ucmatose --connect 198.18.0.1 --connections 100 --timeout 20"
[ "$CRC" = 0 ] && [ "$SRC" = 0 ] || { cat "$WORK/many-client.log" "$WORK/many-server.log"; fail "many: client $CRC, server $SRC"; }
for s in server client; do
	grep -q "ucmatose: 1 x 100 connections at once, each 10 messages of 100 bytes sent and received" \
		"$WORK/many-$s.log" || fail "many: the $s did not carry 100 connections at once"
	nothing_left many $s
done

echo "== a listener that rejects, with private data"
run reject "ucmatose --server --reject droce-says-no --timeout 20" \
	"ucmatose --connect 198.18.0.1 --timeout 20"
[ "$SRC" = 0 ] && [ "$CRC" = 1 ] || { cat "$WORK/reject-client.log" "$WORK/reject-server.log"; fail "reject: client $CRC (1 wanted), server $SRC"; }
grep -q 'rejected by the peer: reason 28 (consumer defined), private data "droce-says-no"' \
	"$WORK/reject-client.log" || { cat "$WORK/reject-client.log"; fail "reject: the client did not report the REJ and its words"; }
nothing_left reject server
nothing_left reject client

echo "== a peer that never answers the REQ: UNREACHABLE after 3 tries"
wire_start silent 580
side silent-server server "$CPU_B" 198.18.0.1 stress --server -p "$TCP_PORT" --timeout 30 &
SERVER_PID=$!
server_ready silent "droce.net: port 0"
CRC=0
t0=$(date +%s%N)
(side silent-client client "$CPU_A" 198.18.0.2 \
	rping --connect 198.18.0.1 --cm-retries 2 --cm-timeout 14 --timeout 20) || CRC=$?
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
stop_pid "$SERVER_PID"
SERVER_PID=
wire_stop
grep -E "droce-rc: (rping|left|CM)" "$WORK/silent-client.log" || true
[ "$CRC" = 1 ] || { cat "$WORK/silent-client.log"; fail "silent: client exit $CRC (1 wanted)"; }
grep -q "UNREACHABLE: the peer's CM did not answer the REQ, sent 3 times" "$WORK/silent-client.log" ||
	{ cat "$WORK/silent-client.log"; fail "silent: no UNREACHABLE"; }
grep -q "droce-rc: CM: 0 requests taken, 0 established, 1 unreachable" "$WORK/silent-client.log" ||
	fail "silent: the client's CM did not count one unreachable"
nothing_left silent client
echo "silent peer: UNREACHABLE after ${elapsed_ms} ms in all (3 tries of 2 x 256 + 64 ms)"
echo "PASS"
