#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A port that cannot be had stops droce with a message naming the device
# and the real cause (never a bare -1 read as "Operation not permitted"),
# as the last line of its log; port.N.mac is checked and set on the device.
# No network needed: each case fails at probe or runs on a vdev.
set -euo pipefail
DROCE=${DROCE:?set DROCE to the droce binary}
TAG=$$
WORK=$(mktemp -d /tmp/droce-it.XXXXXX)
trap 'rm -rf "$WORK" /var/run/dpdk/droce-perr-$TAG-*' EXIT
n=0

fail() {
	echo "FAIL: $*"
	echo "--- droce output:"
	cat "$WORK/out"
	exit 1
}

# run CODE ARGS...: droce ARGS (with its own EAL prefix) exits CODE; its
# output, stdout and stderr in one file as a log would have them, is in
# $WORK/out.
run() {
	local code=$1 rc=0
	shift
	n=$((n + 1))
	"$DROCE" --no-pci --no-huge -m 256 --file-prefix "droce-perr-$TAG-$n" "$@" \
		>"$WORK/out" 2>&1 </dev/null || rc=$?
	[ "$rc" = "$code" ] || fail "droce $* -> exit $rc, expected $code"
}

has() { grep -qF -- "$1" "$WORK/out" || fail "no '$1' in the output"; }

# droce's error is the last line of the log, after everything it printed
# on stdout before it (stdout is block-buffered in a file, stderr not).
error_is_last() {
	tail -1 "$WORK/out" | grep -qF -- "$1" ||
		fail "the last line is not droce's error '$1' (stdout came after it?)"
}

# 1. The driver refuses devargs it cannot use and returns -1: droce names
# the device and sends the reader to the driver's own message.
dev=net_af_packet0,iface=droce-no-such-if
run 1 -- "port.0.device=$dev" port.0.address=198.18.0.1/24
has "port device \"$dev\": no such ethdev and probing it failed (the driver gave no reason; see the driver's message above)"
grep -q "Operation not permitted" "$WORK/out" && fail "says 'Operation not permitted'"
error_is_last "port device \"$dev\""
# The driver's message comes before droce's.
[ "$(grep -n "Driver cannot attach" "$WORK/out" | cut -d: -f1)" -lt "$(wc -l <"$WORK/out")" ] ||
	fail "the driver's message is not before droce's"
# The same for an interface name that fits but does not exist.
dev=net_af_packet0,iface=drv${TAG}none
run 1 -- "port.0.device=$dev" port.0.address=198.18.0.1/24
has "port device \"$dev\": no such ethdev and probing it failed (the driver gave no reason"
grep -q "Operation not permitted" "$WORK/out" && fail "says 'Operation not permitted'"
# A name no driver knows.
run 1 -- port.0.device=net_nothing0 port.0.address=198.18.0.1/24
has "port device \"net_nothing0\": no such ethdev and probing it failed (no DPDK bus or driver knows that name)"

# 2. port.N.mac: a group address is refused where the key is read.
run 2 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 port.0.mac=01:00:5e:00:00:01
has "command line 'port.0.mac=01:00:5e:00:00:01': port.0.mac = \"01:00:5e:00:00:01\": a multicast address; allowed: a unicast MAC address"
run 2 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 port.0.mac=02:00:00:00:05
has "port.0.mac = \"02:00:00:00:05\": not a MAC address; allowed:"

# 3. net_null takes the address: it is the port's MAC.
run 0 --vdev net_null0 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 \
	port.0.mac=02:00:00:00:00:05 stats.period=0 --duration 1
has "droce: port 0 = ethdev 0, MAC 02:00:00:00:00:05"

# 4. net_ring cannot set a MAC at all: droce answers for it itself (a
# replayed capture, a sensor programmed with that MAC) and says so.
run 0 --vdev net_ring0 -- port.0.device=net_ring0 port.0.address=198.18.0.1/24 \
	port.0.mac=02:00:00:00:00:05 stats.period=0 --duration 1
has "droce: port 0 = ethdev 0, MAC 02:00:00:00:00:05"
has "the driver cannot set a MAC address; droce answers for 02:00:00:00:00:05 itself"

# 5. net_memif reads the rings its peer sends on with its RX queues: with
# fewer RX than TX queues droce says how many another droce needs.
memif="net_memif0,role=server,socket=$WORK/m.sock"
run 0 -l 0,1 --vdev "$memif" -- port.0.device=net_memif0 port.0.address=198.18.0.1/24 \
	stats.period=0 --duration 1
has "1 RX queue, 2 TX: memif reads the rings its peer sends on with the RX queues, so they must be as many (another droce sends on one per lcore: give it and this side port.0.queues = 2; a peer with one ring, as droce-sensor: 1)"
run 0 -l 0,1 --vdev "$memif" -- port.0.device=net_memif0 port.0.address=198.18.0.1/24 \
	port.0.queues=2 stats.period=0 --duration 1
grep -q "memif reads the rings" "$WORK/out" && fail "warned with as many RX as TX queues"

# 6. An MTU the device's largest frame cannot carry is refused where the
# key is read, with the range the device allows (net_memif states only
# its 1518-byte frame; ethdev would refuse it later, saying less).
run 1 --vdev "$memif" -- port.0.device=net_memif0 port.0.address=198.18.0.1/24 port.0.mtu=4200
has "port.0.mtu = 4200: device net_memif0 allows MTU "
has "..1500 (frames of at most 1518 bytes, 18 of them Ethernet's own)"
error_is_last "port.0.mtu = 4200"
run 0 --vdev "$memif" -- port.0.device=net_memif0 port.0.address=198.18.0.1/24 port.0.mtu=1500 \
	stats.period=0 --duration 1
echo "PASS ($n cases)"
