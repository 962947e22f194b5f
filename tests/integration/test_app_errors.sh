#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# droce's own error paths: each exits non-zero with a message that names
# what is wrong, where, and what is allowed. No network needed.
set -euo pipefail
DROCE=${DROCE:?set DROCE to the droce binary}
TAG=$$
WORK=$(mktemp -d /tmp/droce-it.XXXXXX)
trap 'rm -rf "$WORK" /var/run/dpdk/droce-err-$TAG-*' EXIT
n=0

# expect CODE NEEDLE -- ARGS...: droce ARGS exits CODE, its output has NEEDLE.
expect() {
	local code=$1 needle=$2 rc=0
	shift 3
	n=$((n + 1))
	"$DROCE" "$@" >"$WORK/out" 2>&1 || rc=$?
	if [ "$rc" != "$code" ] || ! grep -qF -- "$needle" "$WORK/out"; then
		echo "FAIL: droce $* -> exit $rc (expected $code), output:"
		cat "$WORK/out"
		echo "(expected to contain: $needle)"
		exit 1
	fi
}
eal() { echo --no-pci --no-huge -m 128 --file-prefix "droce-err-$TAG-$n"; }

expect 0 "Configuration keys" -- --help
expect 0 "worker.thread.cpuset" -- $(eal) -- --help
expect 2 "unknown key 'worker.thread.group' (did you mean 'worker.thread.groups'?)" -- \
	$(eal) -- worker.thread.group=2
expect 2 "neither an option nor key=value" -- $(eal) -- bogus
expect 2 "--duration \"0\": allowed: whole seconds" -- $(eal) -- --duration 0
cat >"$WORK/bad.ini" <<'INI'
[worker]
poll.enable = perhaps
INI
expect 2 "bad.ini:2: worker.poll.enable = \"perhaps\": not a boolean; allowed: yes or no" -- \
	$(eal) -- -c "$WORK/bad.ini"
expect 2 "cannot read the configuration file" -- $(eal) -- -c "$WORK/missing.ini"
expect 2 "EAL option '-l 0' gives 0 worker lcores, but worker.thread.groups (default) asks for 1 worker" -- \
	$(eal) -l 0 -- port.0.device=x port.0.address=198.18.0.1/24
expect 2 "which this process may not use" -- \
	$(eal) -- worker.thread.cpuset=1023-1023
expect 1 "no such ethdev" -- \
	$(eal) -- port.0.device=net_nothing0 port.0.address=198.18.0.1/24
expect 1 "port.1.device = \"net_null0\": that ethdev is already an earlier port" -- \
	$(eal) --vdev net_null0 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 \
	port.1.device=net_null0 port.1.address=198.18.1.1/24 --duration 5
expect 2 "gpu = \"cuda:7\": GPU \"cuda:7\": no gpudev device droce_cuda7; devices: droce_host0" -- \
	$(eal) -- gpu=cuda:7
expect 2 "gpu = \"gpu0\": GPU \"gpu0\": not a device; allowed: host, cuda:N, auto" -- \
	$(eal) -- gpu=gpu0
expect 2 "no port configured: give port.0.device=" -- $(eal) --
expect 2 "no port configured: give port.0.device=" -- $(eal) -- --duration 1
expect 2 "--verify \"all\": allowed: none, crc, pattern" -- $(eal) -- --verify all
expect 2 "rx.0.reorder.window = 100: not a power of two; allowed: 0 (off), 1, 2, 4, ... 8192" -- \
	$(eal) -- port.0.device=x port.0.address=198.18.0.1/24 rx.0.peer=198.18.0.2 \
	rx.0.frame.size=1000 rx.0.reorder.window=100
# droce's RPC server: TLS (the default) without its files; a certificate
# that is not there.
expect 2 "rpc.port = 4000 (command line 'rpc.port=4000') with server.tls.enable = yes (default) needs rpc.tls.cert" -- \
	$(eal) --vdev net_null0 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 rpc.port=4000
expect 2 "cannot load the certificate $WORK/none.pem" -- \
	$(eal) --vdev net_null0 -- port.0.device=net_null0 port.0.address=198.18.0.1/24 \
	rpc.port=4000 rpc.tls.cert="$WORK/none.pem" rpc.tls.key="$WORK/none.key" rpc.tls.ca="$WORK/ca.pem"

# Without a CUDA driver, gpu=auto says once, as information, what it uses.
if ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
	expect 0 "droce: gpu=auto: no CUDA driver, using host memory" -- \
		$(eal) --vdev net_null0 -- port.0.device=net_null0 \
		port.0.address=198.18.0.1/24 stats.period=0 --duration 1
	if grep -i "cuda" "$WORK/out" | grep -v "gpu=auto: no CUDA driver, using host memory"; then
		echo "FAIL: droce says more about CUDA than the one line"
		exit 1
	fi
	# stdout and stderr in one file keep the order they were written in
	expect 2 "no port configured" -- $(eal) --
	if ! grep -E "gpu=auto|no port configured" "$WORK/out" | head -1 | grep -q "gpu=auto"; then
		echo "FAIL: the error came before the line printed ahead of it:"
		cat "$WORK/out"
		exit 1
	fi
fi
echo "PASS ($n cases)"
