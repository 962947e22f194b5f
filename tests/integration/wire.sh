# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Two droce-rc processes joined by tests/tools/wire_faults, sourced after
# lib.sh by the tests that need them: the wire is memif's server for both
# links (client.sock and server.sock in $WORK), each droce-rc a memif
# client. The wire outlives both: DPDK 22.11's memif can fault polling
# while the other end of its link goes away.
WIRE_FAULTS=${WIRE_FAULTS:?set WIRE_FAULTS to the wire_faults binary}
W_PREFIX=droce-it-w$TAG
S_PREFIX=droce-it-s$TAG
C_PREFIX=droce-it-c$TAG
WIRE_PID=
SERVER_PID=

wire_finish() {
	stop_pid "$SERVER_PID"
	stop_pid "$WIRE_PID"
	rm -rf "/var/run/dpdk/$W_PREFIX" "/var/run/dpdk/$S_PREFIX" "/var/run/dpdk/$C_PREFIX"
	cleanup
}
trap wire_finish EXIT

# One cpu for each end where there are two: their lcores poll, and with
# --workers-inline each end is one polling thread. The wire sleeps when
# it has nothing and runs wherever it can.
cpus=$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[-1])')
read -r CPU_A CPU_B <<<"$cpus"

# wire_start NAME SECONDS [wire_faults options...]: the wire, its log in
# $WORK/NAME-wire.log, up for at most SECONDS.
wire_start() {
	local name=$1 seconds=$2
	shift 2
	rm -f "$WORK"/*.sock
	timeout $((seconds + 20)) "$WIRE_FAULTS" --no-pci --no-huge -m 256 --file-prefix "$W_PREFIX" \
		--lcores "0@($CPU_A,$CPU_B)" --log-level lib.eal:error \
		"--vdev=net_memif0,role=server,socket=$WORK/client.sock" \
		"--vdev=net_memif1,role=server,socket=$WORK/server.sock" -- \
		--seconds "$seconds" --queues 2 "$@" >"$WORK/$name-wire.log" 2>&1 &
	WIRE_PID=$!
	for _ in $(seq 100); do
		grep -q "wire_faults: running" "$WORK/$name-wire.log" && return 0
		kill -0 "$WIRE_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/$name-wire.log"
	fail "$name: wire_faults did not start"
}

# wire_stop: the wire ended.
wire_stop() {
	stop_pid "$WIRE_PID"
	WIRE_PID=
}
