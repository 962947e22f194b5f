#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every droce-bench case runs to its end, one round each, and reports its
# ratio against the baseline of the same run. No time is asserted (the
# machines are noisy); what is checked is that each case works: its own
# checks (every packet placed, none refused or lost) make it fail if not.
set -euo pipefail
bench=${DROCE_BENCH:?the droce-bench binary}
# rx-drop's baseline is DPDK's own testpmd: without it the case measures
# nothing, so a missing one fails here (DROCE_TESTPMD: another binary).
testpmd=${DROCE_TESTPMD:-dpdk-testpmd}
prefix=droce-bench-test-$$
work=$(mktemp -d /tmp/droce-bench-test.XXXXXX)
log=$work/log
: >"$log"
# The DPDK runtime folders of a run: droce-bench's, and its testpmd's,
# which are named after droce-bench's pid (droce-bench-tpmd-PID-ROUND).
remove_runtime_folders() {
	rm -rf "/var/run/dpdk/$prefix"
	[ ! -s "$work/pid" ] || rm -rf /var/run/dpdk/droce-bench-tpmd-"$(cat "$work/pid")"-*
}
trap 'remove_runtime_folders; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$log" | tail -30; exit 1; }
lcores=$(/usr/bin/python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print("0@%d,1@%d" % (c[0], c[1] if len(c) > 1 else c[0]))')

command -v "$testpmd" >/dev/null ||
	fail "rx-drop: no $testpmd, the baseline it is measured against (package dpdk-dev; usertools/droce-deps.sh installs it)"

# case, and a line each case prints with its ratio
while read -r name ratio_line; do
	# The shell writes its pid, then exec makes it droce-bench's.
	timeout 300 bash -c 'echo $$ >"$0"; exec "$@"' "$work/pid" \
		"$bench" --no-pci --no-huge -m 1024 --file-prefix "$prefix" \
		--lcores "$lcores" --vdev net_null0 --log-level lib.eal:error --log-level droce.rx:warning \
		-- --case "$name" --rounds 1 --testpmd "$testpmd" </dev/null >"$log" 2>&1 ||
		fail "$name exited $?"
	remove_runtime_folders
	grep -Eq "$ratio_line" "$log" || fail "$name printed no '$ratio_line'"
	echo "$name: $(grep -E "$ratio_line" "$log" | head -1 | sed 's/^ *//')"
done <<'CASES'
rx-drop ratio droce/testpmd [0-9.]+
icrc 1408 +[0-9.]+ .*x
icrc-copy fused verify\+copy [0-9.]+ GB/s \([0-9.]+x\)
place 1408-byte entries: .*copy [0-9.]+ GB/s \([0-9.]+x\)
stream-place 1408-byte payloads .*bare receive [0-9.]+ GB/s \([0-9.]+x\).*check alone [0-9.]+ GB/s \([0-9.]+x\).*ICRC off [0-9.]+ GB/s \([0-9.]+x; [0-9.]+x of bare\)
stream-pps bare receive [0-9.]+ Mpps \([0-9.]+x\).*droce ICRC off [0-9.]+ Mpps \([0-9.]+x; [0-9.]+x of bare\)
stream-scale 256 streams: droce [0-9.]+ GB/s \([0-9.]+x of 1 stream\)
rc the same sent from the MR \(zero copy\): [0-9.]+ GB/s = [0-9.]+x of copying
rpc sync call 64 B, p50: droce RDMA [0-9.]+ us, droce TCP [0-9.]+ us, kernel TCP ping-pong [0-9.]+ us: RDMA [0-9.]+x
rpc-tls RDMA, 4 MiB rendezvous call \(plaintext\): [0-9.]+ GB/s vs memcpy [0-9.]+ GB/s = [0-9.]+x
rpc-scale over 1000 sessions: [0-9.]+ calls/s, [0-9.]+x of 1 session
stream-rpc loaded [0-9.]+ GB/s \([0-9.]+x memcpy\): loaded [0-9.]+x quiet; per second of the worker.s cpu time [0-9.]+x
CASES
echo PASS
