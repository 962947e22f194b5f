#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# The main job: set up (packages, build), then run droce end to end.
#
# Part 1, sensor frames into GPU memory: droce-sensor sends Holoscan
# Sensor Bridge frames (RoCEv2 RDMA WRITEs, 1 MiB each, with their
# metadata blocks) to droce over net_memif, two processes joined by a unix
# socket. droce places them in GPU memory (a CUDA GPU when one is there,
# else the host gpudev driver), checks every byte of every frame and prints
# a summary table; the same again with faults on the wire, which droce's
# counters must account for exactly.
#
# Part 2, the network stack: a veth pair between two network namespaces
# that this script creates and removes, droce on net_af_packet at
# 198.18.0.1, the Linux kernel at 198.18.0.2 resolving it with ARP,
# pinging it and getting UDP datagrams echoed. Run as root.
#
# Part 3, both jobs on one port (tests/integration/test_mission.sh):
# droce on net_af_packet places a droce-sensor's frames while its own
# hcom4db server, TLS on, answers an hcom4db client (examples/hcom_ping)
# on the same port; then a client is killed mid-stream and droce's break
# handler runs within two heartbeats while the stream goes on. A table
# shows both sides.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/usertools/droce-deps.sh"
"$top/usertools/droce-build.sh" build >/dev/null
echo "droce-demo: built $top/build/app/droce/droce and droce-sensor"

DROCE=$top/build/app/droce/droce
# The namespaces, veth pair and droce start/stop are the integration tests' own.
. "$top/tests/integration/lib.sh"
SENSOR=$top/build/app/droce-sensor/droce-sensor
S_PREFIX=droce-demo-s$$
# The frames droce dumps stay here for a person to look at.
OUT=${DROCE_DEMO_OUT:-$top/build/demo}
rm -rf "$OUT/clean-frames" "$OUT/faults-frames"
mkdir -p "$OUT"
trap 'rm -rf "/var/run/dpdk/$S_PREFIX"; cleanup' EXIT

# sensor_run NAME FRAMES FPS [sensor options]: droce and droce-sensor over memif.
sensor_run() {
	local name=$1 frames=$2 fps=$3 rc=0
	shift 3
	rm -f "$WORK/memif.sock"
	: >"$WORK/droce.log"   # now: the background job's redirection may come late
	"$DROCE" --no-pci --no-huge -m 1024 --file-prefix "$PREFIX" -l 0,1 \
		"--vdev=net_memif0,role=server,socket=$WORK/memif.sock" -- \
		port.0.device=net_memif0 port.0.address=198.18.0.1/24 stats.period=1 \
		rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed \
		rx.0.frame.size=1048576 rx.0.pages=32 rx.0.queue.size=16 \
		--exit-on-idle 1500 --verify pattern --stats-json "$WORK/$name-droce.json" \
		--dump "$OUT/$name-frames" --dump-frames 4 >"$WORK/droce.log" 2>&1 &
	DROCE_PID=$!
	for _ in $(seq 300); do
		grep -q "droce: running" "$WORK/droce.log" && break
		kill -0 "$DROCE_PID" 2>/dev/null || fail "droce exited during start"
		sleep 0.1
	done
	grep -E "GPU memory from|rx.0 stream" "$WORK/droce.log" | sed 's/^/  /'
	"$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
		"--vdev=net_memif0,role=client,socket=$WORK/memif.sock" -- \
		--src 198.18.0.2 --dst 198.18.0.1 --qp 0x100 --rkey 0x5eed \
		--frame-size 1048576 --pages 32 --frames "$frames" --fps "$fps" "$@" \
		--linger 30 --stats-json "$WORK/$name-sensor.json" 2>&1 | grep '^droce-sensor' | sed 's/^/  /'
	wait "$DROCE_PID" || rc=$?
	DROCE_PID=
	[ "$rc" = 0 ] || fail "droce exited with $rc"
	sed -n '/rx summary/,$p' "$WORK/droce.log" | sed 's/^/  /'
	/usr/bin/python3 "$top/tests/integration/rx_check.py" "$WORK/$name-droce.json" \
		"$WORK/$name-sensor.json" --dump "$OUT/$name-frames" >"$WORK/$name-check.txt" ||
		{ cat "$WORK/$name-check.txt"; fail "droce's counters disagree with the sensor"; }
	tail -1 "$WORK/$name-check.txt" | sed 's/^/  /'
}

echo
echo "droce-demo part 1: sensor frames into GPU memory over net_memif"
echo "- 300 clean frames of 1 MiB at 100 fps"
sensor_run clean 300 100
echo "- 300 frames with faults: drop, duplicate, reorder, bad ICRC, wrong rkey/QP/peer, VA out of range"
sensor_run faults 300 100 \
	--faults drop=1009,duplicate=1201,reorder=1409,corrupt-icrc=1601,wrong-rkey=1801,wrong-qp=2003,wrong-peer=2203,bad-va=2411
echo "  the first frames' bytes (.bin) and info (.json), as droce dumped them: $OUT/clean-frames/"

echo
echo "droce-demo part 2: the stack against the Linux kernel on a veth pair"
make_link
start_droce udp.echo.port=7 stats.period=2 --stats-json "$WORK/stats.json"
echo "droce-demo: droce runs in namespace $NS_D on $IF_D, MAC $(droce_mac)"

ping_out=$(peer ping -c 100 -i 0.01 -W 1 "$DROCE_IP" 2>&1) || true
neigh=$(peer ip neigh show "$DROCE_IP" dev "$IF_P" | sed 's/ *$//')
udp_echo() {
	peer python3 - "$DROCE_IP" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
ok = 0
for i in range(20):
    data = os.urandom(16 + 64 * i)
    s.sendto(data, (sys.argv[1], 7))
    try:
        got, _ = s.recvfrom(4096)
        ok += got == data
    except socket.timeout:
        pass
print("%d/20" % ok)
PY
}
udp_out=$(udp_echo 2>&1) || true
tel=$(printf '/droce/stats,0\n' | dpdk-telemetry.py -f "$PREFIX" 2>/dev/null | tail -1)
stop_droce

received=$(echo "$ping_out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
rtt=$(echo "$ping_out" | sed -n 's/^rtt [^=]*= [0-9.]*\/\([0-9.]*\)\/.*/\1/p')
tel_rx=$(echo "$tel" | python3 -c 'import json,sys; print(json.load(sys.stdin)["/droce/stats"]["rx_packets"])' 2>/dev/null || echo "?")
mac=$(droce_mac)
rx=$(json "$WORK/stats.json" 'j["ports"][0]["rx_packets"]' 2>/dev/null || echo "?")
tx=$(json "$WORK/stats.json" 'j["ports"][0]["tx_packets"]' 2>/dev/null || echo "?")
drops=$(json "$WORK/stats.json" 'j["ports"][0]["drops"]' 2>/dev/null || echo "?")

positive() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
whole() { [[ $1 =~ ^[0-9]+$ ]]; }
counts_ok() { positive "$rx" && positive "$tx"; }
# The kernel resolved droce: the entry has droce's MAC and a usable state
# (not FAILED or INCOMPLETE).
neigh_ok() {
	[ -n "$mac" ] && [[ $neigh =~ lladdr\ $mac\ (.*\ )?(REACHABLE|STALE|DELAY)$ ]]
}
failed=()
# row LABEL VALUE CHECK...: a summary row, marked when CHECK fails.
row() {
	local label=$1 value=$2
	shift 2
	if "$@"; then
		printf '  %-34s %s\n' "$label" "$value"
	else
		printf '  %-34s %s   <- FAILED\n' "$label" "$value"
		failed+=("$label")
	fi
}
echo
echo "droce-demo part 2 summary"
row "kernel ping, replies / sent" "${received:-0} / 100 (avg rtt ${rtt:-?} ms)" \
	[ "${received:-0}" = 100 ]
row "kernel neighbour entry for droce" "${neigh:-none} (droce's MAC ${mac:-?})" neigh_ok
row "UDP echo (RFC 862), datagrams back" "$udp_out" [ "$udp_out" = 20/20 ]
row "droce rx / tx packets (JSON)" "$rx / $tx" counts_ok
row "droce drops (JSON)" "$drops" whole "$drops"
row "rx_packets via rte_telemetry" "$tel_rx" positive "$tel_rx"
[ ${#failed[@]} -eq 0 ] || fail "part 2: ${#failed[@]} row(s) marked FAILED above"

echo
echo "droce-demo part 3: both jobs on one port, a sensor stream and TLS RPC sessions"
# Its own namespaces and veth (removed on its exit); its log shown from
# the table on, or whole if it fails.
DROCE=$DROCE SENSOR=$SENSOR HCOM_PING=$top/build/examples/hcom_ping \
	bash "$top/tests/integration/test_mission.sh" >"$WORK/mission.log" 2>&1 ||
	{ grep -v '^EAL' "$WORK/mission.log"; fail "part 3"; }
grep -E '^(== |hcom_ping: [0-9]+ calls of|client killed)' "$WORK/mission.log" | sed 's/^/  /'
sed -n '/^== both jobs/,$p' "$WORK/mission.log" | grep -v '^== both jobs\|^PASS' | sed 's/^/  /'
echo "droce-demo: OK (namespaces and veth removed on exit)"
