#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Sensor frames end to end over a veth pair between two namespaces:
# droce on net_af_packet in one, droce-sensor on net_af_packet in the
# other (it finds droce with ARP). Clean frames byte-exact, every fault
# accounted for, then two sensors (two peers, two streams) against two
# worker lcores. The metadata block comes embedded in the frame's last
# data packet (the device's default) and, with faults, in a packet of its
# own.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SENSOR=${SENSOR:?set SENSOR to the droce-sensor binary}
. "$here/lib.sh"
make_link

# sensor NAME SRC_IP QP [options...]: one sensor run in the peer namespace,
# in the background; sensor_report NAME waits for what it sent. The
# sensor's exit is waited for only after droce stopped (sensors_exit):
# closing its af_packet port frees the rings in the kernel, which can wait
# on kernel work that droce's workers, busy-polling every cpu of a 2-cpu
# machine, hold off for minutes (CI: both sensors of the last part, 120 s).
# The bounds below are measured in wall-clock seconds from the sensor's
# start, and a sensor that overstays one is shown with its kernel stack.
# The sensor floats over every cpu (lib.sh's ALL_CPUS).
declare -A SENSOR_PID=() SENSOR_T0=() SENSOR_REPORT_S=()
trap 'for p in "${SENSOR_PID[@]}"; do kill "$p" 2>/dev/null || true; done
	for n in "${!SENSOR_PID[@]}"; do rm -rf "/var/run/dpdk/droce-it-s$TAG-$n"; done
	cleanup' EXIT
sensor() {
	local name=$1 src=$2 qp=$3
	shift 3
	# `ip netns exec` execs the sensor: $! is the sensor's own PID.
	ip netns exec "$NS_P" "$SENSOR" --no-pci --no-huge -m 256 \
		--file-prefix "droce-it-s$TAG-$name" --lcores "0@($ALL_CPUS)" \
		"--vdev=net_af_packet0,iface=$IF_P,$AF_PACKET_RING" -- --src "$src" --dst "$DROCE_IP" \
		--qp "$qp" --rkey 0x5eed --stats-json "$WORK/$name-sensor.json" "$@" \
		>"$WORK/$name-sensor.log" 2>&1 &
	SENSOR_PID[$name]=$!
	SENSOR_T0[$name]=$SECONDS
}

# sensor_where NAME: the sensor's age, state and where in the kernel it waits.
sensor_where() {
	local pid=${SENSOR_PID[$1]}
	echo "--- $1: droce-sensor (PID $pid), $((SECONDS - SENSOR_T0[$1])) s after its start:" \
		"state $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)," \
		"waiting in $(cat "/proc/$pid/wchan" 2>/dev/null)"
	cat "/proc/$pid/stack" 2>/dev/null || true
	cat "$WORK/$1-sensor.log"
}

# sensor_report NAME: its --stats-json is there (written whole, then
# renamed) within 120 s of its start.
sensor_report() {
	local name=$1 alive=1
	while :; do
		# Whether it still runs, asked before the file is looked for: a
		# sensor that wrote it and left is not taken for one that failed.
		kill -0 "${SENSOR_PID[$name]}" 2>/dev/null || alive=0
		if [ -f "$WORK/$name-sensor.json" ]; then
			SENSOR_REPORT_S[$name]=$((SECONDS - SENSOR_T0[$name]))
			grep "should see" "$WORK/$name-sensor.log"
			return 0
		fi
		[ "$alive" = 1 ] || { sensor_where "$name"; fail "$name: droce-sensor ended with no report"; }
		[ $((SECONDS - SENSOR_T0[$name])) -lt 120 ] ||
			{ sensor_where "$name"; fail "$name: droce-sensor gave no report within 120 s"; }
		sleep 0.1
	done
}

# sensors_exit: every sensor started exits 0 within 300 s of its start.
sensors_exit() {
	local rc
	for name in "${!SENSOR_PID[@]}"; do
		while kill -0 "${SENSOR_PID[$name]}" 2>/dev/null; do
			[ $((SECONDS - SENSOR_T0[$name])) -lt 300 ] ||
				{ sensor_where "$name"; fail "$name: droce-sensor did not exit within 300 s"; }
			sleep 0.1
		done
		rc=0
		wait "${SENSOR_PID[$name]}" || rc=$?
		[ "$rc" = 0 ] || { cat "$WORK/$name-sensor.log"; fail "$name: droce-sensor exited with $rc"; }
		echo "$name: droce-sensor reported after ${SENSOR_REPORT_S[$name]} s, exited after $((SECONDS - SENSOR_T0[$name])) s"
		rm -rf "/var/run/dpdk/droce-it-s$TAG-$name"
	done
	SENSOR_PID=()
}

# check NAME SENSOR_NAMES...: droce stopped; its JSON against the sensors'.
check() {
	local name=$1
	shift
	local files=()
	for s in "$@"; do files+=("$WORK/$s-sensor.json"); done
	sed -n '/rx summary/,$p' "$WORK/droce.log"
	/usr/bin/python3 "$here/rx_check.py" "$WORK/$name-droce.json" "${files[@]}" \
		--dump "$WORK/$name-dump" --streams "$#" ||
		fail "$name: droce's counters disagree with the sensors"
}

# one NAME SENSOR-OPTIONS...: droce with one stream, one sensor run.
# The queue and the pages hold all 100 frames of a run: on a busy 2-cpu
# machine the consumer thread can stall longer than a short queue lasts,
# and these tests are about the wire, not about the consumer's speed.
one() {
	local name=$1
	shift
	start_droce rx.0.peer=$PEER_IP rx.0.qp=0x100 rx.0.rkey=0x5eed \
		rx.0.frame.size=200000 rx.0.pages=128 rx.0.queue.size=100 \
		--verify pattern --stats-json "$WORK/$name-droce.json" --dump "$WORK/$name-dump"
	sensor "$name" "$PEER_IP" 0x100 --frame-size 200000 --pages 128 --frames 100 \
		--fps 100 "$@"
	sensor_report "$name"
	stop_droce
	sensors_exit
	check "$name" "$name"
}

echo "== clean frames, one worker"
one clean
echo "== every fault, one worker"
one faults --metadata separate \
	--faults drop=211,duplicate=307,reorder=401,corrupt-icrc=503,wrong-rkey=601,wrong-qp=701,wrong-peer=809,bad-va=907

echo "== two sensors, two streams, two worker lcores"
start_droce_on "--vdev=net_af_packet0,iface=$IF_D,qpairs=4,$AF_PACKET_RING" \
	port.0.device=net_af_packet0 worker.thread.groups=1,1 \
	rx.0.peer=$PEER_IP rx.0.qp=0x200 rx.0.rkey=0x5eed rx.0.frame.size=100000 \
	rx.0.pages=128 rx.0.queue.size=100 \
	rx.1.peer=198.18.0.3 rx.1.qp=0x300 rx.1.rkey=0x5eed rx.1.frame.size=100000 \
	rx.1.pages=128 rx.1.queue.size=100 \
	--verify pattern --stats-json "$WORK/two-droce.json" --dump "$WORK/two-dump"
grep -q "2 worker lcores" "$WORK/droce.log" || fail "not two workers"
sensor a "$PEER_IP" 0x200 --frame-size 100000 --pages 128 --frames 100 --fps 200
sensor b 198.18.0.3 0x300 --frame-size 100000 --pages 128 --frames 100 --fps 200 \
	--faults drop=97
sensor_report a
sensor_report b
stop_droce
sensors_exit
check two a b
python3 - "$WORK/two-droce.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
w = {l["lcore"]: l["rx_packets"] for l in j["lcores"] if l["role"] == "worker"}
print("rx packets per worker lcore:", w)
# af_packet's fanout rollover moves a flow to another queue when its own is
# full: such packets go to the worker that owns the stream, none is lost.
for s in j["rx"]["streams"]:
    print("stream %#x: %d packets handed over from the other worker, %d held back behind a PSN gap"
          % (s["qp"], s["handed_over"], s["held"]))
PY
echo PASS
