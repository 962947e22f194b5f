#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The kernel's ping gets 100 replies of 100 from droce, and the kernel's
# neighbour table learns droce's MAC through droce's ARP replies.
. "$(dirname "$0")/lib.sh"

make_link
start_droce --stats-json "$WORK/stats.json"
out=$(peer ping -c 100 -i 0.01 -w 20 -s 56 "$DROCE_IP" 2>&1) || true
echo "$out" | tail -3
echo "$out" | grep -q " 100 received, 0% packet loss" || fail "ping: $out"

mac=$(droce_mac)
[ -n "$mac" ] || fail "droce printed no MAC"
neigh=$(peer ip neigh show "$DROCE_IP" dev "$IF_P")
echo "neighbour table: $neigh (droce says $mac)"
echo "$neigh" | grep -q "lladdr $mac " || fail "neighbour entry '$neigh' lacks droce's MAC $mac"

# Large pings too (fits MTU 1500 without fragments).
out=$(peer ping -c 20 -i 0.01 -w 20 -s 1472 -M do "$DROCE_IP" 2>&1) || true
echo "$out" | grep -q " 20 received, 0% packet loss" || fail "1472-byte ping: $out"

stop_droce
rx=$(json "$WORK/stats.json" 'j["ports"][0]["rx_packets"]')
tx=$(json "$WORK/stats.json" 'j["ports"][0]["tx_packets"]')
echo "droce counted rx $rx tx $tx"
[ "$rx" -ge 121 ] && [ "$tx" -ge 121 ] || fail "counters rx $rx tx $tx, expected >= 121 each"
echo PASS
