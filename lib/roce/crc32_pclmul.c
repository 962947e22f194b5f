/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * CRC-32 with PCLMULQDQ: four 128-bit lanes fold 64 bytes per round, so
 * four multiplications are in flight and the loop runs at the multiplier's
 * throughput rather than its latency (DPDK's own SSE4.2 CRC folds one lane).
 * The copying variant stores each block it loads: one pass over the bytes.
 */

#include <string.h>

#include "crc32_x86.h"

/* 128 -> 32 bits: fold the high 64 bits in, then 64 -> 32, then Barrett. */
static inline uint32_t
reduce128(__m128i x)
{
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	const __m128i k64v = _mm_set_epi64x(0, (long long)crc_k.k64);
	const __m128i k128 = fold_pair(crc_k.k160, crc_k.k96);
	const __m128i barrett = _mm_set_epi64x((long long)crc_k.mu,
					       (long long)crc_k.poly);
	__m128i t;

	/* low 64 bits times k(96), plus the high 64 bits: 96 bits left */
	t = _mm_xor_si128(_mm_clmulepi64_si128(x, k128, 0x10),
			  _mm_srli_si128(x, 8));
	/* low 32 bits times k(64), plus the rest: 64 bits left */
	t = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(t, mask32),
					       k64v, 0x00),
			  _mm_srli_si128(t, 4));
	/* Barrett: q = (t mod x^32) * mu; t + (q mod x^32) * P */
	x = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), barrett, 0x10);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), barrett, 0x00);
	return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x), 1);
}

/* 0x80 selects a zero. */
const uint8_t crc_shift_table[48] __rte_aligned(16) = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* From offset r: keeps the top r bytes of a lane. */
static const uint8_t top_bytes_mask[32] __rte_aligned(16) = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

/* The last 1..15 bytes without the table. The pending lane @x holds the
 * 16 bytes before @p (b0..b15); with the r new bytes t the message ends
 * b0..b15 t. Its last 16 bytes (b_r..b15 t) become the new lane, and
 * b0..b_(r-1), as the top of a lane 16 bytes before it, fold onto it.
 * The load reaches back 16 - r bytes into data already folded, which
 * the caller's buffer holds.
 */
static inline __m128i
fold_partial(__m128i x, const uint8_t *p, size_t r)
{
	const __m128i k128 = fold_pair(crc_k.k160, crc_k.k96);
	/* b0..b_(r-1) to the top r bytes: up by 16 - r */
	__m128i up = _mm_loadu_si128((const __m128i *)(crc_shift_table + r));
	/* b_r..b15 to the bottom: down by r */
	__m128i down = _mm_loadu_si128((const __m128i *)(crc_shift_table + 16 + r));
	__m128i keep = _mm_loadu_si128((const __m128i *)(top_bytes_mask + r));
	__m128i tail = _mm_and_si128(_mm_loadu_si128((const __m128i *)(p + r - 16)),
				     keep);

	return _mm_xor_si128(fold128(_mm_shuffle_epi8(x, up), k128),
			     _mm_or_si128(_mm_shuffle_epi8(x, down), tail));
}

uint32_t
crc_pclmul_finish(__m128i x, const uint8_t *p, size_t n)
{
	const __m128i k128 = fold_pair(crc_k.k160, crc_k.k96);

	for (; n >= 16; n -= 16, p += 16)
		x = _mm_xor_si128(fold128(x, k128),
				  _mm_loadu_si128((const __m128i *)p));
	if (n != 0)
		x = fold_partial(x, p, n);
	return reduce128(x);
}

/*
 * 16..CRC_SHORT_MAX bytes (headers, small packets): every lane moves onto
 * the last one in a single step, with the constant for its own distance,
 * so that no multiplication waits for another; the chained folding of
 * longer messages would make each wait for the one before. The message
 * is taken as if zero bytes came before it, up to a multiple of 16: with
 * the register folded into its first bytes, leading zeros change nothing.
 */
static inline __m128i
load_ones(const uint8_t *p, const uint8_t *ones, size_t off)
{
	__m128i b = _mm_loadu_si128((const __m128i *)(p + off));

	return ones == NULL ? b
		: _mm_or_si128(b, _mm_loadu_si128((const __m128i *)(ones + off)));
}

/* @p ones: NULL, or CRC_SHORT_MAX bytes ORed into the message's (a
 * constant where this is inlined).
 */
static inline __attribute__((always_inline)) uint32_t
short_fold(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	size_t zeros = (16 - n % 16) % 16, lanes = (n + zeros) / 16;
	__m128i regv = _mm_cvtsi32_si128((int)reg);
	/* The first lane: zeros, then the first 16 - zeros bytes. */
	__m128i up = _mm_loadu_si128((const __m128i *)(crc_shift_table + 16 - zeros));
	__m128i first = _mm_shuffle_epi8(_mm_xor_si128(load_ones(p, ones, 0), regv), up);
	__m128i x;

	if (lanes == 1)
		return reduce128(first);
	x = _mm_xor_si128(fold128(first, _mm_loadu_si128((const __m128i *)crc_k.lane[lanes - 1])),
			  load_ones(p, ones, n - 16));
	for (size_t j = 1; j < lanes - 1; j++)
		x = _mm_xor_si128(x, fold128(load_ones(p, ones, 16 * j - zeros),
					     _mm_loadu_si128((const __m128i *)crc_k.lane[lanes - 1 - j])));
	if (zeros > 12) {
		/* The first lane holds less than the register: the rest of
		 * it goes with the second lane's bytes, down by 16 - zeros.
		 */
		__m128i spill = _mm_shuffle_epi8(regv, _mm_loadu_si128((const __m128i *)
						 (crc_shift_table + 32 - zeros)));

		x = _mm_xor_si128(x, lanes == 2 ? spill
			: fold128(spill, _mm_loadu_si128((const __m128i *)crc_k.lane[lanes - 2])));
	}
	return reduce128(x);
}

uint32_t
crc_reg_short_pclmul(uint32_t reg, const uint8_t *p, size_t n)
{
	return short_fold(reg, p, n, NULL);
}

uint32_t
crc_reg_ones_short_pclmul(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	return short_fold(reg, p, n, ones);
}

/* The four lanes of 64 bytes folded into one. */
static inline __m128i
merge4(__m128i x0, __m128i x1, __m128i x2, __m128i x3)
{
	const __m128i k128 = fold_pair(crc_k.k160, crc_k.k96);

	x1 = _mm_xor_si128(fold128(x0, k128), x1);
	x2 = _mm_xor_si128(fold128(x1, k128), x2);
	return _mm_xor_si128(fold128(x2, k128), x3);
}

/* More than CRC_SHORT_MAX bytes; the first 64 ORed with @p ones (NULL: a
 * plain CRC, a constant where this is inlined).
 */
static inline __attribute__((always_inline)) uint32_t
fold(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	const __m128i k512 = fold_pair(crc_k.k544, crc_k.k480);
	const __m128i *v = (const __m128i *)p;
	__m128i x0, x1, x2, x3;

	x0 = _mm_loadu_si128(v);
	x1 = _mm_loadu_si128(v + 1);
	x2 = _mm_loadu_si128(v + 2);
	x3 = _mm_loadu_si128(v + 3);
	if (ones != NULL) {
		const __m128i *o = (const __m128i *)ones;

		x0 = _mm_or_si128(x0, _mm_loadu_si128(o));
		x1 = _mm_or_si128(x1, _mm_loadu_si128(o + 1));
		x2 = _mm_or_si128(x2, _mm_loadu_si128(o + 2));
		x3 = _mm_or_si128(x3, _mm_loadu_si128(o + 3));
	}
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)reg));
	for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
		v = (const __m128i *)p;
		x0 = _mm_xor_si128(fold128(x0, k512), _mm_loadu_si128(v));
		x1 = _mm_xor_si128(fold128(x1, k512), _mm_loadu_si128(v + 1));
		x2 = _mm_xor_si128(fold128(x2, k512), _mm_loadu_si128(v + 2));
		x3 = _mm_xor_si128(fold128(x3, k512), _mm_loadu_si128(v + 3));
	}
	return crc_pclmul_finish(merge4(x0, x1, x2, x3), p, n);
}

uint32_t
crc_reg_pclmul(uint32_t reg, const uint8_t *p, size_t n)
{
	if (n < 16)
		return crc_reg_table(reg, p, n);
	if (n <= CRC_SHORT_MAX)
		return crc_reg_short_pclmul(reg, p, n);
	return fold(reg, p, n, NULL);
}

uint32_t
crc_reg_ones_pclmul(uint32_t reg, const uint8_t *p, size_t n, const uint8_t *ones)
{
	return fold(reg, p, n, ones);
}

/* Load a block, store it at the destination, hand it to the fold. */
static inline __m128i
copy16(const uint8_t *src, uint8_t *dst)
{
	__m128i b = _mm_loadu_si128((const __m128i *)src);

	_mm_storeu_si128((__m128i *)dst, b);
	return b;
}

uint32_t
crc_reg_copy_pclmul(uint32_t reg, const uint8_t *src, uint8_t *dst, size_t n)
{
	const __m128i k512 = fold_pair(crc_k.k544, crc_k.k480);
	const __m128i k128 = fold_pair(crc_k.k160, crc_k.k96);
	__m128i x0, x1, x2, x3;

	if (n < 16)
		return crc_reg_copy_table(reg, src, dst, n);
	if (n < 64) {
		memcpy(dst, src, n);
		return crc_reg_short_pclmul(reg, src, n);
	}
	x0 = _mm_xor_si128(copy16(src, dst), _mm_cvtsi32_si128((int)reg));
	x1 = copy16(src + 16, dst + 16);
	x2 = copy16(src + 32, dst + 32);
	x3 = copy16(src + 48, dst + 48);
	for (src += 64, dst += 64, n -= 64; n >= 64;
	     src += 64, dst += 64, n -= 64) {
		x0 = _mm_xor_si128(fold128(x0, k512), copy16(src, dst));
		x1 = _mm_xor_si128(fold128(x1, k512), copy16(src + 16, dst + 16));
		x2 = _mm_xor_si128(fold128(x2, k512), copy16(src + 32, dst + 32));
		x3 = _mm_xor_si128(fold128(x3, k512), copy16(src + 48, dst + 48));
	}
	x0 = merge4(x0, x1, x2, x3);
	for (; n >= 16; n -= 16, src += 16, dst += 16)
		x0 = _mm_xor_si128(fold128(x0, k128), copy16(src, dst));
	memcpy(dst, src, n);
	if (n != 0)
		x0 = fold_partial(x0, src, n);
	return reduce128(x0);
}
