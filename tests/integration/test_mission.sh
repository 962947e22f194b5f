#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Both of droce's jobs on one port at once: droce on net_af_packet (a
# veth into the peer namespace) places a droce-sensor's frames (from
# 198.18.0.3) while its own hcom4db server (rpc.port, TLS on, heartbeat
# 1 s) answers an hcom4db client, examples/hcom_ping (198.18.0.4, its own
# droce stack on the same veth), over RDMA:
#   - a client for a fixed time: every call right, and droce's counters
#     (stats JSON "rpc") show its session, calls, TLS handshake and
#     heartbeats;
#   - a second client killed with SIGKILL while the sensor streams: droce's
#     break handler runs within 2 heartbeats (2 s) and a margin, and the
#     sensor's frames all arrive, byte-exact, counted as the sensor says;
#   - the port's pcapng capture holds both jobs' RoCEv2 packets, as
#     tshark reads them: the sensor's WRITEs, the RPC sessions' RC SENDs
#     and ACKs, and their CM MADs on QP 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SENSOR=${SENSOR:?set SENSOR to the droce-sensor binary}
PING=${HCOM_PING:?set HCOM_PING to examples/hcom_ping}
. "$here/lib.sh"
make_link

SENSOR_IP=198.18.0.3
CLIENT_IP=198.18.0.4
CLIENT_PID= SENSOR_PID=
# The sensor's and the client's pollers float over every cpu (lib.sh's
# ALL_CPUS): pinned, a workqueue lockup stalled the killed client's exit.
trap 'for p in $CLIENT_PID $SENSOR_PID; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "/var/run/dpdk/$PREFIX-c1" "/var/run/dpdk/$PREFIX-c2" "/var/run/dpdk/$PREFIX-s"
	cleanup' EXIT

mkdir "$WORK/pki"
"$here/../tools/make_test_pki.sh" "$WORK/pki" >/dev/null
echo client-pass >"$WORK/pki/client.pass"
echo server-pass >"$WORK/pki/server.pass"

# client NAME SECONDS: hcom_ping in the peer namespace, in the background.
client() {
	peer_hcom "$1" $CLIENT_IP "$PING" "$DROCE_IP" 4000 "$2" 64 "$WORK/pki" >"$WORK/$1.log" 2>&1 &
	CLIENT_PID=$!
}

start_droce rx.0.peer=$SENSOR_IP rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size=200000 \
	rx.0.pages=128 rx.0.queue.size=100 rpc.port=4000 \
	rpc.tls.cert="$WORK/pki/server.pem" rpc.tls.key="$WORK/pki/server.key" \
	rpc.tls.keypass="$WORK/pki/server.pass" rpc.tls.ca="$WORK/pki/ca.pem" \
	rpc.tls.crl="$WORK/pki/crl.pem" port.0.capture="$WORK/roce.pcapng" \
	--verify pattern --stats-json "$WORK/droce.json"
grep -q 'rpc: hcom4db server "droce" on 198.18.0.1:4000 over RDMA, TLS on' "$WORK/droce.log" ||
	fail "droce's RPC server did not start"

echo "== an hcom4db client with TLS, 5 s"
client c1 5
wait $CLIENT_PID || { cat "$WORK/c1.log"; fail "hcom_ping failed"; }
CLIENT_PID=
grep 'calls of' "$WORK/c1.log"
grep -q ' 0 failed, 0 wrong, TLS on' "$WORK/c1.log" || fail "the client's calls"
# rte_telemetry's /droce/rpc while droce runs.
tel=$(printf '/droce/rpc\n' | dpdk-telemetry.py -f "$PREFIX" 2>/dev/null | tail -1)
echo "/droce/rpc: $tel"
python3 -c 'import json,sys; r = json.loads(sys.argv[1])["/droce/rpc"]
assert r["sessions_opened"] == 1 and r["calls_served"] > 0 and r["tls_handshakes"] == 1' "$tel" ||
	fail "/droce/rpc: $tel"

echo "== the sensor streams; a second client is killed mid-run"
ip netns exec "$NS_P" "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$PREFIX-s" \
	--lcores "0@($ALL_CPUS)" \
	"--vdev=net_af_packet0,iface=$IF_P,$AF_PACKET_RING" -- --src "$SENSOR_IP" \
	--dst "$DROCE_IP" --qp 0x100 --rkey 0x5eed --frame-size 200000 --pages 128 \
	--frames 100 --fps 20 --stats-json "$WORK/sensor.json" >"$WORK/sensor.log" 2>&1 &
SENSOR_PID=$!
client c2 60
for _ in $(seq 300); do grep -q 'calls/s$' "$WORK/c2.log" && break; sleep 0.1; done
grep -q 'calls/s$' "$WORK/c2.log" || { cat "$WORK/c2.log"; fail "the second client made no calls"; }
# Timed from the kill: the client's exit may take long in the kernel
# (its af_packet rings), droce's verdict must not.
t0=$(date +%s%N)
kill -9 $CLIENT_PID
for _ in $(seq 100); do
	grep -q "client 2's session ended" "$WORK/droce.log" && break
	sleep 0.05
done
took=$((($(date +%s%N) - t0) / 1000000))
grep -q "client 2's session ended" "$WORK/droce.log" || fail "no break handler within 5 s"
echo "client killed: droce's break handler ran after $took ms (bound: 2 heartbeats of 1 s, 3000 ms)"
[ $took -lt 3000 ] || fail "the break handler took $took ms"
for _ in $(seq 1200); do [ -f "$WORK/sensor.json" ] && break; sleep 0.1; done
[ -f "$WORK/sensor.json" ] || { cat "$WORK/sensor.log"; fail "droce-sensor gave no report"; }
stop_droce
# The sensor's and the killed client's exits only now: closing their
# af_packet rings waits on kernel work that droce's busy pollers can hold
# off for minutes (test_rx_af_packet.sh says more). Bounded at 120 s.
for pid in $SENSOR_PID $CLIENT_PID; do
	for _ in $(seq 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "process $pid did not exit within 120 s"
done
wait $SENSOR_PID || { cat "$WORK/sensor.log"; fail "droce-sensor failed"; }
wait $CLIENT_PID 2>/dev/null || true
SENSOR_PID= CLIENT_PID=
echo "droce's RPC log:"
grep -E '^droce(\.rpc|: rpc)' "$WORK/droce.log" || true
sed -n '/rx summary/,$p' "$WORK/droce.log"
/usr/bin/python3 "$here/rx_check.py" "$WORK/droce.json" "$WORK/sensor.json" --streams 1 ||
	fail "droce's counters disagree with the sensor's"
# tshark's view of the capture: each job's packets there.
tcount() { tshark -r "$WORK/roce.pcapng" -Y "$1" 2>/dev/null | wc -l; }
writes=$(tcount 'infiniband.bth.opcode == 0x2b || infiniband.bth.opcode == 0x2a')
sends=$(tcount 'infiniband.bth.opcode >= 0 && infiniband.bth.opcode <= 5')
acks=$(tcount 'infiniband.bth.opcode == 17')
cm=$(tcount 'infiniband.bth.destqp == 1 && infiniband.mad.mgmtclass == 0x07')
echo "capture (tshark): $writes sensor WRITEs, $sends RC SENDs, $acks RC ACKs, $cm CM MADs"
[ "$writes" -gt 0 ] && [ "$sends" -gt 0 ] && [ "$acks" -gt 0 ] && [ "$cm" -ge 6 ] ||
	fail "the capture lacks a job's packets"
if python3 - "$WORK/droce.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["rpc"]
print("droce's rpc counters:", r)
assert r["sessions_opened"] == 2 and r["sessions_ended"] == 2, "two sessions, both ended"
assert r["calls_served"] > 100, "calls served"
assert r["tls_handshakes"] == 2 and r["tls_failures"] == 0, "two TLS handshakes"
# The first client's BYE can lose the race with its DREQ on a loaded
# machine (its session then broke too): at least the killed one.
assert 1 <= r["err_broken"] <= 2, "the killed client's session broke"
assert r["err_decrypt"] == 0 and r["err_protocol"] == 0
PY
then :; else fail "droce's rpc counters"; fi

echo
echo "== both jobs on one port, side by side"
python3 - "$WORK/droce.json" "$WORK/droce.log" "$WORK/c1.log" "$took" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
ping = re.search(r"hcom_ping: (\d+) calls of \d+ bytes in ([\d.]+) s: (\d+) calls/s, "
                 r"p50 ([\d.]+) us, p99 ([\d.]+) us, (\d+) failed, (\d+) wrong, TLS (\w+)",
                 open(sys.argv[3]).read())
row = re.search(r"^  rx\.0/0 +0x100 +(\d+) +([\d.]+) +([\d.]+) +(\d+) +(\d+) +(\d+)", log, re.M)
r = j["rpc"]
print("  sensor (droce-sensor -> droce, rx.0): %s frames, %s fps, %s Gbps, %s packets lost, "
      "%s frames dropped" % (row.group(1), row.group(2), row.group(3), row.group(4), row.group(6)))
print("  RPC (hcom_ping -> droce's echo, 5 s): %s calls, %s calls/s, p50 %s us, p99 %s us, "
      "%d errors, TLS %s" % (ping.group(1), ping.group(3), ping.group(4), ping.group(5),
                            int(ping.group(6)) + int(ping.group(7)), ping.group(8)))
print("  RPC on droce's side: %d sessions, %d calls served, %d heartbeats sent (%d answered), "
      "%d TLS handshakes" % (r["sessions_opened"], r["calls_served"], r["heartbeats_sent"],
                              r["heartbeats_answered"], r["tls_handshakes"]))
print("  a client killed mid-stream: droce's break handler after %s ms (bound 3000 ms); "
      "the stream meanwhile: %s packets lost" % (sys.argv[4], row.group(4)))
PY
echo PASS
