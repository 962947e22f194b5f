#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A kernel UDP socket in the peer namespace gets every datagram echoed by
# droce's echo service. droce probes the af_packet device itself from
# port.0.device devargs (no --vdev).
. "$(dirname "$0")/lib.sh"
# droce starts through lib.sh's start_droce_on, which gives the EAL --no-pci
# --no-huge and a --file-prefix of its own.

make_link
start_droce_on "" "port.0.device=net_af_packet0,iface=$IF_D,qpairs=2" \
	udp.echo.port=7 --stats-json "$WORK/stats.json"
peer python3 - "$DROCE_IP" <<'PY' || fail "UDP echo"
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
sizes = [0, 1, 7, 18, 64, 512, 1000, 1472]
for i in range(50):
    data = os.urandom(sizes[i % len(sizes)])
    s.sendto(data, (sys.argv[1], 7))
    got, addr = s.recvfrom(2048)
    if got != data or addr != (sys.argv[1], 7):
        sys.exit("datagram %d (%d bytes): echo differs or comes from %s" % (i, len(data), addr))
print("50 datagrams echoed")
PY
stop_droce
grep -q "ethdev 0" "$WORK/droce.log" || fail "no port line"
drops=$(json "$WORK/stats.json" 'j["ports"][0]["drop"]["l4_bad_cksum"]')
[ "$drops" = 0 ] || fail "$drops datagrams had bad checksums"
echo PASS
