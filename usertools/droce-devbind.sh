#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# NIC binding for droce, around DPDK's dpdk-devbind.py:
#   droce-devbind.sh [status]              NICs and the drivers they use
#   droce-devbind.sh bind DRIVER DEV...    bind PCI devices (or interfaces)
#   droce-devbind.sh unbind DEV...         give them back to no driver
# It refuses to touch the NIC that carries the default route: that would
# cut the machine off. mlx5 NICs need no binding (the mlx5 PMD works on
# top of mlx5_core); the script says so instead of unbinding them.
set -euo pipefail
read -ra DEVBIND <<<"${DPDK_DEVBIND:-dpdk-devbind.py}"

usage() {
	sed -n 's/^#   //p' "$0"
	exit "${1:-0}"
}

# iface_pci IF: the PCI device under interface IF (virtio-net sits one
# level below its PCI function, so walk up the device path).
iface_pci() {
	local path
	path=$(readlink -f "/sys/class/net/$1/device" 2>/dev/null) || return 1
	while [ "$path" != / ] && [ -n "$path" ]; do
		if [[ $(basename "$path") =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]]; then
			basename "$path"
			return 0
		fi
		path=$(dirname "$path")
	done
	return 1
}

# pci_of DEV: the PCI address of a PCI address or an interface name.
pci_of() {
	local dev=$1
	if [[ $dev =~ ^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$ ]]; then
		[[ $dev == *:*:* ]] || dev=0000:$dev
		echo "${dev,,}"
	elif iface_pci "$dev"; then
		:
	else
		echo "droce-devbind: '$dev' is neither a PCI address (0000:03:00.0) nor a PCI network interface" >&2
		return 1
	fi
}

# The PCI addresses under the default routes (IPv4 and IPv6).
default_route_pcis() {
	local ifc pci
	for ifc in $( { ip -4 route show default; ip -6 route show default; } 2>/dev/null |
		      sed -n 's/.* dev \([^ ]*\).*/\1/p' | sort -u); do
		pci=$(iface_pci "$ifc") && echo "$pci $ifc"
	done
	return 0
}

check_safe() {
	local pci=$1 routes
	routes=$(default_route_pcis)
	if echo "$routes" | grep -q "^$pci "; then
		echo "droce-devbind: refusing: $pci ($(echo "$routes" | grep "^$pci " | cut -d' ' -f2)) carries the default route; binding it would cut this machine off the network" >&2
		return 1
	fi
	if [ -e "/sys/bus/pci/devices/$pci/driver" ] &&
	   [ "$(basename "$(readlink -f "/sys/bus/pci/devices/$pci/driver")")" = mlx5_core ]; then
		echo "droce-devbind: $pci uses mlx5_core: the mlx5 PMD needs no binding; use it as is (-a $pci)" >&2
		return 2
	fi
}

cmd=${1:-status}
[ $# -gt 0 ] && shift
case $cmd in
status)
	exec "${DEVBIND[@]}" --status-dev net
	;;
bind|unbind)
	driver=
	if [ "$cmd" = bind ]; then
		[ $# -ge 2 ] || usage 2
		driver=$1
		shift
	fi
	[ $# -ge 1 ] || usage 2
	pcis=()
	for dev in "$@"; do
		pci=$(pci_of "$dev")
		rc=0
		check_safe "$pci" || rc=$?
		[ "$rc" = 2 ] && continue
		[ "$rc" = 0 ] || exit 1
		pcis+=("$pci")
	done
	[ ${#pcis[@]} -gt 0 ] || exit 0
	if [ "$driver" = vfio-pci ] && [ ! -d /sys/bus/pci/drivers/vfio-pci ]; then
		modprobe vfio-pci
	fi
	if [ "$cmd" = bind ]; then
		"${DEVBIND[@]}" --bind "$driver" "${pcis[@]}"
	else
		"${DEVBIND[@]}" --unbind "${pcis[@]}"
	fi
	;;
-h|--help|help)
	usage 0
	;;
*)
	echo "droce-devbind: unknown command '$cmd'" >&2
	usage 2
	;;
esac
