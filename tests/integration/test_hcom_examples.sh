#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The hcom4db drop-in as an application meets it: installed, the example
# server and client built outside the tree with nothing but the installed
# hcom4db.h and `pkg-config droce-hcom`, then run over TCP in a network
# namespace of this test's own: two clients at once, every message and
# byte counted by the server, both seen to come and go.
set -euo pipefail
build=${1:?build directory}
src=${2:?examples directory}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a network namespace)"; exit 77; }
dest=$(mktemp -d /tmp/droce-hcom.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	rm -rf "$dest"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$dest/server.out" ] && cat "$dest/server.out"; exit 1; }

DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet >/dev/null || fail "meson install"
pc=$(find "$dest" -name droce-hcom.pc | head -1)
[ -n "$pc" ] || fail "no droce-hcom.pc installed"
[ -n "$(find "$dest" -name hcom4db.h)" ] || fail "no hcom4db.h installed"
lib=$(find "$dest" -name libhcom4db.so | head -1)
[ -n "$lib" ] || fail "no libhcom4db.so installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir "$dest/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$dest/pc/droce-hcom.pc"
export PKG_CONFIG_PATH=$dest/pc
flags=$(pkg-config --cflags --libs droce-hcom) || fail "pkg-config droce-hcom"
cp "$src"/hcom_server.c "$src"/hcom_client.c "$src"/hcom_example.h "$dest/"
for p in hcom_server hcom_client; do
	cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$dest/$p" "$dest/$p.c" $flags ||
		fail "compile $p with pkg-config droce-hcom"
done
export LD_LIBRARY_PATH=$(dirname "$lib")

# In a namespace of our own: its loopback, nothing else.
unshare -n bash -s "$dest" <<'RUN' || fail "the run"
set -euo pipefail
dest=$1
# Whatever this started and is still there goes with it.
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT
ip link set lo up
"$dest/hcom_server" 127.0.0.1 0 2 no >"$dest/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$dest/server.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*://p' "$dest/server.out")
[ -n "$port" ] || { echo "the server did not start"; kill $server; exit 1; }
"$dest/hcom_client" 127.0.0.1 "$port" 5000 4096 >"$dest/c1.out" 2>&1 & c1=$!
"$dest/hcom_client" 127.0.0.1 "$port" 2000 65536 >"$dest/c2.out" 2>&1 & c2=$!
ok=0
wait $c1 || ok=1
wait $c2 || ok=1
cat "$dest/c1.out" "$dest/c2.out"
sleep 0.5
kill -TERM $server
wait $server || ok=1
exit $ok
RUN
cat "$dest/server.out"
[ "$(grep -c '^client came: example client' "$dest/server.out")" = 2 ] || fail "two clients did not come"
[ "$(grep -c ' went: .* 0 bad$' "$dest/server.out")" = 2 ] || fail "two clients did not go cleanly"
grep -q '^stopped: 2 clients, 2 gone$' "$dest/server.out" || fail "the server's end"

# kill -9 mid-run, each side: the other hears within the heartbeat's
# bound (2 s with idle 1; a socket the kernel closes is heard at once).
unshare -n bash -s "$dest" <<'RUN' || fail "the kill runs"
set -euo pipefail
dest=$1
trap 'kill -9 $(jobs -p) 2>/dev/null || true' EXIT
ip link set lo up
start_server() {
	"$dest/hcom_server" 127.0.0.1 0 2 no >"$dest/$1" 2>&1 &
	server=$!
	for _ in $(seq 100); do grep -q '^listening on' "$dest/$1" && break; sleep 0.1; done
	port=$(sed -n 's/^listening on .*://p' "$dest/$1")
}
wait_line() {  # file pattern seconds
	for _ in $(seq $(( $3 * 20 ))); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}
# The server dies: the client's calls fail, its break handler runs, it ends.
start_server s2.out
timeout 60 "$dest/hcom_client" 127.0.0.1 "$port" 100000000 65536 >"$dest/c3.out" 2>&1 & client=$!
wait_line "$dest/s2.out" '^client came' 10
sleep 0.5
kill -9 $server
t0=$(date +%s%N)
rc=0; wait $client || rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
cat "$dest/c3.out"
echo "server killed: the client ended (status $rc) after $took ms"
[ $rc != 0 ] && grep -q 'the session with the server broke' "$dest/c3.out" && [ $took -lt 5000 ]
# The client dies: the server's break handler runs for it.
start_server s3.out
"$dest/hcom_client" 127.0.0.1 "$port" 100000000 65536 >"$dest/c4.out" 2>&1 & client=$!
wait_line "$dest/s3.out" '^client came' 10
sleep 0.5
kill -9 $client
wait $client || true
t0=$(date +%s%N)
wait_line "$dest/s3.out" '^client 1 went' 5
took=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "client killed: the server heard after $took ms"
grep '^client 1 went' "$dest/s3.out"
kill -TERM $server
wait $server
RUN
echo PASS
