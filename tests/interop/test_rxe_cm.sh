#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# lib/cm against Linux's connection manager and rdma_cm, in the rig's VM
# (lib.sh). cm_probe (droce's stack with QP1 and a lib/rc QP) sends
# rdma_cm-shaped REQs from 198.18.0.1. To a port no one listens on, the
# kernel's CM answers REJ 8 (invalid service id). To `rping -s`, lib/cm's
# state machine connects: REQ, rdma_cm's REP, the QP to RTR and RTS with
# the attributes it derives, RTU; then rping's first step as its client
# takes it: a SEND of the buffer's address, key and size, which rping's
# QP takes and answers with an RDMA READ of 64 bytes that rping prints;
# then DREQ and DREP. A capture of it all: no malformed packet, every ICRC
# right. Then the other way: `rping -c` in the VM connects to cm_probe
# listening on port 7175; lib/cm accepts (its REP read by rdma_cm), the
# RTU establishes it, and cm_probe reads the client's buffer with an RDMA
# READ, as rping's server does: it begins "rdma-ping-".
. "$(dirname "$0")/lib.sh"

PROBE=${CM_PROBE:?set CM_PROBE to the cm_probe binary}
[ -x "$PROBE" ] || fail "no cm_probe at $PROBE"
PROBE_PREFIX=droce-i$TAG-cm

rxe_vm_build "$RXE_CACHE"
rxe_topo_up
rxe_at_exit "rm -rf /var/run/dpdk/$PROBE_PREFIX"

# rping's server waits for the host's probe for at most a minute.
cat >"$RXE_WORK/guest.sh" <<EOF
#!/bin/sh
echo "guest: rping -s on port 7174"
timeout 60 rping -s -a $RXE_VM_IP -p 7174 -C 1 -v >/tmp/rping.out 2>&1
sed 's/^/guest: rping: /' /tmp/rping.out | head -20
# droce listens once the host's first probes are done: try until it does.
echo "guest: rping -c to $RXE_DROCE_IP port 7175"
for i in \$(seq 40); do
	timeout 20 rping -c -a $RXE_DROCE_IP -p 7175 -C 1 -S 64 -v >/tmp/rping-c.out 2>&1
	grep -q DISCONNECT /tmp/rping-c.out && break
	sleep 1
done
sed 's/^/guest: rping -c: /' /tmp/rping-c.out | head -20
exit 0
EOF

# probe NAME PORT EXPECT SECONDS: cm_probe on cpu 0 in droce's namespace.
probe() {
	local name=$1 rc=0
	shift
	ip netns exec "$RXE_NS_D" taskset -c 0 timeout 120 "$PROBE" --no-pci --no-huge -m 256 \
		--file-prefix "$PROBE_PREFIX" "--vdev=net_af_packet0,iface=$RXE_IF_D,qpairs=2" -- \
		"$RXE_VM_IP" "$@" port.0.device=net_af_packet0 port.0.address=$RXE_DROCE_IP/24 \
		stats.period=0 >"$RXE_WORK/$name.log" 2>&1 || rc=$?
	grep '^cm_probe' "$RXE_WORK/$name.log" | sed "s/^/  $name: /"
	if [ "$rc" != 0 ]; then
		grep -v '^EAL: ' "$RXE_WORK/$name.log" | tail -20
		fail "cm_probe $name: exit status $rc"
	fi
}

rxe_vm_start "$RXE_CACHE" "$RXE_WORK/guest.sh" "$RXE_WORK/vm.log"
taskset -a -p -c 1 "$RXE_VM_PID" >/dev/null || echo "interop: could not pin qemu to cpu 1"
rxe_vm_wait_ready 150
rxe_capture_start "$RXE_IF_BP" "$RXE_WORK/cm.pcap" "$RXE_NS_BR"

echo "== REQ to port 7000, where nothing listens: REJ 8 from Linux's CM"
probe no-listener 7000 rej:8 30
echo "== connect to rping -s at port 7174, one SEND, disconnect"
probe rping 7174 establish 45
echo "== rping -c connects to droce at port 7175; READ its buffer, disconnect"
probe rping-c 7175 listen 60
sleep 1 # tcpdump writes the last frames
rxe_capture_stop

rc=0
rxe_vm_wait 90 || rc=$?
grep -a '^guest' "$RXE_WORK/vm.log" | tr -d '\r'
[ "$rc" = 0 ] || fail "guest script: $RXE_VM_RESULT, status $rc"
# rping printed what its RDMA READ took from droce's buffer: 64 'Z's.
grep -aq "^guest: rping: server ping data: ZZZZZZZZZZZZZZZZ" "$RXE_WORK/vm.log" ||
	fail "rping did not read droce's buffer (its output is above)"

cap=$RXE_WORK/cm.pcap
rxe_tshark "$cap" -Y "infiniband.mad.mgmtclass == 7" -T fields -e ip.src -e infiniband.mad.attributeid |
	sort | uniq -c | sed 's/^/  CM MADs: /'
malformed=$(rxe_tshark "$cap" -Y "_ws.malformed || _ws.expert.severity >= error" | wc -l)
[ "$malformed" = 0 ] || fail "$cap: $malformed malformed packets"
for m in "$RXE_DROCE_IP 0x0010" "$RXE_VM_IP 0x0012" "$RXE_VM_IP 0x0013" \
	"$RXE_DROCE_IP 0x0014" "$RXE_DROCE_IP 0x0015" "$RXE_VM_IP 0x0016" \
	"$RXE_VM_IP 0x0010" "$RXE_DROCE_IP 0x0013" "$RXE_VM_IP 0x0014"; do
	set -- $m
	rxe_tshark "$cap" -Y "infiniband.mad.mgmtclass == 7 && ip.src == $1 && infiniband.mad.attributeid == $2" |
		grep -q . || fail "$cap: no CM message $2 from $1"
done
python3 "$(dirname "$0")/roce_icrc.py" "$cap" || fail "$cap: RoCEv2 frames with a wrong ICRC"
echo PASS
