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
# replay NAME FRAME_SIZE PAGES FRAMES FAULTS [sensor options] [-- droce keys]
replay() {
	local name=$1 size=$2 pages=$3 frames=$4 faults=$5 rc=0
	local dir=$WORK/$name
	local sopts=() dkeys=()
	shift 5
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	dkeys=("$@")

	mkdir -p "$dir"
	rm -rf "/var/run/dpdk/$S_PREFIX"
	timeout 120 "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
		"--vdev=net_pcap0,tx_pcap=$dir/sensor.pcap" -- \
		--src 198.18.0.2 --dst 198.18.0.1 --dst-mac 02:70:63:61:70:00 \
		--qp 0x100 --rkey 0x5eed --frame-size "$size" --pages "$pages" \
		--frames "$frames" ${faults:+--faults "$faults"} "${sopts[@]}" \
		--stats-json "$dir/sensor.json" >"$dir/sensor.log" 2>&1 ||
		{ cat "$dir/sensor.log"; fail "$name: droce-sensor failed"; }
	grep "should see" "$dir/sensor.log"
	replay_file "$name" "$dir/sensor.pcap" "$size" "$pages" "${dkeys[@]}"
	/usr/bin/python3 "$here/rx_check.py" "$dir/droce.json" "$dir/sensor.json" \
		--dump "$dir/dump" || fail "$name: droce's counters disagree with the sensor"
}

# replay_file NAME PCAP FRAME_SIZE PAGES [droce keys]: droce plays the file
# to its end and stops by itself.
replay_file() {
	local name=$1 pcap=$2 size=$3 pages=$4 rc=0
	local dir=$WORK/$name
	shift 4
	mkdir -p "$dir"
	timeout 120 "$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
		"--vdev=net_pcap0,rx_pcap=$pcap,tx_pcap=$dir/tx0.pcap,tx_pcap=$dir/tx1.pcap" -- \
		port.0.device=net_pcap0 port.0.address=198.18.0.1/24 stats.period=0 \
		rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size="$size" \
		rx.0.pages="$pages" rx.0.queue.size=256 "$@" \
		--exit-on-idle 500 --verify pattern --stats-json "$dir/droce.json" \
		--dump "$dir/dump" >"$dir/droce.log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { cat "$dir/droce.log"; fail "$name: droce exited with $rc"; }
	grep -q "no packet for 500 ms; stopping" "$dir/droce.log" ||
		fail "$name: droce did not stop at the end of the file"
	sed -n '/rx summary/,$p' "$dir/droce.log"
}

replay faults 65536 256 200 drop=151,duplicate=233,wrong-rkey=307 --metadata separate
# Every other packet lost, the last one too: what follows nothing is
# invisible, and the sensor's expectations must say so.
replay heavy 5000 64 50 drop=2,duplicate=7,reorder=11,corrupt-icrc=13,bad-va=17

# A recorded sensor that was programmed with a page base and a MAC of its
# own: droce replays it with rx.0.va and port.0.mac set to them, and every
# frame lands byte-exact with its metadata. Without them, nothing lands.
SENSOR_MAC=02:18:00:00:00:07
BASE=0x100000000
rm -rf "/var/run/dpdk/$S_PREFIX"
mkdir -p "$WORK/programmed"
timeout 120 "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
	"--vdev=net_pcap0,tx_pcap=$WORK/programmed/sensor.pcap" -- \
	--src 198.18.0.2 --dst 198.18.0.1 --dst-mac "$SENSOR_MAC" --page-base "$BASE" \
	--qp 0x100 --rkey 0x5eed --frame-size 100000 --pages 64 --frames 40 \
	--stats-json "$WORK/programmed/sensor.json" >"$WORK/programmed/sensor.log" 2>&1 ||
	{ cat "$WORK/programmed/sensor.log"; fail "programmed: droce-sensor failed"; }
replay_file programmed "$WORK/programmed/sensor.pcap" 100000 64 \
	port.0.mac=$SENSOR_MAC rx.0.va=$BASE
grep -q "MAC $SENSOR_MAC" "$WORK/programmed/droce.log" ||
	fail "programmed: droce did not take port.0.mac $SENSOR_MAC"
/usr/bin/python3 "$here/rx_check.py" "$WORK/programmed/droce.json" \
	"$WORK/programmed/sensor.json" --dump "$WORK/programmed/dump" ||
	fail "programmed: droce's counters disagree with the sensor"
replay_file no-mac "$WORK/programmed/sensor.pcap" 100000 64 rx.0.va=$BASE
json "$WORK/no-mac/droce.json" 'j["rx"]["streams"][0]["frames"]' | grep -qx 0 ||
	fail "no-mac: frames for another MAC were taken"
replay_file no-va "$WORK/programmed/sensor.pcap" 100000 64 port.0.mac=$SENSOR_MAC
json "$WORK/no-va/droce.json" 'j["rx"]["streams"][0]["frames"]' | grep -qx 0 ||
	fail "no-va: frames for another base address were taken"
json "$WORK/no-va/droce.json" 'j["rx"]["streams"][0]["refused"]["bad_va"]' | grep -qvx 0 ||
	fail "no-va: the packets were not refused as bad_va"
echo "programmed sensor: byte-exact with port.0.mac and rx.0.va; nothing without either"

# --frames: droce stops by itself once the streams received that many,
# long before the file ends, whatever the consumer took (queue of 1).
# Without a reorder window: with one, the packets held behind the file's
# gaps (a drop every 151 packets keeps up to 4096 of them, ~85 frames)
# are finished at the stop, and the count runs to the file's end.
rc=0
timeout 60 "$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
	"--vdev=net_pcap0,rx_pcap=$WORK/faults/sensor.pcap,tx_pcap=$WORK/tx0.pcap,tx_pcap=$WORK/tx1.pcap" -- \
	port.0.device=net_pcap0 port.0.address=198.18.0.1/24 stats.period=0 \
	rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed rx.0.frame.size=65536 \
	rx.0.pages=256 rx.0.queue.size=1 rx.0.reorder.window=0 --frames 50 \
	--stats-json "$WORK/frames.json" >"$WORK/frames.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/frames.log"; fail "--frames: droce exited with $rc"; }
grep "frames received; stopping" "$WORK/frames.log" || fail "--frames 50: droce did not stop by itself"
# Issue 16: the CRC kernel in use is named at start.
grep -q "^droce: ICRC with [a-z0-9-]* (SIMD bitwidth [0-9]*)" "$WORK/frames.log" ||
	fail "droce did not say which CRC implementation runs"
python3 - "$WORK/frames.json" <<'PY' || fail "--frames 50: wrong count"
import json, sys
s = json.load(open(sys.argv[1]))["rx"]["streams"][0]
assert 50 <= s["frames"] < 200, s["frames"]
print("--frames 50: stopped after", s["frames"], "of 200 frames")
PY
echo PASS
