#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dpdk-telemetry.py (DPDK's own client) reads /droce/stats, /droce/config,
# /droce/lcores and /droce/memory from a running droce, and the counters
# move with traffic.
. "$(dirname "$0")/lib.sh"

command -v dpdk-telemetry.py >/dev/null || skip "needs dpdk-telemetry.py (package dpdk)"
make_link
start_droce udp.echo.port=7

query() {
	printf '%s\n' "$@" | dpdk-telemetry.py -f "$PREFIX" >"$WORK/tel.out" 2>&1 ||
		fail "dpdk-telemetry.py: $(cat "$WORK/tel.out")"
}

query /droce/stats,0
before=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["/droce/stats"]["rx_packets"])' "$WORK/tel.out")
peer ping -c 10 -i 0.01 -w 20 "$DROCE_IP" >/dev/null || fail "ping"
query /droce/stats,0 /droce/config /droce/lcores /droce/lcores,1 /droce/stats,7 /droce/memory
python3 - "$WORK/tel.out" "$before" <<'PY' || fail "telemetry answers: $(cat "$WORK/tel.out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
stats, config, lcores, lcore1, bad, pools = lines[-6:]
rx = stats["/droce/stats"]["rx_packets"]
assert rx >= int(sys.argv[2]) + 10, "rx_packets %d did not grow by 10" % rx
assert stats["/droce/stats"]["drop_ip_bad_cksum"] == 0
given = config["/droce/config"]["given"]
assert any(g.startswith("udp.echo.port=7 @ command line") for g in given), given
assert config["/droce/config"]["workers"] == 1
lc = lcores["/droce/lcores"]
assert lc["role"] == ["control", "worker"], lc
assert lc["queues"][1] == "p0q0 p0q1", lc
assert lcore1["/droce/lcores"]["rx_packets"] >= 10, lcore1
assert bad["/droce/stats"] is None, bad  # port 7 does not exist
# The port's pool: af_packet's RX queues hold no mbufs of it when idle,
# so what is in use is what sits in droce's rings and TX buffers: a few.
mem = pools["/droce/memory"]
assert 0 <= mem["mempools_in_use"]["droce0_p0"] < 256, mem
assert mem.get("malloc_in_use", 1) > 0, mem   # glibc 2.33 and later
print("telemetry ok: rx_packets", rx)
PY
stop_droce
echo PASS
