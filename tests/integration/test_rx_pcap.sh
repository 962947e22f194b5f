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
# replay NAME FRAME_SIZE PAGES FRAMES FAULTS
replay() {
	local name=$1 size=$2 pages=$3 frames=$4 faults=$5 rc=0
	local dir=$WORK/$name

	mkdir -p "$dir"
	rm -rf "/var/run/dpdk/$S_PREFIX"
	timeout 120 "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
		"--vdev=net_pcap0,tx_pcap=$dir/sensor.pcap" -- \
		--src 198.18.0.2 --dst 198.18.0.1 --dst-mac 02:70:63:61:70:00 \
		--qp 0x100 --rkey 0x5eed --frame-size "$size" --pages "$pages" \
		--frames "$frames" --faults "$faults" \
		--stats-json "$dir/sensor.json" >"$dir/sensor.log" 2>&1 ||
		{ cat "$dir/sensor.log"; fail "$name: droce-sensor failed"; }
	grep "should see" "$dir/sensor.log"
	timeout 120 "$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
		"--vdev=net_pcap0,rx_pcap=$dir/sensor.pcap,tx_pcap=$dir/tx0.pcap,tx_pcap=$dir/tx1.pcap" -- \
		port.0.device=net_pcap0 port.0.address=198.18.0.1/24 stats.period=0 \
		rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size="$size" \
		rx.0.pages="$pages" rx.0.queue.size=256 \
		--exit-on-idle 500 --verify-pattern --stats-json "$dir/droce.json" \
		--dump "$dir/dump" >"$dir/droce.log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { cat "$dir/droce.log"; fail "$name: droce exited with $rc"; }
	grep -q "no packet for 500 ms; stopping" "$dir/droce.log" ||
		fail "$name: droce did not stop at the end of the file"
	sed -n '/rx summary/,$p' "$dir/droce.log"
	/usr/bin/python3 "$here/rx_check.py" "$dir/droce.json" "$dir/sensor.json" \
		--dump "$dir/dump" || fail "$name: droce's counters disagree with the sensor"
}

replay faults 65536 256 200 drop=151,duplicate=233,wrong-rkey=307
# Every other packet lost, the last one too: what follows nothing is
# invisible, and the sensor's expectations must say so.
replay heavy 5000 64 50 drop=2,duplicate=7,reorder=11,corrupt-icrc=13,bad-va=17
# --frames: droce stops by itself once the streams received that many,
# long before the file ends, whatever the consumer took (queue of 1).
rc=0
timeout 60 "$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
	"--vdev=net_pcap0,rx_pcap=$WORK/faults/sensor.pcap,tx_pcap=$WORK/tx0.pcap,tx_pcap=$WORK/tx1.pcap" -- \
	port.0.device=net_pcap0 port.0.address=198.18.0.1/24 stats.period=0 \
	rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size=65536 \
	rx.0.pages=256 rx.0.queue.size=1 --frames 50 \
	--stats-json "$WORK/frames.json" >"$WORK/frames.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/frames.log"; fail "--frames: droce exited with $rc"; }
grep "frames received; stopping" "$WORK/frames.log" || fail "--frames 50: droce did not stop by itself"
python3 - "$WORK/frames.json" <<'PY' || fail "--frames 50: wrong count"
import json, sys
s = json.load(open(sys.argv[1]))["rx"]["streams"][0]
assert 50 <= s["frames"] < 200, s["frames"]
print("--frames 50: stopped after", s["frames"], "of 200 frames")
PY
echo PASS
