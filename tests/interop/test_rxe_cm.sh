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
# READ, as rping's server does: it begins "rdma-ping-". Last, rping
# itself, 100 pings each way with Linux's rping checking (-V): droce-rc's
# rping client against `rping -s`, and `rping -c -V` against droce-rc's
# rping server; ucmatose both ways (10 messages of 100 bytes each way);
# perftest with rdma_cm (-R), ib_write_bw and ib_send_bw, both ways:
# Linux's clients against droce-rc's server, droce-rc's client (sending
# from its MR: --zero-copy on) against Linux's servers. The capture's
# REQs, both sides', carry rdma_cm's
# header as Wireshark reads it.
. "$(dirname "$0")/lib.sh"

PROBE=${CM_PROBE:?set CM_PROBE to the cm_probe binary}
[ -x "$PROBE" ] || fail "no cm_probe at $PROBE"
RC=${DROCE_RC:?set DROCE_RC to the droce-rc binary}
[ -x "$RC" ] || fail "no droce-rc at $RC"
PROBE_PREFIX=droce-i$TAG-cm
BW_SIZE=65536
BW_ITERS=20

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
echo "guest: rping -s -C 100 -V on port 7176, for droce-rc's client"
timeout 60 rping -s -a $RXE_VM_IP -p 7176 -C 100 -V >/tmp/rping3.out 2>&1
echo "guest: rping -s exit \$?"
tail -3 /tmp/rping3.out | sed 's/^/guest: rping -s: /'
echo "guest: rping -c -C 100 -V to droce-rc's server at port 7177"
rc=1
for i in \$(seq 40); do
	timeout 60 rping -c -a $RXE_DROCE_IP -p 7177 -C 100 -S 64 -V >/tmp/rping4.out 2>&1
	rc=\$?
	[ \$rc = 0 ] && break
	grep -qiE "addr|route|connect|unreachable|rejected" /tmp/rping4.out || break
	sleep 1
done
echo "guest: rping -c exit \$rc"
tail -3 /tmp/rping4.out | sed 's/^/guest: rping -c: /'
echo "guest: ucmatose server on port 7471, for droce-rc's client"
timeout 60 ucmatose -p 7471 >/tmp/ucm1.out 2>&1
echo "guest: ucmatose server exit \$?"
tail -4 /tmp/ucm1.out | sed 's/^/guest: ucmatose server: /'
echo "guest: ucmatose client to droce-rc's server at port 7472"
rc=1
for i in \$(seq 40); do
	timeout 60 ucmatose -s $RXE_DROCE_IP -p 7472 >/tmp/ucm2.out 2>&1
	rc=\$?
	[ \$rc = 0 ] && break
	grep -qiE "addr|route|connect|unreachable|rejected" /tmp/ucm2.out || break
	sleep 1
done
echo "guest: ucmatose client exit \$rc"
tail -4 /tmp/ucm2.out | sed 's/^/guest: ucmatose client: /'
for t in write send; do
	echo "guest: ib_\${t}_bw -R to droce-rc at port 18516"
	rc=1
	for i in \$(seq 40); do
		timeout 120 ib_\${t}_bw -R -s $BW_SIZE -n $BW_ITERS -p 18516 $RXE_DROCE_IP >/tmp/bw.out 2>&1
		rc=\$?
		[ \$rc = 0 ] && break
		grep -qiE "rdma_client|connect|unreachable|rejected|resolve" /tmp/bw.out || break
		sleep 1
	done
	echo "guest: ib_\${t}_bw -R exit \$rc"
	grep -E "^ *$BW_SIZE +$BW_ITERS " /tmp/bw.out | tr -s ' ' | sed "s/^ //; s/^/guest: ib_\${t}_bw -R: /"
	[ \$rc = 0 ] || tail -15 /tmp/bw.out | sed "s/^/guest: ib_\${t}_bw -R: /"
done
port=18517
for t in write send; do
	echo "guest: ib_\${t}_bw -R server on port \$port, for droce-rc's client"
	timeout 120 ib_\${t}_bw -R -s $BW_SIZE -n $BW_ITERS -p \$port >/tmp/bws.out 2>&1
	echo "guest: ib_\${t}_bw -R server exit \$?"
	grep -E "^ *$BW_SIZE +$BW_ITERS " /tmp/bws.out | tr -s ' ' |
		sed "s/^ //; s/^/guest: ib_\${t}_bw -R server: /"
	port=\$((port + 1))
done
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

# droce_rc_try NAME ARGS...: droce-rc on cpu 0 in droce's namespace; its status.
droce_rc_try() {
	local name=$1
	shift
	ip netns exec "$RXE_NS_D" taskset -c 0 timeout 150 "$RC" --no-pci --no-huge -m 256 \
		--file-prefix "$PROBE_PREFIX" "--vdev=net_af_packet0,iface=$RXE_IF_D,qpairs=2" -- \
		"$@" --timeout 60 port.0.device=net_af_packet0 port.0.address=$RXE_DROCE_IP/24 \
		>"$RXE_WORK/$name.log" 2>&1
}

# droce_rc NAME ARGS...: droce-rc on cpu 0 in droce's namespace, which must succeed.
droce_rc() {
	local name=$1 rc=0
	droce_rc_try "$@" || rc=$?
	grep -E '^droce-rc: (rping|ucmatose|perftest)' "$RXE_WORK/$name.log" | sed "s/^/  $name: /"
	if [ "$rc" != 0 ]; then
		grep -v '^EAL: ' "$RXE_WORK/$name.log" | tail -20
		fail "droce-rc $name: exit status $rc"
	fi
}
echo "== droce-rc rping client, 100 pings, against rping -s"
droce_rc rping-client rping --connect "$RXE_VM_IP" -p 7176 -n 100 -s 64
grep -q "100 pings of 64 bytes, each read, written back and checked" "$RXE_WORK/rping-client.log" ||
	fail "droce-rc's rping client did not check 100 pings"
echo "== rping -c -V, 100 pings, against droce-rc's rping server"
droce_rc rping-server rping --server -p 7177 -n 100
grep -q "served 100 pings" "$RXE_WORK/rping-server.log" || fail "droce-rc's rping server did not serve 100 pings"
echo "== droce-rc ucmatose client against ucmatose, then ucmatose against droce-rc's server"
droce_rc ucm-client ucmatose --connect "$RXE_VM_IP" -p 7471
droce_rc ucm-server ucmatose --server -p 7472
for n in ucm-client ucm-server; do
	grep -q "10 messages of 100 bytes sent and 10 received" "$RXE_WORK/$n.log" ||
		fail "droce-rc $n: not 10 messages each way"
done
echo "== ib_write_bw -R and ib_send_bw -R in the VM, droce-rc's perftest server with -R"
for t in write send; do
	droce_rc "perftest-$t" perftest "$t" -R -p 18516 -s "$BW_SIZE" -n "$BW_ITERS"
done
echo "== droce-rc's perftest client with -R and --zero-copy on against ib_write_bw -R and ib_send_bw -R in the VM"
port=18517
for t in write send; do
	# The VM starts its server once the last test is over: until it listens,
	# its CM answers REJ 8 and droce-rc gives up after perftest's 10 tries.
	for try in $(seq 30); do
		rc=0
		droce_rc_try "perftest-client-$t" perftest "$t" -R --connect "$RXE_VM_IP" -p "$port" \
			-s "$BW_SIZE" -n "$BW_ITERS" --zero-copy on || rc=$?
		[ "$rc" = 0 ] && break
		grep -q "REJECTED (status 8)" "$RXE_WORK/perftest-client-$t.log" || break
		sleep 1
	done
	grep -E '^droce-rc: perftest' "$RXE_WORK/perftest-client-$t.log" | sed "s/^/  perftest-client-$t: /"
	if [ "$rc" != 0 ]; then
		grep -v '^EAL: ' "$RXE_WORK/perftest-client-$t.log" | tail -20
		fail "droce-rc perftest-client-$t: exit status $rc"
	fi
	grep -Eq "packets \([1-9][0-9]* sent from their MR\)" "$RXE_WORK/perftest-client-$t.log" ||
		fail "droce-rc perftest-client-$t: nothing sent from its MR (--zero-copy on)"
	port=$((port + 1))
done
sleep 1 # tcpdump writes the last frames
rxe_capture_stop

rc=0
rxe_vm_wait 90 || rc=$?
grep -a '^guest' "$RXE_WORK/vm.log" | tr -d '\r'
[ "$rc" = 0 ] || fail "guest script: $RXE_VM_RESULT, status $rc"
# rping printed what its RDMA READ took from droce's buffer: 64 'Z's.
grep -aq "^guest: rping: server ping data: ZZZZZZZZZZZZZZZZ" "$RXE_WORK/vm.log" ||
	fail "rping did not read droce's buffer (its output is above)"
# Linux's rping client checked each of its 100 pings (-V) and exited 0.
grep -aq "^guest: rping -c exit 0" "$RXE_WORK/vm.log" ||
	fail "rping -c -V against droce-rc's server failed (its output is above)"
for side in server client; do
	grep -aq "^guest: ucmatose $side exit 0" "$RXE_WORK/vm.log" ||
		fail "ucmatose $side against droce-rc failed (its output is above)"
done
for t in write send; do
	grep -aq "^guest: ib_${t}_bw -R exit 0" "$RXE_WORK/vm.log" &&
		grep -aq "^guest: ib_${t}_bw -R: $BW_SIZE $BW_ITERS " "$RXE_WORK/vm.log" ||
		fail "ib_${t}_bw -R against droce-rc failed (its output is above)"
	grep -aq "^guest: ib_${t}_bw -R server exit 0" "$RXE_WORK/vm.log" &&
		grep -aq "^guest: ib_${t}_bw -R server: $BW_SIZE $BW_ITERS " "$RXE_WORK/vm.log" ||
		fail "ib_${t}_bw -R's server with droce-rc as its client failed (its output is above)"
done

cap=$RXE_WORK/cm.pcap
rxe_tshark "$cap" -Y "infiniband.mad.mgmtclass == 7" -T fields -e ip.src -e infiniband.mad.attributeid |
	sort | uniq -c | sed 's/^/  CM MADs: /'
# Wireshark's RPC-over-RDMA heuristic claims perftest's small exchange
# SENDs (both sides' alike) and calls them malformed: not for it to read.
malformed=$(rxe_tshark "$cap" --disable-protocol rpcordma \
	-Y "_ws.malformed || _ws.expert.severity >= error" | wc -l)
[ "$malformed" = 0 ] || fail "$cap: $malformed malformed packets"
for m in "$RXE_DROCE_IP 0x0010" "$RXE_VM_IP 0x0012" "$RXE_VM_IP 0x0013" \
	"$RXE_DROCE_IP 0x0014" "$RXE_DROCE_IP 0x0015" "$RXE_VM_IP 0x0016" \
	"$RXE_VM_IP 0x0010" "$RXE_DROCE_IP 0x0013" "$RXE_VM_IP 0x0014"; do
	set -- $m
	rxe_tshark "$cap" -Y "infiniband.mad.mgmtclass == 7 && ip.src == $1 && infiniband.mad.attributeid == $2" |
		grep -q . || fail "$cap: no CM message $2 from $1"
done
# Each REQ's rdma_cm header as Wireshark reads it: IPv4, from its sender
# to the other side, its destination port that of the service id.
reqs=$(rxe_tshark "$cap" -Y "infiniband.mad.mgmtclass == 7 && infiniband.mad.attributeid == 0x0010" \
	-T fields -e ip.src -e infiniband.cm.req.ip_cm.ipv -e infiniband.cm.req.ip_cm.sip4 \
	-e infiniband.cm.req.ip_cm.dip4 -e infiniband.cm.req.serviceid.dport)
echo "$reqs" | sort | uniq -c | sed 's/^/  REQ rdma_cm headers: /'
while read -r src ipv sip dip dport; do
	[ "$((ipv))" = 4 ] && [ "$sip" = "$src" ] && [ -n "$dport" ] &&
		{ [ "$dip" = "$RXE_VM_IP" ] || [ "$dip" = "$RXE_DROCE_IP" ]; } && [ "$dip" != "$src" ] ||
		fail "$cap: a REQ from $src with rdma_cm header IP version '$ipv', $sip -> $dip, port '$dport'"
done <<<"$reqs"
echo "$reqs" | grep -q "^$RXE_DROCE_IP" || fail "$cap: no REQ from droce"
echo "$reqs" | grep -q "^$RXE_VM_IP" || fail "$cap: no REQ from Linux"
python3 "$(dirname "$0")/roce_icrc.py" "$cap" || fail "$cap: RoCEv2 frames with a wrong ICRC"
echo PASS
