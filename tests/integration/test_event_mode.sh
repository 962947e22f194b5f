#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# worker.poll.enable=no: on net_tap the workers sleep on RX interrupts, on
# net_af_packet (no interrupts) rte_power_pmd_mgmt paces them. Both answer
# the kernel's ping; with interrupts an idle droce uses almost no cpu.
. "$(dirname "$0")/lib.sh"
# droce starts through lib.sh's start_droce_on, which gives the EAL --no-pci
# --no-huge and a --file-prefix of its own.
# ping -w, not -W: with replies seen, -W leaves the last one two RTTs, and a
# worker woken from its sleep on a busy machine can take longer than that.

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# 1. RX interrupts on net_tap: the tap's kernel side is droce's peer.
need_netns
[ -c /dev/net/tun ] || skip "needs /dev/net/tun for net_tap"
ip netns add "$NS_D"
TAP=dtap$TAG
start_droce_on "--vdev=net_tap0,iface=$TAP" port.0.device=net_tap0 \
	worker.poll.enable=no
grep -q "RX interrupts" "$WORK/droce.log" || fail "net_tap not in RX interrupt mode"
ip netns exec "$NS_D" sysctl -qw "net.ipv6.conf.$TAP.disable_ipv6=1"
ip netns exec "$NS_D" ethtool -K "$TAP" tx off >/dev/null
ip -n "$NS_D" addr add "$PEER_IP/24" dev "$TAP"
ip -n "$NS_D" link set "$TAP" up
out=$(ip netns exec "$NS_D" ping -c 50 -i 0.02 -w 20 "$DROCE_IP" 2>&1) || true
echo "$out" | tail -2
echo "$out" | grep -q " 50 received, 0% packet loss" || fail "ping over tap: $out"
t0=$(cpu_ticks "$DROCE_PID"); sleep 2; t1=$(cpu_ticks "$DROCE_PID")
echo "idle cpu: $((t1 - t0)) ticks in 2 s (busy polling would be ~400)"
[ $((t1 - t0)) -lt 100 ] || fail "idle droce used $((t1 - t0)) ticks in 2 s"
stop_droce
ip netns del "$NS_D"

# 2. No RX interrupts (af_packet): rte_power_pmd_mgmt.
make_link
start_droce worker.poll.enable=no
grep -q "rte_power_pmd_mgmt" "$WORK/droce.log" || fail "af_packet not under rte_power_pmd_mgmt"
out=$(peer ping -c 50 -i 0.02 -w 20 "$DROCE_IP" 2>&1) || true
echo "$out" | tail -2
echo "$out" | grep -q " 50 received, 0% packet loss" || fail "ping with pmd_mgmt: $out"
stop_droce
echo PASS
