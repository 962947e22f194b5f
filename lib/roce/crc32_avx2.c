/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * CRC-32 with VPCLMULQDQ on 256-bit registers (AVX2 width, allowed at
 * DPDK's default SIMD bitwidth): four registers of two 128-bit lanes fold
 * 128 bytes per round. On CPUs whose 128-bit PCLMULQDQ issues only every
 * other cycle this doubles the bytes per multiplication.
 */

#include <stdbool.h>
#include <string.h>

#include "crc32_x86.h"

static inline __m256i
pair256(uint64_t k_lo, uint64_t k_hi)
{
	return _mm256_broadcastsi128_si256(fold_pair(k_lo, k_hi));
}

static inline __m256i
fold256(__m256i y, __m256i k, __m256i next)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(y, k, 0x00),
						 _mm256_clmulepi64_epi128(y, k, 0x11)),
				next);
}

/* Both lanes of one register folded into its last lane. */
static inline __m128i
lanes_to_128(__m256i y)
{
	__m128i l0 = _mm256_castsi256_si128(y);
	__m128i l1 = _mm256_extracti128_si256(y, 1);

	return _mm_xor_si128(l1, fold128(l0, fold_pair(crc_k.k160, crc_k.k96)));
}

static inline __m256i
merge4(__m256i y0, __m256i y1, __m256i y2, __m256i y3)
{
	const __m256i k256 = pair256(crc_k.k288, crc_k.k224);

	y1 = fold256(y0, k256, y1);
	y2 = fold256(y1, k256, y2);
	return fold256(y2, k256, y3);
}

static inline __m256i
load(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

static inline __m256i
copy32(const uint8_t *src, uint8_t *dst, bool stream)
{
	__m256i b = load(src);

	if (stream)
		_mm256_stream_si256((__m256i *)dst, b);
	else
		_mm256_storeu_si256((__m256i *)dst, b);
	return b;
}

/* 128 bytes and more; the first 64 ORed with @p ones0 and @p ones1 (zero
 * for a plain CRC: constants where this is inlined).
 */
static inline __attribute__((always_inline)) uint32_t
fold(uint32_t reg, const uint8_t *p, size_t n, __m256i ones0, __m256i ones1)
{
	const __m256i k1024 = pair256(crc_k.k1056, crc_k.k992);
	const __m256i k256 = pair256(crc_k.k288, crc_k.k224);
	__m256i y0, y1, y2, y3;

	y0 = _mm256_xor_si256(_mm256_or_si256(load(p), ones0),
			      _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)reg)));
	y1 = _mm256_or_si256(load(p + 32), ones1);
	y2 = load(p + 64);
	y3 = load(p + 96);
	for (p += 128, n -= 128; n >= 128; p += 128, n -= 128) {
		y0 = fold256(y0, k1024, load(p));
		y1 = fold256(y1, k1024, load(p + 32));
		y2 = fold256(y2, k1024, load(p + 64));
		y3 = fold256(y3, k1024, load(p + 96));
	}
	y0 = merge4(y0, y1, y2, y3);
	for (; n >= 32; p += 32, n -= 32)
		y0 = fold256(y0, k256, load(p));
	return crc_pclmul_finish(lanes_to_128(y0), p, n);
}

uint32_t
crc_reg_vpclmul256(uint32_t reg, const uint8_t *p, size_t n)
{
	if (n < 128)
		return crc_reg_pclmul(reg, p, n);
	return fold(reg, p, n, _mm256_setzero_si256(), _mm256_setzero_si256());
}

uint32_t
crc_reg_ones_vpclmul256(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	return fold(reg, p, n, load(ones), load(ones + 32));
}

/* @p stream: every 32-byte store a streaming one (@p dst aligned to 32);
 * a constant where this is inlined.
 */
static inline __attribute__((always_inline)) uint32_t
copy_fold(uint32_t reg, const uint8_t *src, uint8_t *dst, size_t n, bool stream)
{
	const __m256i k1024 = pair256(crc_k.k1056, crc_k.k992);
	const __m256i k256 = pair256(crc_k.k288, crc_k.k224);
	__m256i y0, y1, y2, y3;

	y0 = _mm256_xor_si256(copy32(src, dst, stream),
			      _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)reg)));
	y1 = copy32(src + 32, dst + 32, stream);
	y2 = copy32(src + 64, dst + 64, stream);
	y3 = copy32(src + 96, dst + 96, stream);
	for (src += 128, dst += 128, n -= 128; n >= 128;
	     src += 128, dst += 128, n -= 128) {
		y0 = fold256(y0, k1024, copy32(src, dst, stream));
		y1 = fold256(y1, k1024, copy32(src + 32, dst + 32, stream));
		y2 = fold256(y2, k1024, copy32(src + 64, dst + 64, stream));
		y3 = fold256(y3, k1024, copy32(src + 96, dst + 96, stream));
	}
	y0 = merge4(y0, y1, y2, y3);
	for (; n >= 32; src += 32, dst += 32, n -= 32)
		y0 = fold256(y0, k256, copy32(src, dst, stream));
	memcpy(dst, src, n);
	return crc_pclmul_finish(lanes_to_128(y0), src, n);
}

uint32_t
crc_reg_copy_vpclmul256(uint32_t reg, const uint8_t *src, uint8_t *dst,
			size_t n, bool stream)
{
	if (n < 128)
		return crc_reg_copy_pclmul(reg, src, dst, n);
	if (stream && ((uintptr_t)dst & 31) == 0)
		return copy_fold(reg, src, dst, n, true);
	return copy_fold(reg, src, dst, n, false);
}

/*
 * Short messages four at a time (the ICRCs of a burst of small packets):
 * one message's short fold has too little work to fill the multiplier,
 * and its chain waits on each step's latency; with the same lane of two
 * messages in one register, the same constant moves both, and two
 * registers keep four chains in flight. The lanes of a register never
 * mix, so each step is short_fold()'s (crc32_pclmul.c) on 128-bit lanes.
 */
static inline __m256i
load_pair(const uint8_t *a, const uint8_t *b, const uint8_t *ones, size_t off)
{
	__m256i y = _mm256_loadu2_m128i((const __m128i *)(b + off),
					(const __m128i *)(a + off));

	if (off >= CRC_ONES_LEN)
		return y;
	return _mm256_or_si256(y, _mm256_broadcastsi128_si256(
				       _mm_loadu_si128((const __m128i *)(ones + off))));
}

/* The constant pair moving a lane @p m lanes ahead, in both halves. */
static inline __m256i
load_lane_k(size_t m)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)crc_k.lane[m]));
}

static inline __m256i
fold_lanes(__m256i y, __m256i k)
{
	return _mm256_xor_si256(_mm256_clmulepi64_epi128(y, k, 0x00),
				_mm256_clmulepi64_epi128(y, k, 0x11));
}

/* reduce128() of crc32_pclmul.c on both lanes; the registers in 32-bit
 * elements 1 and 5.
 */
static inline __m256i
reduce_lanes(__m256i x)
{
	const __m256i mask32 = _mm256_set_epi32(0, 0, 0, -1, 0, 0, 0, -1);
	const __m256i k64v = _mm256_set_epi64x(0, (long long)crc_k.k64,
					       0, (long long)crc_k.k64);
	const __m256i k128 = pair256(crc_k.k160, crc_k.k96);
	const __m256i barrett = pair256(crc_k.poly, crc_k.mu);
	__m256i t;

	t = _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k128, 0x10),
			     _mm256_bsrli_epi128(x, 8));
	t = _mm256_xor_si256(_mm256_clmulepi64_epi128(_mm256_and_si256(t, mask32),
						      k64v, 0x00),
			     _mm256_bsrli_epi128(t, 4));
	x = _mm256_clmulepi64_epi128(_mm256_and_si256(t, mask32), barrett, 0x10);
	x = _mm256_clmulepi64_epi128(_mm256_and_si256(x, mask32), barrett, 0x00);
	return _mm256_xor_si256(t, x);
}

/* Messages @p a and @p b of @p n bytes, CRC_X4_MIN..CRC_SHORT_MAX: three
 * lanes or more.
 */
static inline __attribute__((always_inline)) __m256i
short_fold_pair(uint32_t reg, const uint8_t *a, const uint8_t *b, size_t n,
		const uint8_t *ones)
{
	size_t zeros = (16 - n % 16) % 16, lanes = (n + zeros) / 16;
	__m256i regv = _mm256_set_epi32(0, 0, 0, (int)reg, 0, 0, 0, (int)reg);
	__m256i up = _mm256_broadcastsi128_si256(
		_mm_loadu_si128((const __m128i *)(crc_shift_table + 16 - zeros)));
	__m256i first = _mm256_shuffle_epi8(_mm256_xor_si256(load_pair(a, b, ones, 0), regv), up);
	__m256i x;

	x = _mm256_xor_si256(fold_lanes(first, load_lane_k(lanes - 1)),
			     load_pair(a, b, ones, n - 16));
	for (size_t j = 1; j < lanes - 1; j++)
		x = _mm256_xor_si256(x, fold_lanes(load_pair(a, b, ones, 16 * j - zeros),
						   load_lane_k(lanes - 1 - j)));
	if (zeros > 12) {
		__m256i spill = _mm256_shuffle_epi8(regv, _mm256_broadcastsi128_si256(
			_mm_loadu_si128((const __m128i *)(crc_shift_table + 32 - zeros))));

		x = _mm256_xor_si256(x, fold_lanes(spill, load_lane_k(lanes - 2)));
	}
	return reduce_lanes(x);
}

/* Bits 0 and 1: whether the registers in elements 1 and 5 equal @p want. */
static inline unsigned int
lanes_equal(__m256i r, __m256i want)
{
	unsigned int m = (unsigned int)_mm256_movemask_ps(
		_mm256_castsi256_ps(_mm256_cmpeq_epi32(r, want)));

	return (m >> 1 & 1) | (m >> 4 & 2);
}

unsigned int
crc_ones_short_x4_equal_vpclmul256(uint32_t reg, const void *const p[4], size_t n,
				   const uint8_t *ones, uint32_t want)
{
	__m256i r01 = short_fold_pair(reg, p[0], p[1], n, ones);
	__m256i r23 = short_fold_pair(reg, p[2], p[3], n, ones);
	__m256i w = _mm256_set1_epi32((int)want);

	return lanes_equal(r01, w) | lanes_equal(r23, w) << 2;
}
