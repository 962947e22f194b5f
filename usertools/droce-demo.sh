#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# The main job: set up (packages, build), then show the stack on a veth
# pair between two network namespaces that this script creates and
# removes: droce on net_af_packet at 198.18.0.1, the Linux kernel at
# 198.18.0.2 as its peer. The kernel resolves droce with ARP, pings it,
# and gets UDP datagrams echoed; droce's counters come from its JSON
# dump and from rte_telemetry. Run as root.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/usertools/droce-deps.sh"
"$top/usertools/droce-build.sh" build >/dev/null
echo "droce-demo: built $top/build/app/droce/droce"

DROCE=$top/build/app/droce/droce
# The namespaces, veth pair and droce start/stop are the integration tests' own.
. "$top/tests/integration/lib.sh"

make_link
start_droce udp.echo.port=7 stats.period=2 --stats-json "$WORK/stats.json"
echo "droce-demo: droce runs in namespace $NS_D on $IF_D, MAC $(droce_mac)"

ping_out=$(peer ping -c 100 -i 0.01 -W 1 "$DROCE_IP" 2>&1) || true
neigh=$(peer ip neigh show "$DROCE_IP" dev "$IF_P")
udp_echo() {
	peer python3 - "$DROCE_IP" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
ok = 0
for i in range(20):
    data = os.urandom(16 + 64 * i)
    s.sendto(data, (sys.argv[1], 7))
    try:
        got, _ = s.recvfrom(4096)
        ok += got == data
    except socket.timeout:
        pass
print("%d/20" % ok)
PY
}
udp_out=$(udp_echo 2>&1) || true
tel=$(printf '/droce/stats,0\n' | dpdk-telemetry.py -f "$PREFIX" 2>/dev/null | tail -1)
stop_droce

received=$(echo "$ping_out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
rtt=$(echo "$ping_out" | sed -n 's/^rtt [^=]*= [0-9.]*\/\([0-9.]*\)\/.*/\1/p')
tel_rx=$(echo "$tel" | python3 -c 'import json,sys; print(json.load(sys.stdin)["/droce/stats"]["rx_packets"])' 2>/dev/null || echo "?")
echo
echo "droce-demo summary"
printf '  %-34s %s\n' \
	"kernel ping, replies / sent" "${received:-0} / 100 (avg rtt ${rtt:-?} ms)" \
	"kernel neighbour entry for droce" "$neigh" \
	"UDP echo (RFC 862), datagrams back" "$udp_out" \
	"droce rx / tx packets (JSON)" "$(json "$WORK/stats.json" 'j["ports"][0]["rx_packets"]') / $(json "$WORK/stats.json" 'j["ports"][0]["tx_packets"]')" \
	"droce drops (JSON)" "$(json "$WORK/stats.json" 'j["ports"][0]["drops"]')" \
	"rx_packets via rte_telemetry" "$tel_rx"
[ "${received:-0}" = 100 ] && [ "$udp_out" = "20/20" ] || fail "the demo did not get every answer"
echo "droce-demo: OK (namespaces and veth removed on exit)"
