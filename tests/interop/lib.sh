# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Shared by the interop tests: a Linux soft-RoCE (rdma_rxe) peer in a qemu
# VM under TCG (this machine has no KVM, and its own kernel no rxe), with
# rdma-core's tools inside, on a bridge that droce reaches through a veth.
# Facts behind it: shared/reference/rc-cm-rpc-facts.md sections 6 and 7.
#
#   ns RXE_NS_BR: bridge RXE_BR -- tap RXE_TAP -- qemu (guest eth0 198.18.0.2)
#                        \-- veth RXE_IF_BP
#                               |
#   ns RXE_NS_D:         veth RXE_IF_D (droce's net_af_packet port, 198.18.0.1)
#
# The guest (Debian 12's kernel, busybox, rdma-core) is built once and
# cached in /var/cache/droce-interop (DROCE_INTEROP_CACHE overrides it):
# outside any meson build dir, so every build dir and every rebuild shares
# one download. Remove the directory to rebuild it.
#
# Usage in a test:
#   . "$(dirname "$0")/lib.sh"
#   rxe_vm_build "$RXE_CACHE"            # skips (77) where qemu cannot run
#   rxe_topo_up
#   rxe_vm_start "$RXE_CACHE" guest.sh "$RXE_WORK/vm.log"
#   rc=0; rxe_vm_wait 240 || rc=$?       # guest.sh's exit status
# Everything created here is removed on exit, whatever the outcome (but
# RXE_WORK, with the console logs and captures, stays where
# DROCE_INTEROP_KEEP is set).

set -euo pipefail

TAG=$$
RXE_CACHE=${DROCE_INTEROP_CACHE:-/var/cache/droce-interop}
RXE_NS_BR=droce-i$TAG-br    # bridge, tap and qemu
RXE_NS_D=droce-i$TAG-d      # droce's side
RXE_BR=dri${TAG}b
RXE_TAP=dri${TAG}t
RXE_IF_BP=dri${TAG}p        # veth end on the bridge
RXE_IF_D=dri${TAG}d         # veth end in RXE_NS_D
RXE_DROCE_IP=198.18.0.1
RXE_VM_IP=198.18.0.2
RXE_VM_MAC=52:54:00:c6:12:02
RXE_WORK=$(mktemp -d /tmp/droce-interop.XXXXXX)
RXE_TOPO=0
RXE_VM_PID=
RXE_VM_LOG=
RXE_VM_RESULT=
RXE_VM_T0=
RXE_CAP_PID=
RXE_CAP_FILE=
RXE_AT_EXIT=()

# Bump when the guest's contents change: a cache with another format is
# rebuilt.
RXE_FORMAT=3
# Printed by the guest's init; rxe_vm_wait looks for them.
RXE_MARK_READY="droce-rxe-vm: ready"
RXE_MARK_EXIT="droce-rxe-vm: run.sh exit="
RXE_MARK_SETUP="droce-rxe-vm: setup failed"

# In this order (reference section 7): each needs only those before it.
# crc32_generic is essential: without it rxe gets no "crc32" shash and
# `rdma link add` fails.
RXE_MODULES=(virtio_pci_legacy_dev virtio_pci_modern_dev virtio_ring virtio
	virtio_pci failover net_failover virtio_net crc32_generic ib_core
	ib_uverbs ip6_udp_tunnel udp_tunnel rdma_rxe iw_cm ib_cm configfs
	rdma_cm rdma_ucm ib_umad)
RXE_TOOLS=(ibv_devinfo ibv_devices ibv_rc_pingpong ibv_uc_pingpong
	ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_bw ib_write_lat
	ib_read_lat ib_send_lat rping ucmatose udaddy rdma_server rdma_client
	rdma ip tcpdump)
# Host packages the guest's files come from.
RXE_PACKAGES=(busybox-static rdma-core ibverbs-utils rdmacm-utils perftest
	ibverbs-providers kmod cpio iproute2 tcpdump)

skip() { echo "SKIP: $*"; exit 77; }

fail() {
	echo "FAIL: $*"
	rxe_vm_log_tail
	exit 1
}

# rxe_at_exit COMMAND: run COMMAND (a string, eval'ed) at exit, before the
# VM and the topology go; for what a test starts itself (droce, say).
rxe_at_exit() { RXE_AT_EXIT+=("$1"); }

rxe_cleanup() {
	local c
	for c in "${RXE_AT_EXIT[@]}"; do eval "$c" || true; done
	rxe_capture_stop >/dev/null 2>&1 || true
	rxe_vm_stop || true
	rxe_topo_down
	if [ -n "${DROCE_INTEROP_KEEP:-}" ]; then
		echo "interop: kept $RXE_WORK (DROCE_INTEROP_KEEP)"
	else
		rm -rf "$RXE_WORK"
	fi
}
trap rxe_cleanup EXIT
trap 'exit 143' INT TERM HUP   # still through rxe_cleanup

# rxe_apt_install PACKAGE...: installs those not yet installed; returns
# non-zero where apt cannot.
rxe_apt_install() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "interop: installing ${missing[*]} (usertools/droce-deps.sh installs them too)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >"$RXE_WORK/apt.log" 2>&1 && return 0
	# Stale or absent package lists: refresh once.
	apt-get update -q </dev/null >>"$RXE_WORK/apt.log" 2>&1 || true
	apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >>"$RXE_WORK/apt.log" 2>&1 && return 0
	tail -5 "$RXE_WORK/apt.log"
	return 1
}

# rxe_need_host: root, a tun device and qemu (installed if apt can), or
# skip; the other packages, or fail.
rxe_need_host() {
	[ "$(id -u)" = 0 ] || skip "needs root for network namespaces, a tap and apt"
	[ -c /dev/net/tun ] || skip "needs /dev/net/tun for the VM's tap"
	command -v qemu-system-x86_64 >/dev/null || rxe_apt_install qemu-system-x86 ||
		skip "qemu-system-x86_64 is missing and apt-get cannot install qemu-system-x86"
	command -v qemu-system-x86_64 >/dev/null ||
		skip "qemu-system-x86_64 is not on PATH after installing qemu-system-x86"
	command -v ethtool >/dev/null || rxe_apt_install ethtool ||
		fail "needs ethtool (usertools/droce-deps.sh installs it)"
	rxe_apt_install "${RXE_PACKAGES[@]}" ||
		fail "cannot install ${RXE_PACKAGES[*]} (run usertools/droce-deps.sh)"
}

# rxe_kernel_package: the Debian 12 kernel image package apt offers now:
# the one linux-image-amd64 depends on, else the newest 6.1.0-N.
rxe_kernel_package() {
	local p
	p=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -1)
	[ -n "$p" ] || p=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		awk '{print $1}' | sort -V | tail -1)
	echo "$p"
}

# rxe_copy_elf ROOT FILE...: each FILE (links followed, name kept) into
# ROOT in its directory's real path, with the shared libraries ldd names,
# likewise: a library keeps the name ldd gives (its soname), which is what
# the guest's loader looks for.
rxe_copy_elf() {
	local root=$1 f lib dir
	shift
	for f in "$@"; do
		dir=$(readlink -f "$(dirname "$f")")
		mkdir -p "$root$dir"
		cp -L "$f" "$root$dir/$(basename "$f")"
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
			dir=$(readlink -f "$(dirname "$lib")")
			[ -e "$root$dir/$(basename "$lib")" ] && continue
			mkdir -p "$root$dir"
			cp -L "$lib" "$root$dir/$(basename "$lib")"
		done
	done
}

# rxe_vm_build DIR: a guest kernel (DIR/vmlinuz) and initramfs
# (DIR/initrd.gz), kept and reused while DIR/stamp says they are complete
# and of this RXE_FORMAT. Skips (77) where qemu or the kernel cannot be had.
rxe_vm_build() {
	local dir=${1:?rxe_vm_build DIR} lockfd pkg deb kver b root m ko t0 t d
	rxe_need_host
	if [ "$(cat "$dir/stamp" 2>/dev/null)" = "format $RXE_FORMAT" ] &&
		[ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.gz" ]; then
		echo "interop: guest from $dir (kernel $(cat "$dir/kver"))"
		return 0
	fi
	mkdir -p "$dir"
	# Two tests building at once would write the same files.
	exec {lockfd}>"$dir/.lock"
	flock -w 900 "$lockfd" || fail "could not lock $dir/.lock within 900 s"
	if [ "$(cat "$dir/stamp" 2>/dev/null)" = "format $RXE_FORMAT" ]; then
		exec {lockfd}>&-
		return 0
	fi
	t0=$SECONDS
	rm -f "$dir/stamp"
	pkg=$(rxe_kernel_package)
	[ -n "$pkg" ] || { apt-get update -q </dev/null >/dev/null 2>&1 || true; pkg=$(rxe_kernel_package); }
	[ -n "$pkg" ] || skip "apt offers no linux-image-6.1.0-*-amd64 for the guest"
	deb=$(ls "$dir/$pkg"_*.deb 2>/dev/null | tail -1 || true)
	if [ -z "$deb" ]; then
		echo "interop: downloading $pkg for the guest (not installed here)"
		rm -f "$dir"/linux-image-*.deb
		# apt-get download writes to the current directory; its _apt
		# sandbox cannot write to a root-only one, and it only warns.
		(cd "$dir" && apt-get download -q "$pkg" </dev/null >"$RXE_WORK/apt.log" 2>&1) ||
			(apt-get update -q </dev/null >/dev/null 2>&1 && cd "$dir" &&
				apt-get download -q "$pkg" </dev/null >"$RXE_WORK/apt.log" 2>&1) ||
			{ tail -3 "$RXE_WORK/apt.log"; skip "cannot download $pkg for the guest"; }
		deb=$(ls "$dir/$pkg"_*.deb | tail -1)
	fi
	kver=${pkg#linux-image-}
	b=$dir/build.$$
	root=$b/root
	rm -rf "$dir"/build.*
	mkdir -p "$b/k" "$root"
	dpkg-deb -x "$deb" "$b/k"
	# modinfo finds the modules below by name through depmod's index.
	depmod -b "$b/k" "$kver"

	# A merged-/usr tree like the host's, so every path ldd prints works.
	mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{proc,sys,dev,tmp,run,etc,root}
	for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
	cp /bin/busybox "$root/usr/bin/busybox"
	local tools=() tool
	for tool in "${RXE_TOOLS[@]}"; do
		t=$(command -v "$tool") ||
			fail "$tool is missing on the host (its package is in RXE_PACKAGES)"
		tools+=("$t")
	done
	rxe_copy_elf "$root" "${tools[@]}"
	# Opened with dlopen, so ldd does not name them: the rxe provider
	# (and the file telling libibverbs about it), and libgcc_s, without
	# which glibc aborts rping at disconnect (pthread_cancel unwinds).
	rxe_copy_elf "$root" /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so \
		/lib/x86_64-linux-gnu/libgcc_s.so.1
	mkdir -p "$root/etc/libibverbs.d"
	cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
	# tcpdump drops root for its own user.
	printf 'root:x:0:0:root:/root:/bin/sh\ntcpdump:x:100:100::/:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\ntcpdump:x:100:\n' >"$root/etc/group"

	# Modules: each in the list, or built in; a dependency outside the
	# list (another kernel's layout) is an error here, not a guest that
	# cannot create rxe0.
	local mdir=$root/usr/lib/modules/$kver have=" "
	mkdir -p "$mdir"
	: >"$root/modules"
	for m in "${RXE_MODULES[@]}"; do
		ko=$(modinfo -b "$b/k" -k "$kver" -n "$m" 2>/dev/null) ||
			fail "kernel $kver has no module $m"
		case $ko in
		(builtin) have+="$m "; continue ;;
		(*.ko) ;;
		(*) fail "module $m is $ko: not a plain .ko, which busybox insmod needs" ;;
		esac
		local dep
		for dep in $(modinfo -b "$b/k" -k "$kver" -F depends "$m" | tr ',' ' '); do
			case $have in (*" $dep "*) ;; (*) fail "module $m needs $dep, not before it in RXE_MODULES" ;; esac
		done
		cp "$ko" "$mdir/"
		echo "/lib/modules/$kver/$(basename "$ko")" >>"$root/modules"
		have+="$m "
	done
	cp "$b/k/boot/vmlinuz-$kver" "$b/vmlinuz"

	rxe_guest_init >"$root/init"
	chmod 755 "$root/init"
	# The kernel reads concatenated archives; the per-run one rxe_vm_start
	# appends must start on a 4-byte boundary, hence the padding.
	(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -6 >"$b/initrd.gz"
	truncate -s %4 "$b/initrd.gz"
	mv -f "$b/vmlinuz" "$b/initrd.gz" "$dir/"
	echo "$kver" >"$dir/kver"
	rm -rf "$b"
	echo "format $RXE_FORMAT" >"$dir/stamp"
	exec {lockfd}>&-
	echo "interop: built guest in $dir (kernel $kver, initrd $(du -h "$dir/initrd.gz" | cut -f1), $((SECONDS - t0)) s)"
}

# The guest's /init: mounts, modules, eth0 with the address from the
# kernel command line (droce_ip=), rxe0 on it, then /run.sh (in /tmp, a
# tmpfs); its exit status goes to the console in one line (one write, so
# kernel messages cannot split it), then the VM powers off.
rxe_guest_init() {
	cat <<EOF
#!/usr/bin/busybox sh
export PATH=/usr/sbin:/usr/bin
/usr/bin/busybox --install -s /usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
setup_failed() {
	echo "$RXE_MARK_SETUP: \$*"
	poweroff -f
	sleep 60
}
ip=
for a in \$(cat /proc/cmdline); do
	case \$a in (droce_ip=*) ip=\${a#droce_ip=} ;; esac
done
for m in \$(cat /modules); do
	insmod \$m || setup_failed "insmod \$m"
done
ip link set lo up
ip addr add "\$ip" dev eth0 || setup_failed "address \$ip on eth0"
ip link set eth0 up || setup_failed "eth0 up"
rdma link add rxe0 type rxe netdev eth0 || setup_failed "rdma link add rxe0"
# The carrier comes a moment after "up"; a peer that starts at "ready"
# must find eth0 passing frames.
n=0
until [ "\$(cat /sys/class/net/eth0/operstate)" = up ]; do
	n=\$((n + 1))
	[ \$n -le 100 ] || setup_failed "eth0 not up within 10 s"
	sleep 0.1
done
echo "$RXE_MARK_READY after \$(cut -d' ' -f1 /proc/uptime) s of guest time"
cd /tmp
sh /run.sh
echo "$RXE_MARK_EXIT\$?"
poweroff -f
sleep 60
EOF
}

# rxe_topo_up: the two namespaces, the bridge, the tap, the veth; no
# addresses (the droce side's is droce's, or a test's).
rxe_topo_up() {
	rxe_need_host
	ip netns add "$RXE_NS_BR"
	RXE_TOPO=1
	ip netns add "$RXE_NS_D"
	local ns
	for ns in "$RXE_NS_BR" "$RXE_NS_D"; do
		# No IPv6 chatter from this side (the guest keeps its IPv6:
		# rxe's GID 0 is its link-local address, so the IPv4 one is 1).
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
		ip -n "$ns" link set lo up
	done
	# No snooping: the bridge would send IGMP of its own to droce.
	ip -n "$RXE_NS_BR" link add "$RXE_BR" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
	ip -n "$RXE_NS_BR" tuntap add dev "$RXE_TAP" mode tap
	ip link add "$RXE_IF_D" type veth peer name "$RXE_IF_BP"
	ip link set "$RXE_IF_D" netns "$RXE_NS_D"
	ip link set "$RXE_IF_BP" netns "$RXE_NS_BR"
	# Real checksums: with offloads on, the kernel leaves them for
	# hardware a veth does not have, and af_packet hands droce them
	# unfinished.
	ip netns exec "$RXE_NS_D" ethtool -K "$RXE_IF_D" tx off rx off >/dev/null
	ip netns exec "$RXE_NS_BR" ethtool -K "$RXE_IF_BP" tx off rx off >/dev/null
	ip -n "$RXE_NS_BR" link set "$RXE_TAP" master "$RXE_BR"
	ip -n "$RXE_NS_BR" link set "$RXE_IF_BP" master "$RXE_BR"
	ip -n "$RXE_NS_BR" link set "$RXE_BR" up
	ip -n "$RXE_NS_BR" link set "$RXE_TAP" up
	ip -n "$RXE_NS_BR" link set "$RXE_IF_BP" up
	ip -n "$RXE_NS_D" link set "$RXE_IF_D" up
}

# rxe_topo_down: removes what rxe_topo_up made (the exit trap calls it).
rxe_topo_down() {
	[ "$RXE_TOPO" = 1 ] || return 0
	ip -n "$RXE_NS_BR" link del "$RXE_TAP" 2>/dev/null || true
	ip netns del "$RXE_NS_BR" 2>/dev/null || true
	ip netns del "$RXE_NS_D" 2>/dev/null || true
	RXE_TOPO=0
}

# rxe_vm_start DIR SCRIPT LOGFILE: boots DIR's guest in the background
# with SCRIPT as its /run.sh, serial console to LOGFILE (qemu's own
# messages to LOGFILE.qemu). Guest eth0 is RXE_VM_IP/24, MAC RXE_VM_MAC,
# on RXE_TAP.
rxe_vm_start() {
	local dir=${1:?rxe_vm_start DIR SCRIPT LOGFILE} script=${2:?} log=${3:?} x
	[ -s "$dir/initrd.gz" ] || fail "no guest in $dir: rxe_vm_build first"
	[ "$RXE_TOPO" = 1 ] || fail "no tap: rxe_topo_up first"
	[ -z "$RXE_VM_PID" ] || fail "a VM is running already (pid $RXE_VM_PID)"
	[ -f "$script" ] || fail "no guest script $script"
	x=$(mktemp -d "$RXE_WORK/vm.XXXX")
	mkdir "$x/root"
	cp "$script" "$x/root/run.sh"
	chmod 755 "$x/root/run.sh"
	cat "$dir/initrd.gz" >"$x/initrd"
	(cd "$x/root" && echo run.sh | cpio -o -H newc -R 0:0 --quiet) >>"$x/initrd"
	: >"$log"
	RXE_VM_LOG=$log
	RXE_VM_RESULT=
	# vnet_hdr=off: the guest then gets no checksum or segmentation
	# offload, so what it sends is on the wire complete, as droce's
	# af_packet port needs it. A link speed, or rxe warns on the console
	# at every port query that it is unknown. No stdin: qemu must not
	# read the test's.
	ip netns exec "$RXE_NS_BR" qemu-system-x86_64 -M q35 -m 1024 -smp 1 -accel tcg \
		-nodefaults -nographic -no-reboot -monitor none -serial "file:$log" \
		-kernel "$dir/vmlinuz" -initrd "$x/initrd" \
		-append "console=ttyS0 panic=-1 droce_ip=$RXE_VM_IP/24" \
		-netdev "tap,id=n0,ifname=$RXE_TAP,script=no,downscript=no,vnet_hdr=off" \
		-device "virtio-net-pci,netdev=n0,mac=$RXE_VM_MAC,speed=10000,duplex=full" \
		</dev/null >"$log.qemu" 2>&1 &
	RXE_VM_PID=$!
	RXE_VM_T0=$SECONDS
	echo "interop: VM started (qemu pid $RXE_VM_PID, kernel $(cat "$dir/kver"), console $log)"
}

# rxe_vm_log_tail: the last lines of the console and of qemu's messages.
rxe_vm_log_tail() {
	[ -n "$RXE_VM_LOG" ] && [ -f "$RXE_VM_LOG" ] || return 0
	echo "--- guest console (last 40 lines of $RXE_VM_LOG):"
	tail -40 "$RXE_VM_LOG" | tr -d '\r'
	if [ -s "$RXE_VM_LOG.qemu" ]; then
		echo "--- qemu:"
		tail -10 "$RXE_VM_LOG.qemu"
	fi
}

# rxe_vm_wait_line TEXT TIMEOUT: waits until the console holds TEXT (a
# fixed string); 0 when it does, 1 when qemu exits, the guest's setup
# fails or TIMEOUT s pass.
rxe_vm_wait_line() {
	local text=$1 timeout=$2 end=$((SECONDS + $2))
	echo "interop: waiting up to $timeout s for '$text' on the guest console"
	while [ $SECONDS -lt $end ]; do
		grep -aqF -- "$text" "$RXE_VM_LOG" && return 0
		kill -0 "$RXE_VM_PID" 2>/dev/null || { grep -aqF -- "$text" "$RXE_VM_LOG"; return; }
		grep -aqF -- "$RXE_MARK_SETUP" "$RXE_VM_LOG" && return 1
		sleep 0.5
	done
	grep -aqF -- "$text" "$RXE_VM_LOG"
}

# rxe_vm_wait_ready TIMEOUT: until rxe0 is up and /run.sh starts; for tests
# that act from droce's side while the guest script runs. Fails otherwise.
rxe_vm_wait_ready() {
	rxe_vm_wait_line "$RXE_MARK_READY" "${1:?rxe_vm_wait_ready TIMEOUT}" && {
		echo "interop: guest ready $((SECONDS - RXE_VM_T0)) s after qemu started"
		return 0
	}
	grep -aqF "$RXE_MARK_SETUP" "$RXE_VM_LOG" && fail "guest setup failed"
	kill -0 "$RXE_VM_PID" 2>/dev/null || fail "qemu exited before the guest was ready"
	fail "guest not ready within $1 s"
}

# rxe_vm_wait TIMEOUT: until /run.sh ends, then until qemu exits. Returns
# run.sh's exit status (RXE_VM_RESULT=exit); else prints the console's
# tail and returns 124 (RXE_VM_RESULT=timeout: no end within TIMEOUT s,
# qemu killed), 125 (=died: qemu exited first) or 126 (=setup: modules,
# eth0 or rxe0 failed in the guest). Guest scripts use statuses below 124.
rxe_vm_wait() {
	local timeout=${1:?rxe_vm_wait TIMEOUT} rc
	[ -n "$RXE_VM_PID" ] || fail "rxe_vm_wait: no VM started"
	if rxe_vm_wait_line "$RXE_MARK_EXIT" "$timeout"; then
		rc=$(grep -ao -- "$RXE_MARK_EXIT[0-9]*" "$RXE_VM_LOG" | head -1 | sed 's/.*=//')
		echo "interop: guest script exited $rc, $((SECONDS - RXE_VM_T0)) s after qemu started"
		RXE_VM_RESULT=exit
		# poweroff -f: qemu should go within seconds.
		local end=$((SECONDS + 30))
		while kill -0 "$RXE_VM_PID" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
		rxe_vm_stop
		return "$rc"
	fi
	if grep -aqF "$RXE_MARK_SETUP" "$RXE_VM_LOG"; then
		RXE_VM_RESULT=setup rc=126
		echo "interop: guest setup failed: $(grep -aF "$RXE_MARK_SETUP" "$RXE_VM_LOG" | head -1 | tr -d '\r')"
	elif kill -0 "$RXE_VM_PID" 2>/dev/null; then
		RXE_VM_RESULT=timeout rc=124
		echo "interop: guest script did not finish within $timeout s"
	else
		RXE_VM_RESULT=died rc=125
		echo "interop: qemu exited before the guest script finished"
	fi
	rxe_vm_log_tail
	rxe_vm_stop
	return $rc
}

# rxe_vm_stop: ends the qemu this file started (only that pid), if any.
rxe_vm_stop() {
	local pid=$RXE_VM_PID
	[ -n "$pid" ] || return 0
	RXE_VM_PID=
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

# rxe_capture_start IFACE FILE [NETNS]: tcpdump writes every frame on IFACE
# (in NETNS, default RXE_NS_D) to FILE, from when this returns.
rxe_capture_start() {
	local ifc=${1:?rxe_capture_start IFACE FILE [NETNS]} file=${2:?} ns=${3:-$RXE_NS_D}
	[ -z "$RXE_CAP_PID" ] || fail "a capture is running already"
	command -v tcpdump >/dev/null || rxe_apt_install tcpdump || fail "needs tcpdump"
	: >"$file.log"
	# -Z root: tcpdump would otherwise write FILE as user tcpdump, which
	# cannot enter a mktemp directory.
	ip netns exec "$ns" tcpdump -i "$ifc" -n -s 0 -U -Z root -w "$file" >"$file.log" 2>&1 &
	RXE_CAP_PID=$!
	RXE_CAP_FILE=$file
	for _ in $(seq 100); do
		grep -q "listening on" "$file.log" && return 0
		kill -0 "$RXE_CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$file.log"
	fail "tcpdump on $ifc did not start within 10 s"
}

# rxe_capture_stop: stops the capture (tcpdump flushes FILE on SIGINT).
rxe_capture_stop() {
	local pid=$RXE_CAP_PID
	[ -n "$pid" ] || return 0
	RXE_CAP_PID=
	kill -INT "$pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "interop: capture $RXE_CAP_FILE: $(grep -h "packets captured" "$RXE_CAP_FILE.log" || echo "no count")"
}

# rxe_tshark FILE [tshark args...]: reads FILE with RoCEv2 (UDP 4791)
# decoded as InfiniBand (fields infiniband.bth.*). Debian 12's tshark
# (4.0.17) does so without being told; the -d keeps it so for a version or
# a profile that does not.
rxe_tshark() {
	local file=${1:?rxe_tshark FILE [args]}
	shift
	tshark -r "$file" -d udp.port==4791,infiniband "$@" 2>/dev/null
}
