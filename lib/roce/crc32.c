/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * CRC-32: the portable slicing-by-8 path, the constants of the folding
 * paths (derived here from the polynomial, not typed in), and the choice
 * of implementation.
 */

#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_vect.h>

#include "crc32_private.h"

uint32_t crc_table[8][256];
struct crc_fold_consts crc_k;
enum droce_crc_impl crc_active = DROCE_CRC_AUTO;

/* x^n mod P(x), P = x^32 + 0x04C11DB7, in normal (unreflected) order. */
static uint32_t
xn_mod_p(unsigned int n)
{
	uint64_t r = 1;

	for (unsigned int i = 0; i < n; i++) {
		r <<= 1;
		if (r & (1ull << 32))
			r ^= 0x104c11db7ull;
	}
	return (uint32_t)r;
}

static uint64_t
reflect(uint64_t v, unsigned int bits)
{
	uint64_t r = 0;

	for (unsigned int i = 0; i < bits; i++)
		if (v & (1ull << i))
			r |= 1ull << (bits - 1 - i);
	return r;
}

static uint64_t
fold_k(unsigned int n)
{
	return reflect(xn_mod_p(n), 32) << 1;
}

/* floor(x^64 / P(x)), 33 bits: long division, one dividend bit at a time. */
static uint64_t
barrett_mu(void)
{
	uint64_t rem = 0, q = 0;

	for (int bit = 64; bit >= 0; bit--) {
		rem = (rem << 1) | (bit == 64);
		q <<= 1;
		if (rem & (1ull << 32)) {
			rem ^= 0x104c11db7ull;
			q |= 1;
		}
	}
	return q;
}

RTE_INIT(crc_init)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC_POLY_REFLECTED & -(c & 1));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];

	crc_k.k544 = fold_k(544);
	crc_k.k480 = fold_k(480);
	crc_k.k160 = fold_k(160);
	crc_k.k96 = fold_k(96);
	crc_k.k288 = fold_k(288);
	crc_k.k224 = fold_k(224);
	crc_k.k416 = fold_k(416);
	crc_k.k352 = fold_k(352);
	crc_k.k1056 = fold_k(1056);
	crc_k.k992 = fold_k(992);
	crc_k.k2080 = fold_k(2080);
	crc_k.k2016 = fold_k(2016);
	crc_k.k64 = fold_k(64);
	for (unsigned int m = 1; m < RTE_DIM(crc_k.lane); m++) {
		crc_k.lane[m][0] = fold_k(128 * m + 32);
		crc_k.lane[m][1] = fold_k(128 * m - 32);
	}
	crc_k.mu = reflect(barrett_mu(), 33);
	crc_k.poly = reflect(0x104c11db7ull, 33);
}

static inline uint32_t
table_byte(uint32_t reg, uint8_t b)
{
	return crc_table[0][(reg ^ b) & 0xff] ^ (reg >> 8);
}

uint32_t
crc_reg_table(uint32_t reg, const uint8_t *p, size_t n)
{
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		v ^= reg;
		reg = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
		      crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
		      crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
		      crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
	}
#endif
	for (; n > 0; n--)
		reg = table_byte(reg, *p++);
	return reg;
}

uint32_t
crc_reg_copy_table(uint32_t reg, const uint8_t *src, uint8_t *dst, size_t n)
{
	memcpy(dst, src, n);
	return crc_reg_table(reg, src, n);
}

static bool
cpu_has(enum droce_crc_impl impl)
{
	switch (impl) {
	case DROCE_CRC_TABLE:
		return true;
#if CRC_HAVE_X86
	case DROCE_CRC_PCLMUL:
		return rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) > 0 &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_SSE4_1) > 0;
	case DROCE_CRC_VPCLMUL256:
		return cpu_has(DROCE_CRC_PCLMUL) &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX2) > 0 &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) > 0;
	case DROCE_CRC_AVX512:
		return cpu_has(DROCE_CRC_PCLMUL) &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0 &&
		       rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) > 0;
#endif
	default:
		return false;
	}
}

/* The implementations this CPU has, one bit each, looked up once:
 * rte_cpu_get_flag_enabled() runs CPUID, which a hypervisor traps.
 */
static unsigned int
cpu_impls(void)
{
	static unsigned int have;       /* 0: not looked up yet */
	unsigned int h = __atomic_load_n(&have, __ATOMIC_RELAXED);

	if (h == 0) {
		for (int impl = DROCE_CRC_TABLE; impl <= DROCE_CRC_AVX512; impl++)
			if (cpu_has((enum droce_crc_impl)impl))
				h |= 1u << impl;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}

enum droce_crc_impl
crc_resolve(void)
{
	uint16_t bitwidth = rte_vect_get_max_simd_bitwidth();
	unsigned int have = cpu_impls();
	bool eal_up = bitwidth != 0;
	enum droce_crc_impl impl = DROCE_CRC_TABLE;

	/* Before rte_eal_init() DPDK has no SIMD policy yet (the bitwidth
	 * reads 0): this call goes by its default, 256 bits, and the next
	 * one looks again, so that what the user tells the EAL counts once
	 * it is up. Kept from that first call, the choice would be 128-bit
	 * PCLMULQDQ for the life of the process.
	 */
	if (!eal_up)
		bitwidth = RTE_VECT_SIMD_256;
	if ((have & (1u << DROCE_CRC_AVX512)) && bitwidth >= RTE_VECT_SIMD_512)
		impl = DROCE_CRC_AVX512;
	else if ((have & (1u << DROCE_CRC_VPCLMUL256)) && bitwidth >= RTE_VECT_SIMD_256)
		impl = DROCE_CRC_VPCLMUL256;
	else if (have & (1u << DROCE_CRC_PCLMUL))
		impl = DROCE_CRC_PCLMUL;
	if (eal_up)
		__atomic_store_n(&crc_active, impl, __ATOMIC_RELAXED);
	return impl;
}

int
droce_crc_select(enum droce_crc_impl impl)
{
	if (impl == DROCE_CRC_AUTO) {
		__atomic_store_n(&crc_active, DROCE_CRC_AUTO, __ATOMIC_RELAXED);
		return crc_resolve();
	}
	if ((unsigned int)impl > DROCE_CRC_AVX512 || !(cpu_impls() & (1u << impl)))
		return -ENOTSUP;
	__atomic_store_n(&crc_active, impl, __ATOMIC_RELAXED);
	return impl;
}

bool
droce_crc_cpu_has(enum droce_crc_impl impl)
{
	return (unsigned int)impl <= DROCE_CRC_AVX512 && (cpu_impls() & (1u << impl)) != 0;
}

const char *
droce_crc_impl_name(void)
{
	switch (crc_impl_now()) {
	case DROCE_CRC_AVX512:
		return "avx512-vpclmulqdq";
	case DROCE_CRC_VPCLMUL256:
		return "avx2-vpclmulqdq";
	case DROCE_CRC_PCLMUL:
		return "pclmulqdq";
	default:
		return "table";
	}
}

uint32_t
droce_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_reg(~crc, buf, len);
}
