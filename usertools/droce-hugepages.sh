#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# Hugepages for droce, around DPDK's dpdk-hugepages.py:
#   droce-hugepages.sh [show]              what is reserved and mounted
#   droce-hugepages.sh reserve SIZE [2M|1G] reserve SIZE (e.g. 2G) and mount
#   droce-hugepages.sh clear               release and unmount
# Without hugepages droce runs too: give the EAL --no-huge -m MB.
set -euo pipefail
read -ra HUGEPAGES <<<"${DPDK_HUGEPAGES:-dpdk-hugepages.py}"

usage() {
	sed -n 's/^#   //p' "$0"
	exit "${1:-0}"
}

cmd=${1:-show}
[ $# -gt 0 ] && shift
case $cmd in
show)
	exec "${HUGEPAGES[@]}" --show
	;;
reserve)
	[ $# -ge 1 ] && [ $# -le 2 ] || usage 2
	size=$1
	page=${2:-2M}
	[[ $size =~ ^[1-9][0-9]*[KMG]$ ]] ||
		{ echo "droce-hugepages: size '$size': allowed: a number with K, M or G, e.g. 2G" >&2; exit 2; }
	[[ $page == 2M || $page == 1G ]] ||
		{ echo "droce-hugepages: page size '$page': allowed: 2M or 1G" >&2; exit 2; }
	exec "${HUGEPAGES[@]}" --pagesize "$page" --setup "$size"
	;;
clear)
	exec "${HUGEPAGES[@]}" --clear --unmount
	;;
-h|--help|help)
	usage 0
	;;
*)
	echo "droce-hugepages: unknown command '$cmd'" >&2
	usage 2
	;;
esac
