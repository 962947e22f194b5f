#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# droce's RC transport against Linux soft-RoCE, with rdma-core's own tools
# in the rig's VM as the peer (lib.sh): ibv_rc_pingpong as client against
# droce-rc's server and as server against droce-rc's client, at 64, 1024
# (one MTU), 4096 (four packets) and 10000 bytes (ten packets, the last
# one short); then ib_write_bw, ib_read_bw and ib_send_bw as clients of
# droce-rc's perftest server. droce-rc's ping-pong client sends payloads
# of 1 KiB and more from its MR (--zero-copy on: chained mbufs, which
# net_af_packet reads into its ring); its server copies them. A capture
# on the veth holds one ping-pong and
# the three bw runs: tshark finds no malformed packet and decodes every
# RoCEv2 frame, and every ICRC is right (roce_icrc.py: tshark 4.0 does not
# check it).
#
# TCP goes to the kernel in droce's namespace, at 198.18.0.3 on droce's
# veth (droce takes 198.18.0.1 and leaves frames for other addresses to
# the kernel, which leaves RoCE for .1 to droce). The VM gets cpu 1 and
# droce-rc cpu 0, so that droce's pollers do not slow the emulated cpu.
. "$(dirname "$0")/lib.sh"

RC=${DROCE_RC:?set DROCE_RC to the droce-rc binary}
[ -x "$RC" ] || fail "no droce-rc at $RC"
KERNEL_IP=198.18.0.3
SIZES="64 1024 4096 10000"
ITERS=200
BW_SIZE=65536
BW_ITERS=20
RC_PREFIX=droce-i$TAG-rc
CAPTURED_SIZE=10000

rxe_vm_build "$RXE_CACHE"
rxe_topo_up
ip -n "$RXE_NS_D" addr add "$KERNEL_IP/24" dev "$RXE_IF_D"
rxe_at_exit "rm -rf /var/run/dpdk/$RC_PREFIX"

# The guest runs the tools in the order the host runs droce-rc; a client
# tries again while droce-rc is not listening yet (it starts a moment
# after the previous run ended).
cat >"$RXE_WORK/guest.sh" <<EOF
#!/bin/sh
set -u
say() { echo "guest: \$*"; }
bad() { echo "guest FAIL: \$*"; exit 1; }

client() {
	n=0
	untimed=0
	while :; do
		timeout 300 "\$@" >/tmp/out 2>&1 && return 0
		rc=\$?
		n=\$((n + 1))
		# perftest fits the cpu's clock rate for its report, and an
		# emulated cpu on a busy host can fail that fit ("r^2 < 0.9"): it
		# then leaves without its report. The host runs droce-rc again.
		if grep -q "Can't produce a report" /tmp/out && [ \$untimed = 0 ]; then
			untimed=1
			say "\$1 could not time its run (perftest: Can't produce a report); once more"
			continue
		fi
		if ! grep -q "Couldn't connect" /tmp/out || [ \$n -gt 240 ]; then
			cat /tmp/out
			return \$rc
		fi
		sleep 0.5
	done
}

# pp_check SIZE ROLE: both of ibv_rc_pingpong's result lines, as counted.
pp_check() {
	grep -q "^\$((\$1 * $ITERS * 2)) bytes in " /tmp/out && grep -q "^$ITERS iters in " /tmp/out ||
		{ cat /tmp/out; bad "ibv_rc_pingpong \$2 -s \$1: not $ITERS iterations"; }
	say "ibv_rc_pingpong \$2 -s \$1: \$(grep ' iters in ' /tmp/out)"
}

for s in $SIZES; do
	client ibv_rc_pingpong -d rxe0 -g 1 -s \$s -n $ITERS $KERNEL_IP ||
		bad "ibv_rc_pingpong client -s \$s against droce-rc failed"
	pp_check \$s client
done
for s in $SIZES; do
	timeout 300 ibv_rc_pingpong -d rxe0 -g 1 -s \$s -n $ITERS >/tmp/out 2>&1 ||
		{ cat /tmp/out; bad "ibv_rc_pingpong server -s \$s against droce-rc failed"; }
	pp_check \$s server
done
for t in write read send; do
	client ib_\${t}_bw -d rxe0 -x 1 -s $BW_SIZE -n $BW_ITERS $KERNEL_IP ||
		bad "ib_\${t}_bw against droce-rc failed"
	grep -q "^ $BW_SIZE  *$BW_ITERS  " /tmp/out ||
		{ cat /tmp/out; bad "ib_\${t}_bw did not report $BW_ITERS x $BW_SIZE B"; }
	say "ib_\${t}_bw: \$(grep "^ $BW_SIZE  *$BW_ITERS  " /tmp/out | tr -s ' ')"
done
exit 0
EOF

# droce_rc_run NAME ARGS...: one droce-rc run on cpu 0 in droce's
# namespace; its exit status.
droce_rc_run() {
	local name=$1
	shift
	ip netns exec "$RXE_NS_D" taskset -c 0 timeout 300 "$RC" --no-pci --no-huge -m 256 \
		--file-prefix "$RC_PREFIX" "--vdev=net_af_packet0,iface=$RXE_IF_D,qpairs=2" -- \
		"$@" --timeout 60 port.0.device=net_af_packet0 port.0.address=$RXE_DROCE_IP/24 \
		>"$RXE_WORK/$name.log" 2>&1
}

# droce_rc NAME ARGS...: droce_rc_run, failing the test unless it exits 0.
droce_rc() {
	local name=$1 rc=0
	droce_rc_run "$@" || rc=$?
	droce_rc_check "$name" "$rc"
}

droce_rc_check() {
	local name=$1 rc=$2
	if [ "$rc" != 0 ]; then
		grep -v '^EAL: ' "$RXE_WORK/$name.log" | tail -30
		fail "droce-rc $name: exit status $rc"
	fi
	RC_LINE=$(grep -E ' iters in |^droce-rc: perftest [a-z]*: (the client reports|[0-9]* messages)' \
		"$RXE_WORK/$name.log" || true)
	echo "droce-rc $name: $RC_LINE"
}

# pp_expect NAME SIZE: droce-rc's ping-pong counted as ibv_rc_pingpong does.
pp_expect() {
	grep -q "^$(($2 * ITERS * 2)) bytes in " "$RXE_WORK/$1.log" &&
		grep -q "^$ITERS iters in " "$RXE_WORK/$1.log" ||
		fail "droce-rc $1: not $ITERS iterations of $2 bytes"
	grep -q "bad ICRC 0," "$RXE_WORK/$1.log" || fail "droce-rc $1: packets with a bad ICRC came"
}

# sent_from_mr NAME: droce-rc's run sent payloads from its MR (zero copy).
sent_from_mr() {
	grep -Eq "packets \([1-9][0-9]* sent from their MR\)" "$RXE_WORK/$1.log" ||
		fail "droce-rc $1: no packet was sent from its MR (--zero-copy on)"
}

# check_capture FILE: no malformed packet, every RoCEv2 frame decoded as
# InfiniBand, both sides sent, every ICRC right.
check_capture() {
	local file=$1 roce ib malformed
	roce=$(rxe_tshark "$file" -Y "udp.dstport == 4791" | wc -l)
	ib=$(rxe_tshark "$file" -Y "infiniband.bth.opcode" | wc -l)
	malformed=$(rxe_tshark "$file" -Y "_ws.malformed || _ws.expert.severity >= error" | wc -l)
	echo "capture $(basename "$file"): $roce RoCEv2 frames, $ib decoded as InfiniBand, $malformed malformed"
	[ "$roce" -gt 0 ] || fail "$file holds no RoCEv2 frame"
	[ "$malformed" = 0 ] || {
		rxe_tshark "$file" -Y "_ws.malformed || _ws.expert.severity >= error" | head
		fail "$file: malformed packets"
	}
	[ "$roce" = "$ib" ] || fail "$file: $((roce - ib)) RoCEv2 frames tshark did not decode as InfiniBand"
	python3 "$(dirname "$0")/roce_icrc.py" "$file" | tee "$file.icrc" ||
		fail "$file: RoCEv2 frames with a wrong ICRC"
	grep -q "^$RXE_DROCE_IP sent" "$file.icrc" && grep -q "^$RXE_VM_IP sent" "$file.icrc" ||
		fail "$file: RoCEv2 frames of only one side"
}

rxe_vm_start "$RXE_CACHE" "$RXE_WORK/guest.sh" "$RXE_WORK/vm.log"
# The emulated cpu on cpu 1, droce-rc on cpu 0: each its own.
taskset -a -p -c 1 "$RXE_VM_PID" >/dev/null || echo "interop: could not pin qemu to cpu 1"
rxe_vm_wait_ready 150
t0=$SECONDS

echo "== ibv_rc_pingpong client in the VM, droce-rc server"
for s in $SIZES; do
	if [ "$s" = "$CAPTURED_SIZE" ]; then
		rxe_capture_start "$RXE_IF_BP" "$RXE_WORK/pingpong.pcap" "$RXE_NS_BR"
	fi
	droce_rc "pp-server-$s" pingpong --server -s "$s" -n "$ITERS"
	if [ "$s" = "$CAPTURED_SIZE" ]; then
		sleep 1 # as below
		rxe_capture_stop
	fi
	pp_expect "pp-server-$s" "$s"
done

echo "== ibv_rc_pingpong server in the VM, droce-rc client"
for s in $SIZES; do
	droce_rc "pp-client-$s" pingpong --connect "$RXE_VM_IP" -s "$s" -n "$ITERS" --zero-copy on
	pp_expect "pp-client-$s" "$s"
	[ "$s" -lt 1024 ] || sent_from_mr "pp-client-$s"
done

echo "== ib_write_bw, ib_read_bw, ib_send_bw in the VM, droce-rc perftest server"
rxe_capture_start "$RXE_IF_BP" "$RXE_WORK/bw.pcap" "$RXE_NS_BR"
for t in write read send; do
	name=perftest-$t
	rc=0
	droce_rc_run "$name" perftest "$t" -s "$BW_SIZE" -n "$BW_ITERS" || rc=$?
	# Once, where the guest's perftest could not time its run and so
	# left without its report (the guest says so on its console).
	if [ "$rc" != 0 ] &&
	   grep -q "closed the TCP connection after 0 of" "$RXE_WORK/$name.log"; then
		for w in $(seq 20); do
			grep -aq "ib_${t}_bw could not time its run" "$RXE_WORK/vm.log" && break
			sleep 0.5
		done
		if grep -aq "ib_${t}_bw could not time its run" "$RXE_WORK/vm.log"; then
			echo "droce-rc $name: the guest's perftest could not time its run; once more"
			name=perftest-$t-again
			rc=0
			droce_rc_run "$name" perftest "$t" -s "$BW_SIZE" -n "$BW_ITERS" || rc=$?
		fi
	fi
	droce_rc_check "$name" "$rc"
	grep -q "bad ICRC 0," "$RXE_WORK/$name.log" ||
		fail "droce-rc perftest $t: packets with a bad ICRC came"
done
# tcpdump may not have written the last frames when droce-rc exits; a
# second for it to catch up before it stops.
sleep 1
rxe_capture_stop

rc=0
rxe_vm_wait 120 || rc=$?
grep -a '^guest' "$RXE_WORK/vm.log" | tr -d '\r'
[ "$rc" = 0 ] || fail "guest script: $RXE_VM_RESULT, status $rc"
echo "the runs took $((SECONDS - t0)) s"

check_capture "$RXE_WORK/pingpong.pcap"
check_capture "$RXE_WORK/bw.pcap"
echo PASS
