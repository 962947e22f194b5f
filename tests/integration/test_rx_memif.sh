#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Sensor frames end to end over net_memif (two processes, a unix socket,
# no network): droce-sensor sends HSB frames, droce places them in host
# GPU-driver memory. Clean runs must be byte-exact (CRC, pattern, dumped
# bytes); with every fault injected the counters and frame flags must say
# exactly what happened; two streams on one port each get their frames.
# The metadata block comes in both of the device's layouts: embedded in
# the frame's last data packet (its default) and in a packet of its own.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SENSOR=${SENSOR:?set SENSOR to the droce-sensor binary}
. "$here/lib.sh"

SOCK=$WORK/memif.sock
S_PREFIX=droce-it-s$TAG
trap 'rm -rf "/var/run/dpdk/$S_PREFIX"; cleanup' EXIT

# run_pair NAME "droce options and keys..." "sensor options..." [rx_check options...]
# The consumer shares two cpus with three pollers here, and CI machines
# are busy: the queues hold a quarter of a second of frames or more (none
# may be dropped), the pages more than that (none may be overwritten).
run_pair() {
	local name=$1 dkeys=$2 sopts=$3 rc=0
	shift 3
	rm -f "$SOCK"
	: >"$WORK/droce.log"   # now: the background job's redirection may come late
	# shellcheck disable=SC2086
	"$DROCE" --no-pci --no-huge -m 512 --file-prefix "$PREFIX" -l 0,1 \
		"--vdev=net_memif0,role=server,socket=$SOCK" -- \
		port.0.device=net_memif0 port.0.address=198.18.0.1/24 stats.period=0 \
		rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed \
		$dkeys --exit-on-idle 1500 \
		--stats-json "$WORK/$name-droce.json" --dump "$WORK/$name-dump" --dump-frames 6 \
		>"$WORK/droce.log" 2>&1 &
	DROCE_PID=$!
	for _ in $(seq 300); do
		grep -q "droce: running" "$WORK/droce.log" && break
		kill -0 "$DROCE_PID" 2>/dev/null || fail "droce exited during start"
		sleep 0.1
	done
	# shellcheck disable=SC2086
	timeout 120 "$SENSOR" --no-pci --no-huge -m 256 --file-prefix "$S_PREFIX" -l 0 \
		"--vdev=net_memif0,role=client,socket=$SOCK" -- \
		--src 198.18.0.2 --dst 198.18.0.1 --qp 0x100 --rkey 0x5eed \
		$sopts --linger 30 --stats-json "$WORK/$name-sensor.json" >"$WORK/sensor.log" 2>&1 ||
		{ cat "$WORK/sensor.log"; fail "$name: droce-sensor failed"; }
	# A run that ended as it should does not read like a fault.
	if grep -E "went down|error|failed" "$WORK/sensor.log"; then
		fail "$name: droce-sensor's log of a normal run reads like a fault"
	fi
	for _ in $(seq 300); do kill -0 "$DROCE_PID" 2>/dev/null || break; sleep 0.1; done
	wait "$DROCE_PID" || rc=$?
	DROCE_PID=
	[ "$rc" = 0 ] || fail "$name: droce exited with $rc"
	grep "should see" "$WORK/sensor.log"
	sed -n '/rx summary/,$p' "$WORK/droce.log"
	# Columns that say their unit, and a line that says why frames were
	# not checked (a bare 'dropped' beside the sensor's 'drop' misled).
	grep -Eq "lost-pkt +lossy +q-dropped +bad-pkt +checked +no-crc +mismatch" "$WORK/droce.log" ||
		fail "$name: the summary's columns do not say their unit"
	grep -Eq -- "--verify [a-z]+: .* (taken checked|none checked)" "$WORK/droce.log" ||
		fail "$name: the summary does not say how many frames were checked and why not the rest"
	/usr/bin/python3 "$here/rx_check.py" "$WORK/$name-droce.json" \
		"$WORK/$name-sensor.json" --dump "$WORK/$name-dump" "$@" ||
		fail "$name: droce's counters disagree with the sensor"
}

echo "== clean: 200 frames of 1 MB at 100 fps, the block embedded (the device's default)"
run_pair clean "rx.0.frame.size=1000000 rx.0.pages=48 rx.0.queue.size=32 --verify pattern" \
	"--frame-size 1000000 --pages 48 --frames 200 --fps 100"

echo "== clean, the block in a packet of its own, checked against its CRC"
run_pair clean-separate "rx.0.frame.size=1000000 rx.0.pages=48 rx.0.queue.size=32 --verify crc" \
	"--frame-size 1000000 --pages 48 --frames 200 --fps 100 --metadata separate" \
	--verify crc

echo "== the device's CRC is optional: a block with CRC 0 is no_crc, not a mismatch"
run_pair crc0 "rx.0.frame.size=100000 rx.0.pages=32 rx.0.queue.size=32 --verify crc" \
	"--frame-size 100000 --pages 32 --frames 100 --fps 200 --frame-crc off" \
	--verify crc0
grep -q "0 did not match.* 100 with CRC 0" "$WORK/droce.log" ||
	fail "crc0: the summary does not say that 100 frames had CRC 0"

FAULTS="drop=101,duplicate=203,reorder=307,corrupt-icrc=401,wrong-rkey=503,wrong-qp=601,wrong-peer=701,bad-va=809"
echo "== every fault, each on its own schedule, the block embedded"
run_pair faults "rx.0.frame.size=100000 rx.0.pages=128 rx.0.queue.size=96 --verify pattern" \
	"--frame-size 100000 --pages 128 --frames 400 --fps 400 --faults $FAULTS"

echo "== every fault, the block in a packet of its own"
run_pair faults-separate "rx.0.frame.size=100000 rx.0.pages=128 rx.0.queue.size=96 --verify pattern" \
	"--frame-size 100000 --pages 128 --frames 400 --fps 400 --faults $FAULTS --metadata separate"

echo "== every fault, a receiver without a reorder window (a swap is a loss)"
run_pair faults-strict "rx.0.frame.size=100000 rx.0.pages=128 rx.0.queue.size=96 rx.0.reorder.window=0 --verify pattern" \
	"--frame-size 100000 --pages 128 --frames 400 --fps 400 --faults $FAULTS --strict-receiver"

echo "== HSB-Lite immediates (8-bit page), the 24-bit PSN wraps"
run_pair lite "rx.0.frame.size=30000 rx.0.immediate=hsb-lite rx.0.pages=64 rx.0.queue.size=48 --verify pattern" \
	"--frame-size 30000 --pages 64 --frames 100 --fps 500 --immediate hsb-lite --first-psn 0xfffff0 --metadata separate" \
	--immediate hsb-lite

echo "== the 20-bit PSN of the current IP wraps"
run_pair wrap "rx.0.frame.size=30000 rx.0.pages=64 rx.0.queue.size=48 --verify pattern" \
	"--frame-size 30000 --pages 64 --frames 100 --fps 500 --first-psn 0xffff0"

echo "== two streams on one port, each to its own buffer"
run_pair two "rx.0.frame.size=50000 rx.0.pages=64 rx.0.queue.size=48 rx.0.count=2 --verify pattern" \
	"--frame-size 50000 --pages 64 --frames 200 --fps 200 --streams 2 --faults drop=300" \
	--streams 2
python3 - "$WORK/two-droce.json" "$WORK/two-sensor.json" <<'PY' || fail "two streams: not both served"
import json, sys
s = json.load(open(sys.argv[1]))["rx"]["streams"]
want = json.load(open(sys.argv[2]))["expect"]["frames_complete"]
assert [x["qp"] for x in s] == [0x100, 0x101], s
frames = [x["frames"] for x in s]
# The sensor alternates the streams and loses the same packets of each.
assert frames[0] == frames[1] and sum(frames) == want, (frames, want)
print("two streams: QPs 0x100 and 0x101, %d frames each" % frames[0])
PY
echo "PASS"
