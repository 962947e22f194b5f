#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# The sensor path kept apart from the control path: droce on net_af_packet
# places a droce-sensor's frames (from 198.18.0.3) while its own hcom4db
# server listens on rpc.port, and the same port takes, from another host
# of the link (cm_probe at 198.18.0.4, a droce stack of its own):
#   1. nothing else: the baseline;
#   2. a flood of CM REQs to the RPC port, each a new connection that
#      never completes (no RTU), as fast as the flooder sends them;
#   3. the same flood to a port nobody listens on (each answered REJ 8);
# and after the floods an hcom4db client (examples/hcom_ping) must still
# get its calls answered. Each time the sensor's frames must all arrive,
# byte-exact, counted as the sensor says (rx_check.py): a flood's packets
# cost a worker one look at the headers and one ring enqueue to the
# control lcore, which does the CM's and the RPC server's work. The lost
# packets of each run are printed side by side.
#
# ISOLATION_FLOOD (REQs a flood, default 3000) and ISOLATION_FRAMES (the
# sensor's frames a run, at 20 a second; default 100) make it longer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SENSOR=${SENSOR:?set SENSOR to the droce-sensor binary}
PING=${HCOM_PING:?set HCOM_PING to examples/hcom_ping}
PROBE=${CM_PROBE:?set CM_PROBE to the cm_probe binary}
. "$here/lib.sh"
make_link

SENSOR_IP=198.18.0.3
FLOOD_IP=198.18.0.4
FLOOD=${ISOLATION_FLOOD:-3000}
FRAMES=${ISOLATION_FRAMES:-100}
RPC_PORT=4000
SENSOR_PID= FLOOD_PID= CLIENT_PID=
trap 'for p in $SENSOR_PID $FLOOD_PID $CLIENT_PID; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "/var/run/dpdk/$PREFIX-s" "/var/run/dpdk/$PREFIX-f" "/var/run/dpdk/$PREFIX-c"
	cleanup' EXIT

# droce as in the mission, TLS off: the flood's REQs reach the server
# before any handshake would.
droce_up() {
	start_droce rx.0.peer=$SENSOR_IP rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size=200000 \
		rx.0.pages=128 rx.0.queue.size=100 rpc.port=$RPC_PORT server.tls.enable=no \
		--verify pattern --stats-json "$WORK/droce-$1.json"
	grep -q "rpc: hcom4db server \"droce\" on $DROCE_IP:$RPC_PORT over RDMA" "$WORK/droce.log" ||
		fail "droce's RPC server did not start"
}

# sensor NAME: FRAMES frames at 20 a second, in the peer's namespace.
sensor() {
	ip netns exec "$NS_P" "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$PREFIX-s" \
		--lcores "0@($ALL_CPUS)" \
		"--vdev=net_af_packet0,iface=$IF_P,$AF_PACKET_RING" -- --src "$SENSOR_IP" \
		--dst "$DROCE_IP" --qp 0x100 --rkey 0x5eed --frame-size 200000 --pages 128 \
		--frames "$FRAMES" --fps 20 --stats-json "$WORK/sensor-$1.json" \
		>"$WORK/sensor-$1.log" 2>&1 &
	SENSOR_PID=$!
}

# flood NAME PORT: cm_probe's REQs to PORT while the sensor runs, bounded
# by FLOOD REQs and the sensor's time.
flood() {
	ip netns exec "$NS_P" "$PROBE" --no-pci --no-huge -m 256 --file-prefix "$PREFIX-f" \
		--lcores "0@($ALL_CPUS),1@($ALL_CPUS)" \
		"--vdev=net_af_packet0,iface=$IF_P,qpairs=2,$AF_PACKET_RING" -- \
		"$DROCE_IP" "$2" "flood:$FLOOD" $((FRAMES / 20 + 2)) \
		port.0.device=net_af_packet0 port.0.address=$FLOOD_IP/24 stats.period=0 \
		worker.inline=yes \
		>"$WORK/flood-$1.log" 2>&1 &
	FLOOD_PID=$!
}

# streamed NAME: wait for the sensor's report and the flood's end.
streamed() {
	local name=$1
	for _ in $(seq 1200); do [ -f "$WORK/sensor-$name.json" ] && break; sleep 0.1; done
	[ -f "$WORK/sensor-$name.json" ] || { cat "$WORK/sensor-$name.log"; fail "$name: droce-sensor gave no report"; }
	if [ -n "$FLOOD_PID" ]; then
		wait "$FLOOD_PID" || { cat "$WORK/flood-$name.log"; fail "$name: cm_probe failed"; }
		FLOOD_PID=
		grep '^cm_probe: flood' "$WORK/flood-$name.log" | sed "s/^/  /"
	fi
}

# finish NAME: stop droce, the sensor's exit, droce's counters checked.
finish() {
	local name=$1
	# What droce logged meanwhile, most frequent first (digits folded).
	grep -E '^droce\.(cm|rpc|rc)' "$WORK/droce.log" | sed 's/[0-9][0-9.x]*/N/g' | sort |
		uniq -c | sort -rn | head -4 | sed "s/^/  droce's log: /" || true
	stop_droce
	# The sensor's exit waits for kernel work on its af_packet rings
	# (test_mission.sh says more): bounded at 120 s.
	for _ in $(seq 1200); do kill -0 "$SENSOR_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$SENSOR_PID" 2>/dev/null && fail "$name: droce-sensor did not exit within 120 s"
	wait "$SENSOR_PID" || { cat "$WORK/sensor-$name.log"; fail "$name: droce-sensor failed"; }
	SENSOR_PID=
	/usr/bin/python3 "$here/rx_check.py" "$WORK/droce-$name.json" "$WORK/sensor-$name.json" \
		--streams 1 >"$WORK/check-$name.log" ||
		{ cat "$WORK/check-$name.log"; fail "$name: droce's counters disagree with the sensor's"; }
}

# client SECONDS: hcom_ping from 198.18.0.5 (a droce stack of its own),
# 64-byte calls to droce's echo service; every call must come back right.
client() {
	peer_hcom c 198.18.0.5 "$PING" "$DROCE_IP" $RPC_PORT "$1" 64 >"$WORK/client.log" 2>&1 &
	CLIENT_PID=$!
	wait $CLIENT_PID || { cat "$WORK/client.log"; fail "hcom_ping failed"; }
	CLIENT_PID=
	grep 'calls of' "$WORK/client.log" | sed 's/^/  /'
	grep -q ' 0 failed, 0 wrong' "$WORK/client.log" || fail "the client's calls"
}

echo "== 1: the sensor alone"
droce_up alone
sensor alone
streamed alone
client 3
finish alone

echo "== 2: the sensor, and $FLOOD REQs to the RPC port (never completed)"
droce_up rpc-flood
sensor rpc-flood
flood rpc-flood $RPC_PORT
streamed rpc-flood
client 3
# Each REQ made a session of some 400 KiB: unbounded, they ran droce out
# of memory and the client above was refused (RPC_OPENING_MAX).
if grep -q "no memory for" "$WORK/droce.log"; then
	grep "no memory for" "$WORK/droce.log" | head -3
	fail "droce ran out of memory under the flood"
fi
finish rpc-flood
json "$WORK/droce-rpc-flood.json" \
	'"  droce'"'"'s RPC server: %d sessions opened (the client'"'"'s), %d waiting for a HELLO ended for newer ones" % (j["rpc"]["sessions_opened"], j["rpc"]["openings_dropped"])'
[ "$(json "$WORK/droce-rpc-flood.json" 'j["rpc"]["openings_dropped"]')" -gt 0 ] ||
	fail "the flood ended no waiting session: did it reach the server?"

echo "== 3: the sensor, and $FLOOD REQs to a port nobody listens on"
droce_up rej-flood
sensor rej-flood
flood rej-flood 4999
streamed rej-flood
finish rej-flood

echo
echo "== the sensor's packets lost, without and with the floods"
for name in alone rpc-flood rej-flood; do
	json "$WORK/droce-$name.json" \
		'"  %-10s %d frames, %d packets lost, %d frames dropped" % ("'$name'", sum(s["frames"] for s in j["rx"]["streams"]), sum(s["lost_packets"] for s in j["rx"]["streams"]), sum(s["frames_dropped"] for s in j["rx"]["streams"]))'
done
echo PASS
