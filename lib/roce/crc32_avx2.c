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
