#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# On a machine with a GPU (not run by CI), after tests/device/prepare.sh on
# a CPU machine: part 1 of usertools/droce-demo.sh with the bundle's
# programs. droce-sensor sends Holoscan Sensor Bridge frames (RoCEv2 RDMA
# WRITEs, 1 MiB each) to droce over net_memif; droce places them in GPU
# memory (a CUDA GPU where libcuda.so.1 loads, else the host gpudev driver)
# and checks every byte of every frame; then the same with faults on the
# wire, which droce's counters must account for exactly. Needs no DPDK
# install, no network namespaces: the libraries come from build-device/lib,
# the drivers from build-device/pmds (EAL's -d). Under 3 minutes.
#
#   device run: bash tests/device/demo.sh   (carry: build-device)
#
# Output, also in ${OUT:-/tmp}: demo.log, and per run (clean, faults)
# NAME-droce.log, NAME-droce.json, NAME-sensor.json. Exit status 0 only if
# both runs' every clean frame was checked byte-exact and the counters agree.
# DEMO_GPU=cuda:0 makes a missing CUDA device an error (default: auto).
# DEMO_FRAMES and DEMO_FPS change the runs' frames (300) and rate (100 a
# second); at rates the checking application cannot follow, frames are
# dropped from its queue and the runs say FAILED, as they should.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$top/build-device
out=${OUT:-/tmp}
log=$out/demo.log
gpu=${DEMO_GPU:-auto}
FRAMES=${DEMO_FRAMES:-300}
FPS=${DEMO_FPS:-100}
FAULTS=drop=1009,duplicate=1201,reorder=1409,corrupt-icrc=1601,wrong-rkey=1801,wrong-qp=2003,wrong-peer=2203,bad-va=2411

SYS_PMDS=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
WORK=
PMDS=
DROCE_PID=
D_PREFIX=droce-demo-d$$
S_PREFIX=droce-demo-s$$

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	if [ -n "$DROCE_PID" ] && kill -0 "$DROCE_PID" 2>/dev/null; then
		kill -TERM "$DROCE_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$DROCE_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DROCE_PID" 2>/dev/null
	fi
	[ -n "$WORK" ] && rm -rf "$WORK"
	[ -n "$PMDS" ] && [ "$PMDS" != "$bundle/pmds" ] && rm -rf "$PMDS"
	rm -rf "/var/run/dpdk/$D_PREFIX" "/var/run/dpdk/$S_PREFIX"
}

# EAL refuses a driver when the file or any folder above it is
# world-writable (a repository copy under /tmp, say): then the drivers go to
# a private folder below one that is not.
secure_path() {
	local p
	p=$(realpath "$1") || return 1
	while :; do
		[ -n "$(find "$p" -maxdepth 0 -perm -o+w 2>/dev/null)" ] && return 1
		[ "$p" = / ] && return 0
		p=$(dirname "$p")
	done
}

plugin_dir() {
	local base d
	if secure_path "$bundle/pmds" && [ -z "$(find "$bundle/pmds" -perm -o+w)" ]; then
		echo "$bundle/pmds"
		return 0
	fi
	for base in "${XDG_RUNTIME_DIR:-}" "${HOME:-}" /run /var/lib; do
		if [ -z "$base" ] || [ ! -d "$base" ] || [ ! -w "$base" ] || ! secure_path "$base"; then
			continue
		fi
		d=$(mktemp -d "$base/droce-demo-pmds.XXXXXX") || continue
		cp "$bundle"/pmds/* "$d/" && chmod 644 "$d"/* && chmod 755 "$d" &&
			echo "$d" && return 0
		rm -rf "$d"
	done
	echo "demo.sh: $bundle/pmds is below a world-writable folder and no private one was found" >&2
	return 1
}

# The first two CPUs this process may run on (the demo's 0 and 1 where allowed).
two_cpus() {
	local list part a b n=0 picked=()
	list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
	IFS=, read -ra parts <<<"${list:-0-1}"
	for part in "${parts[@]}"; do
		a=${part%-*}; b=${part#*-}
		for ((; a <= b && n < 2; a++, n++)); do picked+=("$a"); done
	done
	[ "$n" = 2 ] || picked+=("${picked[0]}")
	echo "${picked[0]} ${picked[1]}"
}

# droce's summary line: --verify pattern: N of M frames taken checked, K did not match...
verify_counts() {
	sed -n 's/^  --verify pattern: \([0-9]*\) of \([0-9]*\) frames taken checked, \([0-9]*\) did not match.*/\1 \2 \3/p' "$1"
}

# sensor_run NAME [sensor options]: droce and droce-sensor over memif, as
# usertools/droce-demo.sh runs them; 0 when every check holds.
sensor_run() {
	local name=$1 rc=0 src=0 checked taken mismatched
	shift
	local dlog=$WORK/$name-droce.log
	: >"$dlog"
	timeout -s INT -k 5 50 "$bundle/bin/droce" --no-pci --no-huge -m 1024 \
		--file-prefix "$D_PREFIX" -l "$CPU_A,$CPU_B" -d "$PMDS" \
		"--vdev=net_memif0,role=server,socket=$WORK/memif.sock" -- \
		gpu="$gpu" port.0.device=net_memif0 port.0.address=198.18.0.1/24 stats.period=1 \
		rx.0.peer=198.18.0.2 rx.0.qp=0x100 rx.0.rkey=0x5eed \
		rx.0.frame.size=1048576 rx.0.pages=32 rx.0.queue.size=16 \
		--exit-on-idle 1500 --verify pattern --stats-json "$WORK/$name-droce.json" \
		--dump "$WORK/$name-frames" --dump-frames 4 >"$dlog" 2>&1 &
	DROCE_PID=$!
	for _ in $(seq 300); do
		grep -q "droce: running" "$dlog" && break
		kill -0 "$DROCE_PID" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q "droce: running" "$dlog"; then
		echo "  FAIL: droce did not start; its output:"
		kill -TERM "$DROCE_PID" 2>/dev/null   # timeout passes it on, kills after 5 s
		wait "$DROCE_PID"
		DROCE_PID=
		sed 's/^/    /' "$dlog"
		cp "$dlog" "$out/" 2>/dev/null
		return 1
	fi
	grep -E "gpu=auto|GPU memory from|placement|rx.0 stream" "$dlog" | sed 's/^/  /'
	timeout -k 5 40 "$bundle/bin/droce-sensor" --no-pci --no-huge -m 256 \
		--file-prefix "$S_PREFIX" -l "$CPU_A" -d "$PMDS" \
		"--vdev=net_memif0,role=client,socket=$WORK/memif.sock" -- \
		--src 198.18.0.2 --dst 198.18.0.1 --qp 0x100 --rkey 0x5eed \
		--frame-size 1048576 --pages 32 --frames "$FRAMES" --fps "$FPS" "$@" \
		--linger 30 --stats-json "$WORK/$name-sensor.json" >"$WORK/$name-sensor.log" 2>&1 ||
		src=$?
	grep '^droce-sensor' "$WORK/$name-sensor.log" | sed 's/^/  /'
	wait "$DROCE_PID" || rc=$?
	DROCE_PID=
	cp "$dlog" "$WORK/$name-droce.json" "$WORK/$name-sensor.json" "$out/" 2>/dev/null
	sed -n '/rx summary/,$p' "$dlog" | sed 's/^/  /'
	if [ "$src" != 0 ]; then
		echo "  FAIL: droce-sensor exited with $src; its output:"
		sed 's/^/    /' "$WORK/$name-sensor.log"
		return 1
	fi
	if [ "$rc" != 0 ]; then
		echo "  FAIL: droce exited with $rc (3: frames that did not match, 124: timeout)"
		return 1
	fi
	read -r checked taken mismatched <<<"$(verify_counts "$dlog")"
	if [ -z "${checked:-}" ] || [ "$mismatched" != 0 ] || [ "$checked" = 0 ]; then
		echo "  FAIL: droce's --verify line: ${checked:-?} checked, ${mismatched:-?} did not match"
		return 1
	fi
	if [ "$name" = clean ] && [ "$checked" != "$FRAMES" ]; then
		echo "  FAIL: $checked of $FRAMES clean frames checked"
		return 1
	fi
	if python3 -c 'import argparse, glob, json, struct' >/dev/null 2>&1; then
		if python3 "$top/tests/integration/rx_check.py" "$WORK/$name-droce.json" \
			"$WORK/$name-sensor.json" --dump "$WORK/$name-frames" >"$WORK/$name-check.txt"; then
			tail -1 "$WORK/$name-check.txt" | sed 's/^/  /'
		else
			sed 's/^/  /' "$WORK/$name-check.txt"
			echo "  FAIL: droce's counters disagree with the sensor"
			return 1
		fi
	else
		echo "  (no usable python3: rx_check.py skipped; droce's own check: $checked of $taken frames taken checked, none did not match)"
	fi
	return 0
}

main() {
	local clean=FAILED faults=FAILED gpu_line missing
	# Here: main runs in the pipeline's subshell, which has its own traps.
	trap cleanup EXIT
	trap 'exit 143' INT TERM HUP
	echo "== $(date -u +%FT%TZ) $(uname -r), $(ldd --version 2>&1 | head -1)"
	PATH=$PATH:/usr/local/nvidia/bin
	command -v nvidia-smi >/dev/null &&
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
	for f in bin/droce bin/droce-sensor pmds/librte_net_memif.so; do
		[ -e "$bundle/$f" ] && [ ! -x "$bundle/$f" ] && chmod +x "$bundle/$f"
		[ -x "$bundle/$f" ] || {
			echo "demo.sh: no $bundle/$f: run tests/device/prepare.sh first and carry build-device"
			return 2
		}
	done
	# EAL also loads every driver of its built-in folder where that exists:
	# a second copy of a bus beside the bundle's panics.
	if [ -n "$(ls -A "$SYS_PMDS" 2>/dev/null)" ]; then
		echo "demo.sh: $SYS_PMDS (an installed DPDK) would load beside the bundle; hide it:"
		echo "  unshare -m sh -c 'mount -t tmpfs none $SYS_PMDS && bash tests/device/demo.sh'"
		return 2
	fi
	# libcuda.so.1 comes with the driver; everything else from the bundle.
	export LD_LIBRARY_PATH=$bundle/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	WORK=$(mktemp -d /tmp/droce-demo.XXXXXX) || return 2
	PMDS=$(plugin_dir) || return 2
	read -r CPU_A CPU_B <<<"$(two_cpus)"
	echo "demo.sh: drivers from $PMDS, lcores $CPU_A,$CPU_B, gpu=$gpu, work in $WORK"
	missing=$(ldd "$bundle/bin/droce" "$bundle/bin/droce-sensor" "$PMDS"/* | grep 'not found' | sort -u)
	[ -z "$missing" ] || { echo "demo.sh: libraries not found:"; echo "$missing"; return 2; }

	echo
	echo "droce demo part 1: sensor frames into GPU memory over net_memif"
	echo "- $FRAMES clean frames of 1 MiB at $FPS fps"
	sensor_run clean && clean=ok
	echo "- $FRAMES frames with faults: drop, duplicate, reorder, bad ICRC, wrong rkey/QP/peer, VA out of range"
	sensor_run faults --faults "$FAULTS" && faults=ok

	gpu_line=$(sed -n 's/^droce: GPU memory from //p' "$WORK/clean-droce.log" | head -1)
	echo
	echo "demo.sh summary"
	printf '  %-28s %s\n' "GPU memory" "${gpu_line:-?}" \
		"clean run ($FRAMES frames)" "$clean" "faults run ($FRAMES frames)" "$faults"
	if [ "$clean" != ok ] || [ "$faults" != ok ]; then
		echo "demo.sh: FAILED"
		return 1
	fi
	echo "demo.sh: OK"
}

mkdir -p "$out"
main 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
