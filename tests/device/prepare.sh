#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# On a CPU machine: build what tests/device/run.sh runs on a GPU machine,
# which has CUDA but no DPDK and no package registry. The check program is
# linked with DPDK's static libraries (dynamic glibc), with the gather
# kernel embedded; libnuma comes along. Beside it, for the sensor demo
# (tests/device/demo.sh): droce and droce-sensor in bin/, every shared
# library they and their drivers need but glibc's in lib/, and the DPDK
# drivers the demo loads with EAL's -d in pmds/. Then:
#   device run: bash tests/device/run.sh    (carry: build-device)
#   device run: bash tests/device/demo.sh   (carry: build-device)
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
echo "prepare: gpu_cuda_check:"
ldd "$out/gpu_cuda_check" | sed 's/^/  /'

# The demo's drivers, one file each, named *.so: EAL loads the files of a
# -d folder that end in .so or .so.23.0. memif for the port, the ring
# mempool ops for the mbuf pools; the vdev bus comes in lib/ as memif's
# dependency (a second copy in pmds/ would be loaded twice).
mkdir -p "$out/bin" "$out/pmds"
cp "$top/build/app/droce/droce" "$top/build/app/droce-sensor/droce-sensor" "$out/bin/"
for p in librte_net_memif librte_mempool_ring; do
	cp -L "$L/dpdk/pmds-23.0/$p.so.23" "$out/pmds/$p.so"
done
glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so'
ldd "$out/bin/droce" "$out/bin/droce-sensor" "$out"/pmds/*.so |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
	while read -r lib; do
		[[ ${lib##*/} =~ $glibc ]] || cp -L "$lib" "$out/lib/"
	done
# Self-contained: with only the bundle on the library path, everything but
# glibc resolves into lib/.
stray=$(LD_LIBRARY_PATH=$out/lib ldd "$out/gpu_cuda_check" "$out"/bin/* "$out"/pmds/* |
	awk '$2 == "=>" { print $1, $3 }' | grep -Ev "$glibc" | grep -v " $out/lib/" || true)
[ -z "$stray" ] || { echo "prepare: not in the bundle:" >&2; echo "$stray" >&2; exit 1; }
glibc_max=$(objdump -T "$out/gpu_cuda_check" "$out"/bin/* "$out"/pmds/* "$out"/lib/* |
	grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "prepare: $(du -sh "$out" | cut -f1) in $out: bin/ $(cd "$out/bin" && echo *)," \
	"pmds/ $(cd "$out/pmds" && echo *), lib/ $(ls "$out/lib" | wc -l) libraries;" \
	"needs glibc with $glibc_max"
