#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The NIC-binding and hugepage helpers. dpdk-devbind.py is replaced by echo
# here, so that no test can ever rebind a NIC of this machine; what is
# checked is what the helper would ask it to do, and what it refuses.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
devbind=$top/usertools/droce-devbind.sh
huge=$top/usertools/droce-hugepages.sh
export DPDK_DEVBIND="echo WOULD-RUN"
fail() { echo "FAIL: $*"; exit 1; }

# The interface of the default route is refused, by name and by PCI address.
gw_if=$(ip -4 route show default 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
if [ -n "$gw_if" ] && [ -e "/sys/class/net/$gw_if/device" ]; then
	out=$("$devbind" bind vfio-pci "$gw_if" 2>&1) && fail "bound the default-route interface: $out"
	echo "$out" | grep -q "carries the default route" || fail "no reason given: $out"
	echo "$out" | grep -q WOULD-RUN && fail "dpdk-devbind.py was called: $out"
	pci=$(echo "$out" | sed -n 's/.*refusing: \([^ ]*\) .*/\1/p')
	out=$("$devbind" unbind "$pci" 2>&1) && fail "unbound $pci: $out"
	echo "$out" | grep -q WOULD-RUN && fail "dpdk-devbind.py was called for $pci"
	echo "default route on $gw_if ($pci): refused"
else
	echo "no PCI NIC carries a default route here; refusal not exercised"
fi

# Another device goes through to dpdk-devbind.py (here: echo).
out=$("$devbind" bind uio_pci_generic ff:1f.7 2>&1) || fail "bind: $out"
[ "$out" = "WOULD-RUN --bind uio_pci_generic 0000:ff:1f.7" ] || fail "bind ran: $out"
out=$("$devbind" unbind 0000:ff:1f.6 2>&1) || fail "unbind: $out"
[ "$out" = "WOULD-RUN --unbind 0000:ff:1f.6" ] || fail "unbind ran: $out"
out=$("$devbind" bind vfio-pci no-such-nic0 2>&1) && fail "accepted a bogus device"
echo "$out" | grep -q "neither a PCI address" || fail "bogus device: $out"
"$devbind" bind vfio-pci >/dev/null 2>&1 && fail "bind without a device succeeded"
"$devbind" frobnicate >/dev/null 2>&1 && fail "unknown command succeeded"

# Hugepages: input is checked before dpdk-hugepages.py runs.
out=$("$huge" reserve 2X 2>&1) && fail "accepted size 2X"
echo "$out" | grep -q "allowed: a number with K, M or G" || fail "size message: $out"
out=$("$huge" reserve 2G 4M 2>&1) && fail "accepted page size 4M"
echo "$out" | grep -q "allowed: 2M or 1G" || fail "page size message: $out"
DPDK_HUGEPAGES="echo WOULD-RUN" "$huge" reserve 2G 1G | grep -qx "WOULD-RUN --pagesize 1G --setup 2G" ||
	fail "reserve did not ask dpdk-hugepages.py for 2G of 1G pages"
if command -v dpdk-hugepages.py >/dev/null; then
	"$huge" show >/dev/null || fail "show"
fi
echo PASS
