/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Copies into memory this core will not read again: the payloads a copy
 * placer writes, read next by the GPU or, once the frame is whole, by an
 * application thread. A regular store first reads the line it writes (a
 * read for ownership) and leaves it in this core's caches, where it
 * pushes out the packets and stream state the worker needs next; with many
 * streams the hardware prefetcher cannot follow so many destinations and
 * every such read waits for memory. A streaming (non-temporal) store
 * writes whole lines through the write-combining buffers with neither.
 * Streaming stores are weakly ordered: whoever announces the bytes fences
 * them first (droce_placer_submit).
 */

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_memcpy.h>
#include <rte_vect.h>

#include "gpu_private.h"

#ifdef RTE_ARCH_X86
#include <immintrin.h>

/* Whole 64-byte lines to a line-aligned @p dst. */
__attribute__((target("avx2")))
static void
lines_avx2(uint8_t *dst, const uint8_t *src, size_t lines)
{
	for (; lines != 0; lines--, dst += RTE_CACHE_LINE_SIZE, src += RTE_CACHE_LINE_SIZE) {
		__m256i a = _mm256_loadu_si256((const __m256i *)src);
		__m256i b = _mm256_loadu_si256((const __m256i *)(src + 32));

		_mm256_stream_si256((__m256i *)dst, a);
		_mm256_stream_si256((__m256i *)(dst + 32), b);
	}
}

static void
lines_sse2(uint8_t *dst, const uint8_t *src, size_t lines)
{
	for (; lines != 0; lines--, dst += RTE_CACHE_LINE_SIZE, src += RTE_CACHE_LINE_SIZE) {
		__m128i a = _mm_loadu_si128((const __m128i *)src);
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(src + 48));

		_mm_stream_si128((__m128i *)dst, a);
		_mm_stream_si128((__m128i *)(dst + 16), b);
		_mm_stream_si128((__m128i *)(dst + 32), c);
		_mm_stream_si128((__m128i *)(dst + 48), d);
	}
}
#endif

gpu_copy_lines_t *
gpu_copy_lines_select(void)
{
#ifdef RTE_ARCH_X86
	/* Looked up once: each stream start asks, and CPUID traps to the
	 * hypervisor in a VM (tens of microseconds).
	 */
	static int avx2 = -1;
	int have = __atomic_load_n(&avx2, __ATOMIC_RELAXED);

	if (have < 0) {
		have = rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX2) > 0;
		__atomic_store_n(&avx2, have, __ATOMIC_RELAXED);
	}
	/* 256-bit stores write a line in two, 128-bit ones in four: fewer
	 * stores, where the vectors are allowed.
	 */
	if (have && rte_vect_get_max_simd_bitwidth() >= RTE_VECT_SIMD_256)
		return lines_avx2;
	return lines_sse2;
#else
	return NULL;
#endif
}

void
gpu_copy_streaming(gpu_copy_lines_t *lines, uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = RTE_MIN(len, (size_t)(-(uintptr_t)dst & (RTE_CACHE_LINE_SIZE - 1)));
	size_t whole;

	/* A line written only in part goes through the cache: a streaming
	 * store of part of a line costs a write to memory of its own.
	 */
	rte_memcpy(dst, src, head);
	dst += head;
	src += head;
	len -= head;
	whole = len / RTE_CACHE_LINE_SIZE;
	lines(dst, src, whole);
	rte_memcpy(dst + whole * RTE_CACHE_LINE_SIZE, src + whole * RTE_CACHE_LINE_SIZE,
		   len % RTE_CACHE_LINE_SIZE);
}
