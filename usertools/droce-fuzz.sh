#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# droce-fuzz.sh [SECONDS]: build the libFuzzer targets with clang, ASan and
# UBSan, seed them with frames from droce's builder, and fuzz each for
# SECONDS (default 60). Any crash or sanitizer report fails the run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "droce-fuzz: seconds '$seconds': allowed: a whole number >= 1" >&2; exit 2; }

work=$(mktemp -d /tmp/droce-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Quiet builds that show their log when they fail: clang warns about
# things gcc does not, and -Werror turns those into the failure to read.
build() {
	"$@" >"$work/build.log" 2>&1 || {
		grep -E "error|FAILED" "$work/build.log" | head -40
		echo "droce-fuzz: build failed: $*" >&2
		exit 1
	}
}
build "$top/usertools/droce-build.sh" build
build env CC=clang "$top/usertools/droce-build.sh" build-fuzz -Dfuzz=true \
	-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
mkdir "$work/corpus" "$work/pki"
"$top/tests/tools/make_test_pki.sh" "$work/pki"
tool=$top/build/tests/tools/roce_frames
"$tool" opcodes "$work/op.pcap" "$work/op.csv" >/dev/null 2>&1
"$tool" random4 64 1 "$work/r4.pcap" >/dev/null 2>&1
"$tool" random6 64 2 "$work/r6.pcap" >/dev/null 2>&1
"$tool" cm "$work/cm.pcap" "$work/cm.csv" >/dev/null 2>&1
# HSB frames as droce-sensor sends them, to fuzz_rx's stream 0 (QP 0x100,
# rkey 0x5eed, 5000-byte frames in 4 pages), a packet of each fault too.
"$top/build/app/droce-sensor/droce-sensor" --no-pci --no-huge -m 128 -l 0 \
	--file-prefix "droce-fuzz-seed-$$" --log-level "*:error" \
	"--vdev=net_pcap0,tx_pcap=$work/hsb.pcap" -- \
	--src 198.18.0.2 --dst 198.18.0.1 --dst-mac 02:70:63:61:70:00 \
	--qp 0x100 --rkey 0x5eed --frame-size 5000 --pages 4 --frames 6 \
	--faults drop=23,duplicate=7,reorder=11,corrupt-icrc=13,bad-va=17 \
	>"$work/sensor.log" 2>&1 || { cat "$work/sensor.log"; exit 1; }
rm -rf "/var/run/dpdk/droce-fuzz-seed-$$"
# Seeds: each frame from its IP header on, as the target takes them; and
# the CM messages' MADs alone (after Ethernet, IPv4, UDP, BTH and DETH).
python3 - "$work" <<'PY'
import os, struct, sys
work = sys.argv[1]
n = 0
for name in ("op.pcap", "r4.pcap", "r6.pcap", "hsb.pcap", "cm.pcap"):
    data = open(os.path.join(work, name), "rb").read()
    off = 24
    while off < len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        frame = data[off + 16:off + 16 + incl]
        open(os.path.join(work, "corpus", "seed%03d" % n), "wb").write(frame[14:])
        n += 1
        if name == "cm.pcap":
            open(os.path.join(work, "corpus", "seed%03d" % n), "wb").write(frame[62:62 + 256])
            n += 1
        off += 16 + incl
# RPC frames (lib/rpc/rpc_frame.h): a session's opening, calls and
# answers on one stream, and a rendezvous request.
def rpc(kind, flags=0, service=0, status=0, seq=0, payload=b"", rndv=0):
    return struct.pack(">IBBHHhIQIB3x", 0x44525043, 1, kind, flags, service, status, 0, seq,
                       len(payload), rndv) + payload
hello = rpc(1, payload=b"server\0hello\0" + struct.pack(">I", 4096))
stream = (hello + rpc(2) + rpc(3, 1, 0, 0, 1, b"x" * 40) +
          rpc(4, 0, 0, 0, 1, b"y" * 8) + rpc(5, seq=2) + rpc(6, seq=2) + rpc(7))
# A client's side of a session with fuzz_hcom's server: calls to its
# three services, one-way and answered, a heartbeat, the end.
client = (hello + rpc(3, 1, 0, 0, 1, b"a" * 100) + rpc(3, 0, 1, 0, 2, b"b" * 10) +
          rpc(3, 1, 2, 0, 3, b"c" * 4000) + rpc(5) + rpc(3, 1, 7, 0, 4) + rpc(7))
rndv = rpc(3, 3, 1, 0, 9, struct.pack(">QII", 0x7f0000001000, 65536, 0x1234) +
           struct.pack(">QII", 0x7f0000020000, 100, 0x1235), 2)
# A TLS session's sealed one-sided pieces (56 bytes each): a WRITE's,
# a READ's and their answers.
piece = struct.pack(">QIIQI", 0x7f0000001000, 4096, 0x1234, 0x7e0000002000, 0x99) + bytes(28)
sealed = rpc(8, 0, 0, 0, 1, piece) + rpc(9, 0, 15, 0, 2, piece) + rpc(10, 0, 0, 0, 1, piece) + \
    rpc(10, 0, 15, -2, 2, piece)
for seed in (stream, rndv, client, sealed):
    open(os.path.join(work, "corpus", "seed%03d" % n), "wb").write(seed)
    n += 1
# fuzz_tls: a TLS 1.3 ClientHello (first byte 0: to the server) and a
# server's first flight (1: to a client), from Python's ssl in memory.
import ssl
pki = os.path.join(work, "pki")
srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
srv.minimum_version = ssl.TLSVersion.TLSv1_3
srv.load_cert_chain(os.path.join(pki, "server.pem"), os.path.join(pki, "server.key"), "server-pass")
cli = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cli.check_hostname = False
cli.verify_mode = ssl.CERT_NONE
bufs = [ssl.MemoryBIO() for _ in range(4)]
c = cli.wrap_bio(bufs[0], bufs[1])
s = srv.wrap_bio(bufs[2], bufs[3], server_side=True)
try:
    c.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = bufs[1].read()
bufs[2].write(hello)
try:
    s.do_handshake()
except ssl.SSLWantReadError:
    pass
flight = bufs[3].read()
for seed in (b"\0" + hello, b"\1" + flight, b"\0" + rpc(1), b"\1" + hello[:5] + b"\xff" * 40):
    open(os.path.join(work, "corpus", "seed%03d" % n), "wb").write(seed)
    n += 1
print("droce-fuzz: %d seeds" % n)
PY

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for target in "$top"/build-fuzz/tests/fuzz/fuzz_*; do
	[ -x "$target" ] && [ -f "$target" ] || continue
	name=$(basename "$target")
	echo "droce-fuzz: $name for $seconds s"
	# Each target grows its own corpus from the same seeds: what one
	# target finds new says nothing about the other's code.
	cp -r "$work/corpus" "$work/corpus-$name"
	"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=9000 \
		-print_final_stats=1 -artifact_prefix="$work/" "$work/corpus-$name" \
		>"$work/fuzz.log" 2>&1 || {
		tail -40 "$work/fuzz.log"
		mkdir -p "$top/build-fuzz/artifacts"
		cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$top/build-fuzz/artifacts/" 2>/dev/null || true
		echo "droce-fuzz: $name FAILED (inputs in build-fuzz/artifacts/)"
		exit 1
	}
	grep -E "^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb" "$work/fuzz.log" | sed 's/^/  /'
done
echo "droce-fuzz: no crash, no sanitizer report"
