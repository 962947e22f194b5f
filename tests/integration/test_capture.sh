#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# port.0.capture writes droce's RoCEv2 traffic to a pcapng file that
# tshark reads: frames scapy sends to UDP 4791 are there as received, and
# echo replies that droce sends to UDP 4791 are there as sent. Other
# traffic is not.
. "$(dirname "$0")/lib.sh"

command -v tshark >/dev/null || fail "needs tshark (usertools/droce-deps.sh installs it)"
make_link
cap=$WORK/roce.pcapng
start_droce udp.echo.port=7 "port.0.capture=$cap" --stats-json "$WORK/stats.json"
peer /usr/bin/python3 - "$DROCE_IP" "$(droce_mac)" "$IF_P" <<'PY' || fail "scapy"
import sys, time
from scapy.all import Ether, IP, UDP, Raw, sendp, conf
from scapy.contrib.roce import BTH
conf.verb = 0
ip, mac, ifc = sys.argv[1:4]
# RoCEv2 to droce: captured on the way in (droce has no RoCE handler yet).
for psn in range(10):
    sendp(Ether(dst=mac) / IP(src="198.18.0.2", dst=ip) / UDP(sport=49152, dport=4791) /
          BTH(opcode=0x2a, dqpn=0x11, psn=psn) / Raw(b"\0" * 20), iface=ifc)
# From UDP 4791 to the echo service: the echo goes to 4791, captured out.
for i in range(5):
    sendp(Ether(dst=mac) / IP(src="198.18.0.2", dst=ip) / UDP(sport=4791, dport=7) /
          BTH(opcode=0x2a, dqpn=0x22, psn=100 + i) / Raw(b"\0" * 20), iface=ifc)
# Plain UDP: not RoCE, not captured.
for i in range(3):
    sendp(Ether(dst=mac) / IP(src="198.18.0.2", dst=ip) / UDP(sport=5000, dport=7) /
          Raw(b"plain"), iface=ifc)
time.sleep(0.5)
PY
stop_droce
[ -s "$cap" ] || fail "no capture file"
# Direction 1 in, 2 out. (The echo replies come from UDP port 7, so tshark
# shows them as Echo rather than InfiniBand: their destination tells.)
out=$(tshark -r "$cap" -T fields -E separator=, -e frame.packet_flags_direction \
	-e udp.dstport -e infiniband.bth.destqp 2>/dev/null) || fail "tshark could not read $cap"
echo "$out" | sort | uniq -c | sed 's/^/  /'
in=$(echo "$out" | grep -c '^0x00000001,4791,0x000011$' || true)
outb=$(echo "$out" | grep -c '^0x00000002,4791,' || true)
total=$(echo "$out" | grep -c . || true)
[ "$in" = 10 ] || fail "$in inbound RoCE frames in the capture, expected 10: $out"
[ "$outb" = 5 ] || fail "$outb outbound RoCE frames in the capture, expected 5: $out"
[ "$total" = 15 ] || fail "$total frames in the capture, expected 15 (no plain UDP)"
echo PASS
