#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Install the Debian 12 packages droce needs to build, test and run.
# Idempotent; runs without a terminal (CI). Needs root (or sudo).
set -euo pipefail

PACKAGES=(
	# build
	gcc pkg-config meson ninja-build
	libdpdk-dev libssl-dev libcmocka-dev zlib1g-dev libpcap-dev
	# DPDK runtime: dpdk has the PMDs, dpdk-devbind.py and
	# dpdk-hugepages.py; dpdk-dev has dpdk-testpmd (the benchmarks'
	# baseline) and dpdk-telemetry.py; rdma-core for the mlx5 PMD
	dpdk dpdk-dev python3 rdma-core ibverbs-providers libibverbs-dev
	# integration tests and the demo: kernel peers in network namespaces
	iproute2 iputils-ping ethtool procps
	# independent decoders of what droce puts on the wire
	tshark python3-scapy tcpdump
	# interop tests: a Linux soft-RoCE (rdma_rxe) peer in a qemu VM under
	# TCG, with rdma-core's own tools; tests/interop/lib.sh copies them
	# into the guest's initramfs (the guest kernel is fetched there with
	# apt-get download, never installed on the host)
	qemu-system-x86 busybox-static kmod cpio
	ibverbs-utils rdmacm-utils perftest
	# the fuzz targets: clang with libFuzzer
	clang libclang-rt-14-dev
)

# Programs the tests call by name, each with its package: one that is
# missing after the install is an error here, never a skipped test later.
COMMANDS=(
	dpdk-testpmd:dpdk-dev dpdk-telemetry.py:dpdk-dev
	dpdk-devbind.py:dpdk dpdk-hugepages.py:dpdk
	ip:iproute2 ping:iputils-ping ethtool:ethtool tshark:tshark clang:clang
	tcpdump:tcpdump qemu-system-x86_64:qemu-system-x86 busybox:busybox-static
	depmod:kmod cpio:cpio ibv_rc_pingpong:ibverbs-utils rping:rdmacm-utils
	ib_write_bw:perftest
)

check_commands() {
	local c bad=0
	for c in "${COMMANDS[@]}"; do
		command -v "${c%%:*}" >/dev/null && continue
		echo "droce-deps: ${c%%:*} is not on PATH although package ${c#*:} is installed" >&2
		bad=1
	done
	return $bad
}

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	check_commands
	echo "droce-deps: all ${#PACKAGES[@]} packages are installed"
	exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "droce-deps: run as root (or install sudo)" >&2; exit 1; }
	SUDO=sudo
fi
echo "droce-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
check_commands
