#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# droce-bench.sh [droce-bench options]: run the benchmarks on the first two
# cpus this process may use, with the vdevs the cases need.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=$top/build/app/droce-bench/droce-bench
[ -x "$bench" ] || "$top/usertools/droce-build.sh" build >/dev/null
# Two lcores (the cases poll on one and run a peer or a baseline on the
# other); on a single cpu both are placed there.
lcores=$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print("0@%d,1@%d" % (c[0], c[1] if len(c) > 1 else c[0]))')
# The runtime folders it and its testpmd runs leave are removed at the end.
trap 'rm -rf /var/run/dpdk/droce-bench-$$ /var/run/dpdk/droce-bench-tpmd-$$-*' EXIT
"$bench" --no-pci --no-huge -m 1024 --file-prefix "droce-bench-$$" \
	--lcores "$lcores" --vdev net_null0 --log-level lib.eal:error --log-level "droce.rx:warning" -- "$@"
