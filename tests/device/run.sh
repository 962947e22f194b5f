#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# On a machine with a GPU (not run by CI), after tests/device/prepare.sh
# on a CPU machine: the CUDA driver's checks on the real GPU (gpudev calls,
# gather and, where GDRCopy exists, copy placement into GPU memory, read
# back with cuMemcpyDtoH byte for byte) and the gather benchmark against
# cuMemcpyHtoD. Well under 5 minutes. Output also in $OUT/device.log.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$top/build-device
log=${OUT:-/tmp}/device.log

{
	echo "== $(date -u +%FT%TZ) $(uname -r)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
	[ -x "$bundle/gpu_cuda_check" ] || {
		echo "run.sh: no $bundle/gpu_cuda_check: run tests/device/prepare.sh first and carry build-device"
		exit 2
	}
	# libcuda.so.1 comes with the driver; the bundle brings libnuma.
	export LD_LIBRARY_PATH=$bundle/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:${LD_LIBRARY_PATH:-}
	ldconfig -p | grep -q libgdrapi || echo "note: no GDRCopy (libgdrapi.so.2): copy placement is skipped"
	timeout 240 "$bundle/gpu_cuda_check" --bench
	rc=$?
	echo "== gpu_cuda_check exit $rc"
	exit $rc
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
