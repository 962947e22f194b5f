#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# A recorded sensor: droce-sensor writes its frames (with faults) to a
# pcap file through net_pcap; droce replays the file with net_pcap,
# processes all of it, and exits by itself when it ends (--exit-on-idle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SENSOR=${SENSOR:?set SENSOR to the droce-sensor binary}
. "$here/lib.sh"
S_PREFIX=droce-it-s$TAG
trap 'rm -rf "/var/run/dpdk/$S_PREFIX"; cleanup' EXIT

# net_pcap's MAC for port 0 is 02:70:63:61:70:00 ("pcap" and the index).
timeout 120 "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
	"--vdev=net_pcap0,tx_pcap=$WORK/sensor.pcap" -- \
	--src 198.18.0.2 --dst 198.18.0.1 --dst-mac 02:70:63:61:70:00 \
	--qp 0x100 --rkey 0x5eed --frame-size 65536 --pages 256 --frames 200 \
	--faults drop=151,duplicate=233,wrong-rkey=307 \
	--stats-json "$WORK/sensor.json" >"$WORK/sensor.log" 2>&1 ||
	{ cat "$WORK/sensor.log"; fail "droce-sensor failed"; }
grep "should see" "$WORK/sensor.log"

rc=0
timeout 120 "$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
	"--vdev=net_pcap0,rx_pcap=$WORK/sensor.pcap,tx_pcap=$WORK/tx0.pcap,tx_pcap=$WORK/tx1.pcap" -- \
	port.0.device=net_pcap0 port.0.address=198.18.0.1/24 stats.period=0 \
	rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size=65536 \
	rx.0.pages=256 rx.0.queue.size=256 \
	--exit-on-idle 500 --verify-pattern --stats-json "$WORK/droce.json" \
	--dump "$WORK/dump" >"$WORK/droce.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "droce exited with $rc"
grep -q "no packet for 500 ms; stopping" "$WORK/droce.log" || fail "droce did not stop at the end of the file"
sed -n '/rx summary/,$p' "$WORK/droce.log"
/usr/bin/python3 "$here/rx_check.py" "$WORK/droce.json" "$WORK/sensor.json" \
	--dump "$WORK/dump" || fail "droce's counters disagree with the sensor"
echo PASS
