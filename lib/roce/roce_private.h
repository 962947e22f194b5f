/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_ROCE_PRIVATE_H
#define DROCE_ROCE_PRIVATE_H

#include <stdint.h>

/* icrc.c: the ICRC's register over the first @p n bytes of a packet from
 * its IPv4 header (no options), its variant fields masked; @p n reaches
 * at most the end of the BTH.
 */
uint32_t icrc_prefix_reg(const uint8_t *l3, uint32_t n);

/* icrc.c: copy @p payload into the packet of @p len bytes from its IPv4
 * or IPv6 header @p l3, at @p payload_off, headers and pad written, and
 * write its ICRC, in one pass over the payload.
 */
void icrc_fill_copy(uint8_t *l3, uint32_t len, uint32_t payload_off, const void *payload,
		    uint32_t payload_len);

#endif /* DROCE_ROCE_PRIVATE_H */
