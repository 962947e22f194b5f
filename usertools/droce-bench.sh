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
cpus=$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(",".join(map(str, c[:2])) if len(c) > 1 else c[0])')
exec "$bench" --no-pci --no-huge -m 1024 --file-prefix "droce-bench-$$" \
	-l "$cpus" --vdev net_null0 --log-level lib.eal:error --log-level "droce.rx:warning" -- "$@"
