#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two worker groups of one worker each share three af_packet queues (the
# kernel fans flows out over them). Datagrams of 30 flows are all echoed,
# and both workers took part.
. "$(dirname "$0")/lib.sh"
# droce starts through lib.sh's start_droce_on, which gives the EAL --no-pci
# --no-huge and a --file-prefix of its own.

make_link
start_droce_on "--vdev=net_af_packet0,iface=$IF_D,qpairs=3" \
	port.0.device=net_af_packet0 worker.thread.groups=1,1 udp.echo.port=7 \
	--stats-json "$WORK/stats.json"
grep -q "2 worker lcores" "$WORK/droce.log" || fail "not two workers"
peer python3 - "$DROCE_IP" <<'PY' || fail "UDP echo over 30 flows"
import socket, sys
for flow in range(30):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.bind(("0.0.0.0", 20000 + flow))
    for i in range(3):
        data = b"flow %d datagram %d" % (flow, i)
        s.sendto(data, (sys.argv[1], 7))
        if s.recvfrom(2048)[0] != data:
            sys.exit("flow %d: wrong echo" % flow)
    s.close()
print("90 datagrams over 30 flows echoed")
PY
stop_droce
python3 - "$WORK/stats.json" <<'PY' || fail "queue spread: $(cat "$WORK/stats.json")"
import json, sys
j = json.load(open(sys.argv[1]))
queues = j["ports"][0]["queues"]
assert len(queues) == 3, queues
workers = [l for l in j["lcores"] if l["role"] == "worker"]
assert len(workers) == 2, workers
assert sorted(q for w in workers for q in w["queues"]) == ["0:0", "0:1", "0:2"]
for w in workers:
    assert w["rx_packets"] > 0, "worker lcore %d received nothing" % w["lcore"]
print("rx per worker lcore:", {w["lcore"]: w["rx_packets"] for w in workers})
PY
echo PASS
