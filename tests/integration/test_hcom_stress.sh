#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two processes through hcom4db.h over TCP, in a network namespace of this
# test's own: 10^5 calls of 8 B .. 1 MiB to random services from 4
# threads, synchronous and asynchronous mixed, answers of known and
# unknown length, every byte checked; then 2000 of up to 4 MiB.
set -euo pipefail
stress=${HCOM_STRESS:?path of hcom_stress}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
calls=${HCOM_STRESS_CALLS:-100000}
out=$(mktemp -d /tmp/droce-hcom-stress.XXXXXX)
trap 'rm -rf "$out"' EXIT

unshare -n bash -s "$stress" "$out" "$calls" <<'RUN'
set -euo pipefail
stress=$1 out=$2 calls=$3
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT
ip link set lo up
"$stress" server 127.0.0.1 0 4194304 >"$out/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$out/server.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*://p' "$out/server.out")
[ -n "$port" ] || { cat "$out/server.out"; exit 1; }
"$stress" client 127.0.0.1 "$port" 4194304 "$calls" 4 1048576 $RANDOM
"$stress" client 127.0.0.1 "$port" 4194304 2000 4 4194304 $RANDOM
kill -TERM $server
wait $server
RUN
echo PASS
