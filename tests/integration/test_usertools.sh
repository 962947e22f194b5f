#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The NIC-binding and hugepage helpers, and the test command's bookkeeping.
# dpdk-devbind.py is replaced by echo here, so that no test can ever rebind
# a NIC of this machine; what is checked is what the helper would ask it to
# do, and what it refuses.
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

# droce-test.sh runs every stage after a failure, closes with a line per
# stage and exits non-zero. It runs here in a copy of the tree whose
# helpers (and meson) are a stub: the stub logs its stage, fails the stage
# named in STUB_FAIL, and leaves a runtime folder when STUB_LEAVE is set.
fake=$(mktemp -d /tmp/droce-test-stub.XXXXXX)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/usertools" "$fake/bin" "$fake/rundir"
cp "$top/usertools/droce-test.sh" "$fake/usertools/"
cat >"$fake/bin/stub" <<'STUB'
#!/usr/bin/env bash
case $(basename "$0") in
droce-deps.sh) s=deps ;;
droce-build.sh) s=$1 ;;                 # build or build-asan
droce-fuzz.sh) s=fuzz ;;
# meson test -C DIR [TEST]: the whole build's, the sanitized unit suite, or hcom_stress
meson) if [ "$(basename "$3")" = build ]; then s=tests
	elif [ "${4:-}" = hcom_stress ]; then s=asan-hcom
	else s=asan-tests; fi ;;
esac
echo "$s" >>"$STUB_LOG"
[ "$s" != tests ] || [ -z "${STUB_LEAVE:-}" ] || mkdir "$DROCE_TEST_RUNDIR/droce-left-behind"
[ "$s" != "$STUB_FAIL" ]
STUB
chmod +x "$fake/bin/stub"
for name in droce-deps.sh droce-build.sh droce-fuzz.sh; do
	ln -s "$fake/bin/stub" "$fake/usertools/$name"
done
ln -s "$fake/bin/stub" "$fake/bin/meson"
# run_test FAIL [LEAVE]: droce-test.sh with stage FAIL failing; sets rc, out, ran.
run_test() {
	rc=0
	rm -f "$fake/ran"
	rm -rf "$fake/rundir"/*
	out=$(PATH=$fake/bin:$PATH STUB_LOG=$fake/ran STUB_FAIL=$1 STUB_LEAVE=${2:-} \
		DROCE_TEST_RUNDIR=$fake/rundir "$fake/usertools/droce-test.sh" 2>&1) || rc=$?
	ran=$(tr '\n' ' ' <"$fake/ran")
}
# closing NAME OUTCOME: droce-test.sh's closing line for stage NAME.
closing() {
	echo "$out" | grep -Eq "^  $1 +$2\$" ||
		fail "droce-test.sh, $case_name: no closing line '$1 $2' in:
$out"
}
case_name="tests failing"
run_test tests
[ "$ran" = "deps build build-asan tests asan-tests asan-hcom fuzz " ] ||
	fail "droce-test.sh, $case_name: ran '$ran', expected every stage"
[ "$rc" != 0 ] || fail "droce-test.sh, $case_name: exit status 0"
closing deps passed; closing build passed; closing build-asan passed
closing tests FAILED; closing asan-tests passed; closing asan-hcom passed; closing fuzz passed
closing runtime-folders passed
case_name="build failing"
run_test build
[ "$ran" = "deps build build-asan asan-tests asan-hcom " ] ||
	fail "droce-test.sh, $case_name: ran '$ran', expected no tests or fuzz on the failed build"
[ "$rc" != 0 ] || fail "droce-test.sh, $case_name: exit status 0"
closing build FAILED; closing asan-tests passed
closing tests "skipped: needs build, which FAILED"
closing fuzz "skipped: needs build, which FAILED"
case_name="a runtime folder left behind"
run_test none leave
[ "$rc" != 0 ] || fail "droce-test.sh, $case_name: exit status 0"
closing tests passed; closing runtime-folders FAILED
echo "$out" | grep -q "droce-left-behind" || fail "droce-test.sh, $case_name: the folder is not named: $out"
case_name="all passing"
run_test none
[ "$rc" = 0 ] || fail "droce-test.sh, $case_name: exit status $rc: $out"
echo "$out" | grep -q "^droce-test: all tests passed$" || fail "droce-test.sh, $case_name: $out"
echo "droce-test.sh: every stage runs after a failure, each has its closing line"
echo PASS
