#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Hostile neighbours, from the kernel peer's namespace (scapy sends what
# the kernel would not): an ARP reply that claims the peer's address for
# another MAC, and pings from 200 spoofed on-link sources. The kernel's own
# ping must still get every answer, droce must start no more resolutions
# than its rate allows (counted by tshark on the peer's side: at most 100
# new ones at once and 100 a second, each asked again up to 3 times a
# second apart, at most 64 at a time; without the limits every source
# would be asked 4 times, 800 requests, some 600 in the capture's window), and
# a host it never saw must still be resolved.
. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null || fail "needs tshark (usertools/droce-deps.sh installs it)"
/usr/bin/python3 -c 'import scapy' 2>/dev/null || fail "needs python3-scapy (usertools/droce-deps.sh installs it)"

make_link
start_droce
out=$(peer ping -c 5 -i 0.05 -W 5 "$DROCE_IP" 2>&1) || true
echo "$out" | grep -q " 5 received" || fail "ping before: $out"
DMAC=$(droce_mac)

# scapy SRC... : in the peer's namespace, send what the arguments say.
scapy_send() {
	peer /usr/bin/python3 - "$IF_P" "$DMAC" "$@" <<'PY'
import sys
from scapy.all import ARP, ICMP, IP, Ether, sendp, conf
conf.verb = 0
iface, dmac, what = sys.argv[1], sys.argv[2], sys.argv[3]
if what == "claim":      # an unsolicited reply: 198.18.0.2 is at a fake MAC
    sendp(Ether(dst=dmac, src="02:66:66:66:66:66") /
          ARP(op=2, hwsrc="02:66:66:66:66:66", psrc="198.18.0.2",
              hwdst=dmac, pdst="198.18.0.1"), iface=iface)
elif what == "flood":    # pings from spoofed on-link sources
    sendp([Ether(dst=dmac) / IP(src="198.18.0.%d" % (20 + i), dst="198.18.0.1") /
           ICMP(id=7, seq=i) for i in range(200)], iface=iface)
PY
}

scapy_send claim
out=$(peer ping -c 10 -i 0.05 -W 5 "$DROCE_IP" 2>&1) || true
echo "$out" | tail -2
echo "$out" | grep -q " 10 received" ||
	fail "an unsolicited ARP reply took the peer's address: $out"

peer tshark -i "$IF_P" -f "arp and ether src $DMAC" -a duration:4 -q -w "$WORK/arp.pcapng" \
	>/dev/null 2>&1 &
TSHARK=$!
sleep 1.5
scapy_send flood
wait "$TSHARK" || true
requests=$(tshark -r "$WORK/arp.pcapng" -Y "arp.opcode == 1" 2>/dev/null | wc -l)
echo "200 pings from spoofed sources: droce sent $requests ARP requests"
# The limits allow 100 at once plus what the 100/s refill adds while the
# flood lasts, then 3 more rounds of at most 64 pending: about 302 when
# the capture holds every round. 340 leaves the flood 0.4 s.
[ "$requests" -le 340 ] ||
	fail "droce sent $requests ARP requests for 200 spoofed sources (at most 340 allowed)"

out=$(peer ping -c 10 -i 0.05 -W 5 "$DROCE_IP" 2>&1) || true
echo "$out" | grep -q " 10 received" || fail "ping after the flood: $out"
# A host droce never saw: a second address on the peer's side.
peer ip addr add 198.18.0.3/24 dev "$IF_P"
out=$(peer ping -c 5 -i 0.05 -W 5 -I 198.18.0.3 "$DROCE_IP" 2>&1) || true
echo "$out" | grep -q " 5 received" || fail "a new neighbour after the flood: $out"
stop_droce
echo PASS
