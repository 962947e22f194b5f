#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# On a CPU machine: build what tests/device/run.sh runs on a GPU machine,
# which has CUDA but no DPDK and no package registry. The check program is
# linked with DPDK's static libraries (dynamic glibc), with the gather
# kernel embedded; libnuma comes along. Then:
#   device run: bash tests/device/run.sh   (carry: build-device)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build-device
L=/usr/lib/x86_64-linux-gnu

"$top/usertools/droce-deps.sh"
[ -f /usr/local/cuda/include/cuda.h ] || { echo "prepare: needs the CUDA toolkit in /usr/local/cuda (cuda.h, nvcc)" >&2; exit 1; }
"$top/usertools/droce-build.sh" build -Dcuda=enabled >/dev/null
grep -q DROCE_HAVE_GATHER_KERNEL "$top/build/build.ninja" ||
	{ echo "prepare: the build has no gather kernel (nvcc missing?)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/lib"
# shellcheck disable=SC2046
gcc -O2 -std=gnu11 -D_GNU_SOURCE -DALLOW_EXPERIMENTAL_API \
	$(pkg-config --cflags libdpdk) -I"$top/include" -I"$top/tests" \
	"$top/tests/device/gpu_cuda_check.c" -o "$out/gpu_cuda_check" \
	"$top/build/libdroce.a" \
	-Wl,--whole-archive "$L/librte_mempool_ring.a" -Wl,--no-whole-archive \
	"$L/librte_gpudev.a" "$L/librte_mbuf.a" "$L/librte_mempool.a" \
	"$L/librte_ring.a" "$L/librte_eal.a" "$L/librte_kvargs.a" \
	"$L/librte_telemetry.a" -l:libbsd.a -l:libmd.a -lnuma -ldl -lpthread -lm
cp -L "$L/libnuma.so.1" "$out/lib/"
echo "prepare: $(du -sh "$out" | cut -f1) in $out:"
ldd "$out/gpu_cuda_check" | sed 's/^/  /'
