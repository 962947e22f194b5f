# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Shared by the integration tests: two network namespaces joined by a veth
# pair, addresses from 198.18.0.0/24 only. droce runs in the first on
# net_af_packet; the kernel of the second is the peer. Everything this
# file creates is removed on exit, whatever the outcome.

set -euo pipefail

DROCE=${DROCE:?set DROCE to the droce binary}
TAG=$$
NS_D=droce-t$TAG-d          # droce's namespace
NS_P=droce-t$TAG-p          # the kernel peer's namespace
NS_W=droce-t$TAG-w          # a wire between them (make_wire_link)
IF_D=drv${TAG}d
IF_P=drv${TAG}p
PREFIX=droce-it-$TAG        # EAL --file-prefix
DROCE_IP=198.18.0.1
PEER_IP=198.18.0.2
WORK=$(mktemp -d /tmp/droce-it.XXXXXX)
DROCE_PID=

# A test that runs long says where its processes wait before meson's
# timeout ends it (DROCE_WATCHDOG_AT: ages in seconds, comma-separated).
python3 "$(dirname "${BASH_SOURCE[0]}")/watchdog.py" --pid $$ \
	--at "${DROCE_WATCHDOG_AT:-240,480}" &
WATCHDOG_PID=$!

# Every cpu this test may use, "0,1": a poller that must share the machine
# (a sensor, a client) floats over them with --lcores "0@($ALL_CPUS)".
# Pinned beside droce's control lcore on cpu 0, such pollers starved its
# kernel workers (test_mission: a workqueue lockup of a minute) or sat in
# D state in mmap() (test_rx_af_packet: 120 s).
ALL_CPUS=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')

skip() { echo "SKIP: $*"; exit 77; }

# stop_pid PID: a process this test started, asked to end, then made to.
stop_pid() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

fail() {
	echo "FAIL: $*"
	if [ -f "$WORK/droce.log" ]; then
		echo "--- droce output:"
		cat "$WORK/droce.log"
	fi
	exit 1
}

cleanup() {
	if [ -n "$DROCE_PID" ] && kill -0 "$DROCE_PID" 2>/dev/null; then
		kill -TERM "$DROCE_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$DROCE_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DROCE_PID" 2>/dev/null || true
	fi
	ip netns del "$NS_D" 2>/dev/null || true
	ip netns del "$NS_P" 2>/dev/null || true
	ip netns del "$NS_W" 2>/dev/null || true
	rm -rf "$WORK" "/var/run/dpdk/$PREFIX"
	kill "$WATCHDOG_PID" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 143' INT TERM HUP   # still through cleanup

need_netns() {
	[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
	command -v ip >/dev/null || skip "needs iproute2"
	command -v ethtool >/dev/null || fail "needs ethtool (usertools/droce-deps.sh installs it)"
}

# peer COMMAND...: run in the peer's namespace.
peer() { ip netns exec "$NS_P" "$@"; }

make_link() {
	need_netns
	ip netns add "$NS_D"
	ip netns add "$NS_P"
	ip link add "$IF_D" type veth peer name "$IF_P"
	ip link set "$IF_D" netns "$NS_D"
	ip link set "$IF_P" netns "$NS_P"
	link_up "$NS_D:$IF_D" "$NS_P:$IF_P"
	ip -n "$NS_P" addr add "$PEER_IP/24" dev "$IF_P"
}

# make_wire_link: as make_link, with a namespace NS_W between droce and
# the peer: IF_D <-> IF_WD and IF_WP <-> IF_P, for a program there (such
# as tests/tools/wire_faults) to join IF_WD and IF_WP.
IF_WD=drv${TAG}wd
IF_WP=drv${TAG}wp
make_wire_link() {
	need_netns
	ip netns add "$NS_D"
	ip netns add "$NS_W"
	ip netns add "$NS_P"
	ip link add "$IF_D" type veth peer name "$IF_WD"
	ip link add "$IF_WP" type veth peer name "$IF_P"
	ip link set "$IF_D" netns "$NS_D"
	ip link set "$IF_WD" netns "$NS_W"
	ip link set "$IF_WP" netns "$NS_W"
	ip link set "$IF_P" netns "$NS_P"
	link_up "$NS_D:$IF_D" "$NS_W:$IF_WD" "$NS_W:$IF_WP" "$NS_P:$IF_P"
	ip -n "$NS_P" addr add "$PEER_IP/24" dev "$IF_P"
}

# link_up NS:IF...: each interface up, with no IPv6 and no offloads.
link_up() {
	local ns ifc ns_if
	for ns_if in "$@"; do
		ns=${ns_if%%:*}; ifc=${ns_if#*:}
		# No IPv6 chatter, and real checksums: with offloads on, the
		# kernel leaves them for hardware that a veth does not have, and
		# af_packet hands droce the unfinished ones.
		ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1"
		ip netns exec "$ns" ethtool -K "$ifc" tx off rx off >/dev/null
		ip -n "$ns" link set "$ifc" up
	done
}

# af_packet's rings, per queue. The PMD joins its sockets to a fanout
# group with PACKET_FANOUT_FLAG_ROLLOVER: when one queue's ring is full the
# kernel hands the packet to another queue, so a flow is reordered across
# queues (and workers) whenever a poller is off its cpu for longer than its
# ring lasts. 4096 frames hold a quarter of a second of the tests' heaviest
# traffic, where the default 512 held 35 ms.
AF_PACKET_RING=framecnt=4096

# peer_hcom NAME IP COMMAND...: COMMAND, an hcom4db client over RDMA, in
# the peer's namespace with a droce stack of its own at IP on the peer's
# side of the veth: one polling thread (worker.inline: the machine may
# have two cpus for everyone) floating over every cpu; its configuration
# in $WORK/NAME.conf, its EAL's files under --file-prefix $PREFIX-NAME.
# Run it in the background (&): it execs COMMAND, so that $! is COMMAND's
# PID, for a kill.
peer_hcom() {
	local name=$1 ip=$2
	shift 2
	[ "$BASHPID" != $$ ] || fail "peer_hcom runs in the background (&): it execs"
	cat >"$WORK/$name.conf" <<CONF
worker.inline = yes
[port.0]
device = net_af_packet0
address = $ip/24
queues = 2
[worker]
thread.groups = 1
poll.enable = yes
CONF
	exec ip netns exec "$NS_P" env DROCE_HCOM_CONF="$WORK/$name.conf" \
		DROCE_HCOM_EAL="--no-pci --no-huge -m 256 --file-prefix $PREFIX-$name --lcores=0@($ALL_CPUS),1@($ALL_CPUS) --vdev=net_af_packet0,iface=$IF_P,qpairs=2,$AF_PACKET_RING" \
		"$@"
}

# start_droce [droce options and key=value...]: droce on af_packet in NS_D.
start_droce() {
	start_droce_on "--vdev=net_af_packet0,iface=$IF_D,qpairs=2,$AF_PACKET_RING" \
		port.0.device=net_af_packet0 "$@"
}

# start_droce_on EAL_DEVICE_ARG [droce args...]; EAL_DEVICE_ARG may be "".
start_droce_on() {
	local dev_arg=$1
	shift
	# Emptied here, not by the redirection below: that one runs in the
	# background job, maybe after the wait below read an earlier run's log.
	: >"$WORK/droce.log"
	ip netns exec "$NS_D" "$DROCE" --no-pci --no-huge -m 256 \
		--file-prefix "$PREFIX" ${dev_arg:+"$dev_arg"} -- \
		port.0.address=$DROCE_IP/24 stats.period=0 "$@" \
		>"$WORK/droce.log" 2>&1 &
	DROCE_PID=$!
	for _ in $(seq 300); do
		grep -q "droce: running" "$WORK/droce.log" && return 0
		kill -0 "$DROCE_PID" 2>/dev/null || fail "droce exited during start"
		sleep 0.1
	done
	fail "droce did not start within 30 s"
}

# stop_droce: SIGINT, then droce must exit 0 within 20 s.
stop_droce() {
	local rc=0
	kill -INT "$DROCE_PID"
	for _ in $(seq 200); do kill -0 "$DROCE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$DROCE_PID" 2>/dev/null && fail "droce did not stop within 20 s of SIGINT"
	wait "$DROCE_PID" || rc=$?
	DROCE_PID=
	[ "$rc" = 0 ] || fail "droce exited with $rc"
}

# droce_mac: the MAC droce reported for port 0, lower case.
droce_mac() {
	sed -n 's/^droce: port 0 = ethdev [0-9]*, MAC \(.*\)$/\1/p' "$WORK/droce.log" |
		tr 'A-F' 'a-f'
}

# json FILE PYTHON-EXPRESSION: evaluate with the file's JSON as `j`.
json() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
