/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CRC32_PRIVATE_H
#define DROCE_CRC32_PRIVATE_H

/*
 * CRC-32 (reflected polynomial 0xEDB88320) at register level: no pre- or
 * post-inversion, so that zlib's crc32(c, b, n) == ~crc_reg(~c, b, n) and
 * the ICRC can start from its own seed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_config.h>

#include "droce_roce.h"

#define CRC_POLY_REFLECTED 0xedb88320u
/* Longest message (bytes) the one-step folding of short messages takes. */
#define CRC_SHORT_MAX 256
/* Bytes at the start of a message that a mask of ones may cover. */
#define CRC_ONES_LEN 64
/* The shortest message the four-at-once passes take: three lanes or more,
 * so that the register and the first lane never reach the last.
 */
#define CRC_X4_MIN 33

/* Folding constants, computed at start from the polynomial (crc32.c):
 * k(n) is x^n mod P, bit-reflected and shifted left by one, so that a
 * 64x64 carry-less product of a reflected lane lands where folding wants
 * it. Folding a 128-bit lane D bits ahead multiplies its low half by
 * k(D + 32) and its high half by k(D - 32).
 */
struct crc_fold_consts {
	uint64_t k544, k480;    /* D = 512: 4 lanes of 128 */
	uint64_t k160, k96;     /* D = 128 */
	uint64_t k288, k224;    /* D = 256 */
	uint64_t k416, k352;    /* D = 384 */
	uint64_t k1056, k992;   /* D = 1024: 4 lanes of 256 */
	uint64_t k2080, k2016;  /* D = 2048: 4 lanes of 512 */
	uint64_t k64;           /* 64 bits to 32 */
	/* lane[m] = { k(128m + 32), k(128m - 32) }: lane m blocks ahead of
	 * the last, moved onto it in one step (short messages).
	 */
	uint64_t lane[CRC_SHORT_MAX / 16][2];
	uint64_t mu, poly;      /* Barrett reduction: x^64 / P and P, reflected */
};

extern struct crc_fold_consts crc_k;
extern uint32_t crc_table[8][256];

uint32_t crc_reg_table(uint32_t reg, const uint8_t *p, size_t n);
uint32_t crc_reg_copy_table(uint32_t reg, const uint8_t *src, uint8_t *dst,
			    size_t n);

#ifdef RTE_ARCH_X86_64
#define CRC_HAVE_X86 1
uint32_t crc_reg_pclmul(uint32_t reg, const uint8_t *p, size_t n);
uint32_t crc_reg_short_pclmul(uint32_t reg, const uint8_t *p, size_t n);
uint32_t crc_reg_copy_pclmul(uint32_t reg, const uint8_t *src, uint8_t *dst,
			     size_t n);
/* The CRC of @p n bytes whose first 64 are taken ORed with @p ones; @p n
 * 16..CRC_SHORT_MAX (short), more (pclmul), at least 128 (vpclmul256) or
 * 256 (avx512): crc_reg_ones() picks.
 */
uint32_t crc_reg_ones_short_pclmul(uint32_t reg, const uint8_t *p, size_t n,
				   const uint8_t *ones);
uint32_t crc_reg_ones_pclmul(uint32_t reg, const uint8_t *p, size_t n,
			     const uint8_t *ones);
uint32_t crc_reg_ones_vpclmul256(uint32_t reg, const uint8_t *p, size_t n,
				 const uint8_t *ones);
uint32_t crc_reg_ones_avx512(uint32_t reg, const uint8_t *p, size_t n,
			     const uint8_t *ones);
uint32_t crc_reg_vpclmul256(uint32_t reg, const uint8_t *p, size_t n);
uint32_t crc_reg_copy_vpclmul256(uint32_t reg, const uint8_t *src,
				 uint8_t *dst, size_t n, bool stream);
uint32_t crc_reg_avx512(uint32_t reg, const uint8_t *p, size_t n);
uint32_t crc_reg_copy_avx512(uint32_t reg, const uint8_t *src, uint8_t *dst,
			     size_t n, bool stream);
/* Bit k set where crc_reg_ones_short_pclmul() of message @p p[k] (@p n
 * bytes each, CRC_X4_MIN..CRC_SHORT_MAX) is @p want.
 */
unsigned int crc_ones_short_x4_equal_vpclmul256(uint32_t reg, const void *const p[4],
						size_t n, const uint8_t *ones, uint32_t want);
unsigned int crc_ones_short_x4_equal_avx512(uint32_t reg, const void *const p[4],
					    size_t n, const uint8_t *ones, uint32_t want);
#else
#define CRC_HAVE_X86 0
#endif

/* The implementation in use: AUTO until resolved, at the first use after
 * EAL init (only then is the SIMD bitwidth the user allowed known).
 */
extern enum droce_crc_impl crc_active;
/* The implementation AUTO stands for now; kept in crc_active once the EAL
 * is up.
 */
enum droce_crc_impl crc_resolve(void);

static inline enum droce_crc_impl
crc_impl_now(void)
{
	enum droce_crc_impl impl = __atomic_load_n(&crc_active, __ATOMIC_RELAXED);

	return likely(impl != DROCE_CRC_AUTO) ? impl : crc_resolve();
}

/* Direct calls behind a predictable branch: no per-packet pointer call. */
static inline uint32_t
crc_reg(uint32_t reg, const void *p, size_t n)
{
#if CRC_HAVE_X86
	switch (crc_impl_now()) {
	case DROCE_CRC_AVX512:
		return crc_reg_avx512(reg, p, n);
	case DROCE_CRC_VPCLMUL256:
		return crc_reg_vpclmul256(reg, p, n);
	case DROCE_CRC_PCLMUL:
		return crc_reg_pclmul(reg, p, n);
	default:
		break;
	}
#endif
	return crc_reg_table(reg, p, n);
}

/* The CRC of @p n bytes at @p p with their first 64 ORed with @p ones (the
 * ICRC's masked fields), in one pass, into @p out. @p ones holds
 * CRC_SHORT_MAX bytes, zero past the first 64 (the short path reads a
 * lane's share of it wherever the lane lies). False where the
 * implementation has no such pass (the table, fewer than 16 bytes), and
 * the caller masks a copy instead.
 */
static inline bool
crc_reg_ones(uint32_t reg, const void *p, size_t n, const uint8_t ones[CRC_SHORT_MAX],
	     uint32_t *out)
{
#if CRC_HAVE_X86
	enum droce_crc_impl impl = crc_impl_now();

	if (impl == DROCE_CRC_TABLE || n < 16)
		return false;
	if (n <= CRC_SHORT_MAX && (impl != DROCE_CRC_VPCLMUL256 || n < 128))
		*out = crc_reg_ones_short_pclmul(reg, p, n, ones);
	else if (impl == DROCE_CRC_AVX512)
		*out = crc_reg_ones_avx512(reg, p, n, ones);
	else if (impl == DROCE_CRC_VPCLMUL256)
		*out = crc_reg_ones_vpclmul256(reg, p, n, ones);
	else
		*out = crc_reg_ones_pclmul(reg, p, n, ones);
	return true;
#else
	RTE_SET_USED(reg);
	RTE_SET_USED(p);
	RTE_SET_USED(n);
	RTE_SET_USED(ones);
	RTE_SET_USED(out);
	return false;
#endif
}

/* crc_reg_ones() of four messages of @p n bytes each
 * (CRC_X4_MIN..CRC_SHORT_MAX) at once, compared with @p want: bit k of
 * @p *equal set where message @p p[k]'s register is @p want. False where
 * the implementation has no such pass (one of less than 256 bits), and
 * the caller takes them one by one.
 */
static inline bool
crc_ones_x4_equal(uint32_t reg, const void *const p[4], size_t n,
		  const uint8_t ones[CRC_SHORT_MAX], uint32_t want, unsigned int *equal)
{
#if CRC_HAVE_X86
	enum droce_crc_impl impl = crc_impl_now();

	if ((impl != DROCE_CRC_VPCLMUL256 && impl != DROCE_CRC_AVX512) ||
	    n < CRC_X4_MIN || n > CRC_SHORT_MAX)
		return false;
	if (impl == DROCE_CRC_AVX512)
		*equal = crc_ones_short_x4_equal_avx512(reg, p, n, ones, want);
	else
		*equal = crc_ones_short_x4_equal_vpclmul256(reg, p, n, ones, want);
	return true;
#else
	RTE_SET_USED(reg);
	RTE_SET_USED(p);
	RTE_SET_USED(n);
	RTE_SET_USED(ones);
	RTE_SET_USED(want);
	RTE_SET_USED(equal);
	return false;
#endif
}

/* @p stream: streaming stores where the implementation has them and @p dst
 * is aligned for them (the 256- and 512-bit ones).
 */
static inline uint32_t
crc_reg_copy(uint32_t reg, const void *src, void *dst, size_t n, bool stream)
{
#if CRC_HAVE_X86
	switch (crc_impl_now()) {
	case DROCE_CRC_AVX512:
		return crc_reg_copy_avx512(reg, src, dst, n, stream);
	case DROCE_CRC_VPCLMUL256:
		return crc_reg_copy_vpclmul256(reg, src, dst, n, stream);
	case DROCE_CRC_PCLMUL:
		return crc_reg_copy_pclmul(reg, src, dst, n);
	default:
		break;
	}
#endif
	return crc_reg_copy_table(reg, src, dst, n);
}

#endif /* DROCE_CRC32_PRIVATE_H */
