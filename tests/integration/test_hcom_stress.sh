#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes through hcom4db.h over TCP, in a network namespace of this
# test's own: 10^5 calls of 8 B .. 1 MiB to random services from 4
# threads, synchronous and asynchronous mixed, answers of known and
# unknown length, every byte checked; then 2000 of up to 4 MiB; then
# 10^4 of up to 1 MiB with TLS on both sides (certificates from
# tests/tools/make_test_pki.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stress=${HCOM_STRESS:?path of hcom_stress}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
calls=${HCOM_STRESS_CALLS:-100000}
tls_calls=${HCOM_STRESS_TLS_CALLS:-10000}
out=$(mktemp -d /tmp/droce-hcom-stress.XXXXXX)
trap 'rm -rf "$out"' EXIT
mkdir "$out/pki"
"$here/../tools/make_test_pki.sh" "$out/pki"

unshare -n bash -s "$stress" "$out" "$calls" "$tls_calls" <<'RUN'
set -euo pipefail
stress=$1 out=$2 calls=$3 tls_calls=$4
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT
ip link set lo up
# serve NAME: a server in the background ($server, $port).
serve() {
	"$stress" server 127.0.0.1 0 4194304 >"$out/$1.out" 2>&1 &
	server=$!
	for _ in $(seq 100); do grep -q '^listening on' "$out/$1.out" && break; sleep 0.1; done
	port=$(sed -n 's/^listening on .*://p' "$out/$1.out")
	[ -n "$port" ] || { cat "$out/$1.out"; exit 1; }
}
serve server
"$stress" client 127.0.0.1 "$port" 4194304 "$calls" 4 1048576 $RANDOM
"$stress" client 127.0.0.1 "$port" 4194304 2000 4 4194304 $RANDOM
kill -TERM $server
wait $server
export HCOM_STRESS_TLS=$out/pki
serve tls-server
echo -n "TLS: "
"$stress" client 127.0.0.1 "$port" 4194304 "$tls_calls" 4 1048576 $RANDOM
kill -TERM $server
wait $server
RUN
echo PASS
