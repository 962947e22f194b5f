/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CRC32_X86_H
#define DROCE_CRC32_X86_H

/*
 * Carry-less folding of CRC-32 on x86 (the method of Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ"): keep the data in
 * 128-bit lanes, multiply each lane by x^D mod P to move it D bits ahead
 * onto later data, and reduce the last lane to 32 bits with Barrett.
 * Only for files compiled with -mpclmul -msse4.1 (or more).
 */

#include <immintrin.h>

#include "crc32_private.h"

/* Constant pair for moving a lane D bits ahead: low half k(D+32), high k(D-32). */
static inline __m128i
fold_pair(uint64_t k_lo, uint64_t k_hi)
{
	return _mm_set_epi64x((long long)k_hi, (long long)k_lo);
}

/* Lane @x moved ahead by the pair's distance. */
static inline __m128i
fold128(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

/* pshufb controls: from offset 16 - s, shift a lane up by s bytes (zeros
 * in); from 16 + s, shift it down by s bytes.
 */
extern const uint8_t crc_shift_table[48];

/* Continue from a folded 128-bit lane @x: fold in the remaining whole
 * 16-byte blocks, reduce to the 32-bit register, finish the last bytes
 * with the table.
 */
uint32_t crc_pclmul_finish(__m128i x, const uint8_t *p, size_t n);

#endif /* DROCE_CRC32_X86_H */
