#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The soft-RoCE peer rig itself: the guest boots with rxe0 on eth0, GID 1
# is its IPv4-mapped address at active MTU 1024, it reaches the droce side
# (here the kernel, at 198.18.0.1) across the bridge, and RC ping-pong
# runs through its rxe (server and client both in the guest), and so do
# rping and ib_write_bw. The capture on the droce side's veth holds that
# ARP and ICMP. No droce here: the interop tests trust this rig, so this
# test checks it alone.
. "$(dirname "$0")/lib.sh"

rxe_vm_build "$RXE_CACHE"
rxe_topo_up
ip -n "$RXE_NS_D" addr add "$RXE_DROCE_IP/24" dev "$RXE_IF_D"

cat >"$RXE_WORK/guest.sh" <<EOF
#!/bin/sh
set -u
check() { echo "guest: \$*"; }
bad() { echo "guest FAIL: \$*"; exit 1; }

rdma link | tee /tmp/link
grep -q '^link rxe0/1 .*state ACTIVE.*netdev eth0' /tmp/link || bad "rdma link shows no active rxe0 on eth0"
check "rxe0 active on eth0"

ibv_devinfo -v -d rxe0 >/tmp/devinfo 2>&1 || { cat /tmp/devinfo; bad "ibv_devinfo"; }
grep -E 'GID\[ *[01]\]|active_mtu|state:' /tmp/devinfo
grep -qE 'GID\[ *1\]:[[:space:]]*::ffff:$RXE_VM_IP([^0-9]|\$)' /tmp/devinfo || bad "GID 1 is not ::ffff:$RXE_VM_IP"
grep -qE 'active_mtu:[[:space:]]*1024 ' /tmp/devinfo || bad "active MTU is not 1024"
check "GID 1 ::ffff:$RXE_VM_IP, active MTU 1024"

ping -c 3 -W 5 $RXE_DROCE_IP || bad "no ping replies from $RXE_DROCE_IP"
check "ping $RXE_DROCE_IP"

# RC SENDs of 4096 B (4 packets at MTU 1024) through rxe0 to itself.
ibv_rc_pingpong -g 1 -d rxe0 -n 5 -s 4096 >/tmp/server 2>&1 &
server=\$!
ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	if timeout 60 ibv_rc_pingpong -g 1 -d rxe0 -n 5 -s 4096 $RXE_VM_IP >/tmp/client 2>&1; then
		ok=1
		break
	fi
	grep -q "Couldn't connect" /tmp/client || break
done
cat /tmp/client
wait \$server
src=\$?
echo "--- server:"
cat /tmp/server
[ \$ok = 1 ] || bad "ibv_rc_pingpong client failed"
[ \$src = 0 ] || bad "ibv_rc_pingpong server exited \$src"
# Each side counts both directions: 2 x 5 x 4096 B.
for f in client server; do
	grep -q "^40960 bytes in " /tmp/\$f && grep -q "^5 iters in " /tmp/\$f ||
		bad "\$f did not count 5 iterations of 4096 B"
done
check "ibv_rc_pingpong 5 x 4096 B over rxe0"

# Later tests run these: every one finds its libraries.
for t in ${RXE_TOOLS[*]}; do
	p=\$(which \$t) || bad "no \$t in the guest"
	/lib64/ld-linux-x86-64.so.2 --list \$p | grep 'not found' && bad "\$t lacks libraries"
done
check "${#RXE_TOOLS[@]} tools load"

# rdma_cm, READ and WRITE through rxe0, and a disconnect (which aborts
# without libgcc_s).
rping -s -a $RXE_VM_IP -C 3 >/tmp/server 2>&1 &
server=\$!
sleep 1
timeout 60 rping -c -a $RXE_VM_IP -C 3 -v >/tmp/client 2>&1
crc=\$?
wait \$server
src=\$?
cat /tmp/client /tmp/server
[ \$crc = 0 ] && [ \$src = 0 ] || bad "rping client \$crc, server \$src"
[ "\$(grep -c '^ping data: rdma-ping-' /tmp/client)" = 3 ] || bad "rping client did not see 3 pings"
check "rping -C 3 over rxe0"

# perftest's TCP exchange and RDMA WRITEs of 64 KiB. The client goes
# once the server listens (a fixed second was sometimes too short under
# TCG); a pair whose TCP exchange failed is tried once more.
write_bw() {
	ib_write_bw -d rxe0 -x 1 -n 20 >/tmp/server 2>&1 &
	server=\$!
	for i in \$(seq 100); do
		# 18515 is 0x4853; 0A: listening.
		grep -q ':4853 [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
		sleep 0.1
	done
	timeout 60 ib_write_bw -d rxe0 -x 1 -n 20 $RXE_VM_IP >/tmp/client 2>&1
	crc=\$?
	wait \$server
	src=\$?
}
write_bw
if [ \$crc != 0 ] && grep -q "Couldn't read remote address" /tmp/client /tmp/server; then
	echo "ib_write_bw: the TCP exchange failed; once more"
	cat /tmp/client /tmp/server
	write_bw
fi
grep -A1 '#bytes' /tmp/client
[ \$crc = 0 ] && [ \$src = 0 ] || { cat /tmp/client /tmp/server; bad "ib_write_bw client \$crc, server \$src"; }
grep -q '^ 65536 *20 ' /tmp/client || bad "ib_write_bw did not report 20 x 65536 B"
check "ib_write_bw 20 x 64 KiB over rxe0"
exit 0
EOF

rxe_capture_start "$RXE_IF_D" "$RXE_WORK/veth.pcap"
rxe_vm_start "$RXE_CACHE" "$RXE_WORK/guest.sh" "$RXE_WORK/vm.log"
rxe_vm_wait_ready 150
rc=0
rxe_vm_wait 150 || rc=$?
rxe_capture_stop
grep -a '^guest' "$RXE_WORK/vm.log" | tr -d '\r'
[ "$rc" = 0 ] || fail "guest script: $RXE_VM_RESULT, status $rc"

arp=$(rxe_tshark "$RXE_WORK/veth.pcap" -Y "arp && arp.src.proto_ipv4 == $RXE_VM_IP" | wc -l)
req=$(rxe_tshark "$RXE_WORK/veth.pcap" -Y "icmp.type == 8 && ip.src == $RXE_VM_IP" | wc -l)
rep=$(rxe_tshark "$RXE_WORK/veth.pcap" -Y "icmp.type == 0 && ip.src == $RXE_DROCE_IP" | wc -l)
echo "capture on $RXE_IF_D: $arp ARP from the guest, $req echo requests, $rep echo replies"
[ "$arp" -ge 1 ] || fail "no ARP from the guest on $RXE_IF_D"
[ "$req" -ge 3 ] && [ "$rep" -ge 3 ] || fail "the capture lacks the 3 echo requests and replies"
echo PASS
