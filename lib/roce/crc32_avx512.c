/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * CRC-32 with VPCLMULQDQ on 512-bit registers: four registers of four
 * 128-bit lanes fold 256 bytes per round. What is left after the last
 * whole 64-byte block goes to the PCLMULQDQ code.
 */

#include <stdbool.h>
#include <string.h>

#include "crc32_x86.h"

static inline __m512i
pair512(uint64_t k_lo, uint64_t k_hi)
{
	return _mm512_broadcast_i32x4(fold_pair(k_lo, k_hi));
}

/* Every lane of @z moved ahead, plus @next: one ternary XOR. */
static inline __m512i
fold512(__m512i z, __m512i k, __m512i next)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
					 _mm512_clmulepi64_epi128(z, k, 0x11),
					 next, 0x96);
}

/* The four lanes of one register folded into its last lane. */
static inline __m128i
lanes_to_128(__m512i z)
{
	__m128i l0 = _mm512_extracti32x4_epi32(z, 0);
	__m128i l1 = _mm512_extracti32x4_epi32(z, 1);
	__m128i l2 = _mm512_extracti32x4_epi32(z, 2);
	__m128i l3 = _mm512_extracti32x4_epi32(z, 3);

	l3 = _mm_xor_si128(l3, fold128(l0, fold_pair(crc_k.k416, crc_k.k352)));
	l3 = _mm_xor_si128(l3, fold128(l1, fold_pair(crc_k.k288, crc_k.k224)));
	return _mm_xor_si128(l3, fold128(l2, fold_pair(crc_k.k160, crc_k.k96)));
}

static inline __m512i
merge4(__m512i z0, __m512i z1, __m512i z2, __m512i z3)
{
	const __m512i k512 = pair512(crc_k.k544, crc_k.k480);

	z1 = fold512(z0, k512, z1);
	z2 = fold512(z1, k512, z2);
	return fold512(z2, k512, z3);
}

/* 256 bytes and more; the first 64 ORed with @p ones (zero for a plain
 * CRC: a constant where this is inlined).
 */
static inline __attribute__((always_inline)) uint32_t
fold(uint32_t reg, const uint8_t *p, size_t n, __m512i ones)
{
	const __m512i k2048 = pair512(crc_k.k2080, crc_k.k2016);
	const __m512i k512 = pair512(crc_k.k544, crc_k.k480);
	__m512i z0, z1, z2, z3;

	z0 = _mm512_xor_si512(_mm512_or_si512(_mm512_loadu_si512(p), ones),
			      _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
	z1 = _mm512_loadu_si512(p + 64);
	z2 = _mm512_loadu_si512(p + 128);
	z3 = _mm512_loadu_si512(p + 192);
	for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
		z0 = fold512(z0, k2048, _mm512_loadu_si512(p));
		z1 = fold512(z1, k2048, _mm512_loadu_si512(p + 64));
		z2 = fold512(z2, k2048, _mm512_loadu_si512(p + 128));
		z3 = fold512(z3, k2048, _mm512_loadu_si512(p + 192));
	}
	z0 = merge4(z0, z1, z2, z3);
	for (; n >= 64; p += 64, n -= 64)
		z0 = fold512(z0, k512, _mm512_loadu_si512(p));
	return crc_pclmul_finish(lanes_to_128(z0), p, n);
}

uint32_t
crc_reg_avx512(uint32_t reg, const uint8_t *p, size_t n)
{
	if (n < 256)
		return crc_reg_pclmul(reg, p, n);
	return fold(reg, p, n, _mm512_setzero_si512());
}

uint32_t
crc_reg_ones_avx512(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	return fold(reg, p, n, _mm512_loadu_si512(ones));
}

static inline __m512i
copy64(const uint8_t *src, uint8_t *dst, bool stream)
{
	__m512i b = _mm512_loadu_si512(src);

	if (stream)
		_mm512_stream_si512((void *)dst, b);
	else
		_mm512_storeu_si512(dst, b);
	return b;
}

/* @p stream: every store a streaming one, of a whole line (@p dst aligned
 * to 64); a constant where this is inlined.
 */
static inline __attribute__((always_inline)) uint32_t
copy_fold(uint32_t reg, const uint8_t *src, uint8_t *dst, size_t n, bool stream)
{
	const __m512i k2048 = pair512(crc_k.k2080, crc_k.k2016);
	const __m512i k512 = pair512(crc_k.k544, crc_k.k480);
	__m512i z0, z1, z2, z3;

	z0 = _mm512_xor_si512(copy64(src, dst, stream),
			      _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)reg)));
	z1 = copy64(src + 64, dst + 64, stream);
	z2 = copy64(src + 128, dst + 128, stream);
	z3 = copy64(src + 192, dst + 192, stream);
	for (src += 256, dst += 256, n -= 256; n >= 256;
	     src += 256, dst += 256, n -= 256) {
		z0 = fold512(z0, k2048, copy64(src, dst, stream));
		z1 = fold512(z1, k2048, copy64(src + 64, dst + 64, stream));
		z2 = fold512(z2, k2048, copy64(src + 128, dst + 128, stream));
		z3 = fold512(z3, k2048, copy64(src + 192, dst + 192, stream));
	}
	z0 = merge4(z0, z1, z2, z3);
	for (; n >= 64; src += 64, dst += 64, n -= 64)
		z0 = fold512(z0, k512, copy64(src, dst, stream));
	/* Less than 64 bytes: copy them, then let the 128-bit code finish. */
	memcpy(dst, src, n);
	return crc_pclmul_finish(lanes_to_128(z0), src, n);
}

uint32_t
crc_reg_copy_avx512(uint32_t reg, const uint8_t *src, uint8_t *dst, size_t n,
		    bool stream)
{
	if (n < 256)
		return crc_reg_copy_pclmul(reg, src, dst, n);
	if (stream && ((uintptr_t)dst & 63) == 0)
		return copy_fold(reg, src, dst, n, true);
	return copy_fold(reg, src, dst, n, false);
}

/*
 * Short messages four at a time, one to each 128-bit lane of a register:
 * the 256-bit pass of crc32_avx2.c at twice the width, so that one
 * multiplication moves the same lane of all four.
 */
static inline __m512i
load_quad(const void *const p[4], const uint8_t *ones, size_t off)
{
	__m512i z = _mm512_castsi128_si512(
		_mm_loadu_si128((const __m128i *)((const uint8_t *)p[0] + off)));

	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)((const uint8_t *)p[1] + off)), 1);
	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)((const uint8_t *)p[2] + off)), 2);
	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)((const uint8_t *)p[3] + off)), 3);
	if (off >= CRC_ONES_LEN)
		return z;
	return _mm512_or_si512(z, _mm512_broadcast_i32x4(
				       _mm_loadu_si128((const __m128i *)(ones + off))));
}

/* The constant pair moving a lane @p m lanes ahead, in every lane. */
static inline __m512i
load_lane_k(size_t m)
{
	return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)crc_k.lane[m]));
}

static inline __m512i
fold_lanes(__m512i z, __m512i k)
{
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(z, k, 0x00),
				_mm512_clmulepi64_epi128(z, k, 0x11));
}

/* crc32_pclmul.c's reduce128() on every lane; the registers in 32-bit
 * elements 1, 5, 9 and 13.
 */
static inline __m512i
reduce_lanes(__m512i x)
{
	const __m512i mask32 = _mm512_set4_epi32(0, 0, 0, -1);
	const __m512i k64v = _mm512_set4_epi64(0, (long long)crc_k.k64, 0, (long long)crc_k.k64);
	const __m512i k128 = pair512(crc_k.k160, crc_k.k96);
	const __m512i barrett = pair512(crc_k.poly, crc_k.mu);
	__m512i t;

	t = _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k128, 0x10),
			     _mm512_bsrli_epi128(x, 8));
	t = _mm512_xor_si512(_mm512_clmulepi64_epi128(_mm512_and_si512(t, mask32),
						      k64v, 0x00),
			     _mm512_bsrli_epi128(t, 4));
	x = _mm512_clmulepi64_epi128(_mm512_and_si512(t, mask32), barrett, 0x10);
	x = _mm512_clmulepi64_epi128(_mm512_and_si512(x, mask32), barrett, 0x00);
	return _mm512_xor_si512(t, x);
}

unsigned int
crc_ones_short_x4_equal_avx512(uint32_t reg, const void *const p[4], size_t n,
			       const uint8_t *ones, uint32_t want)
{
	size_t zeros = (16 - n % 16) % 16, lanes = (n + zeros) / 16;
	__m512i regv = _mm512_set4_epi32(0, 0, 0, (int)reg);
	__m512i up = _mm512_broadcast_i32x4(
		_mm_loadu_si128((const __m128i *)(crc_shift_table + 16 - zeros)));
	__m512i x = _mm512_shuffle_epi8(_mm512_xor_si512(load_quad(p, ones, 0), regv), up);
	unsigned int eq;

	x = _mm512_xor_si512(fold_lanes(x, load_lane_k(lanes - 1)), load_quad(p, ones, n - 16));
	for (size_t j = 1; j < lanes - 1; j++)
		x = _mm512_xor_si512(x, fold_lanes(load_quad(p, ones, 16 * j - zeros),
						   load_lane_k(lanes - 1 - j)));
	if (zeros > 12) {
		__m512i spill = _mm512_shuffle_epi8(regv, _mm512_broadcast_i32x4(
			_mm_loadu_si128((const __m128i *)(crc_shift_table + 32 - zeros))));

		x = _mm512_xor_si512(x, fold_lanes(spill, load_lane_k(lanes - 2)));
	}
	/* The registers lie in elements 1, 5, 9 and 13. */
	eq = _mm512_mask_cmpeq_epi32_mask(0x2222, reduce_lanes(x), _mm512_set1_epi32((int)want));
	return (eq >> 1 & 1) | (eq >> 4 & 2) | (eq >> 7 & 4) | (eq >> 10 & 8);
}
