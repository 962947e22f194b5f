/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CORE_PRIVATE_H
#define DROCE_CORE_PRIVATE_H

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>

#include <rte_log.h>

#include "droce_core.h"

#define CORE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_core_logtype, \
		"droce.core: " fmt "\n", ##__VA_ARGS__)

/* Narrow [*start, *start + *len) to its non-space part. */
static inline void
droce_trim_span(const char **start, size_t *len)
{
	while (*len > 0 && isspace((unsigned char)**start)) {
		(*start)++;
		(*len)--;
	}
	while (*len > 0 && isspace((unsigned char)(*start)[*len - 1]))
		(*len)--;
}

static inline bool
droce_is_blank(const char *s)
{
	while (*s != '\0' && isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

/* conf_file.c: where keys come from. */
int conf_entry_index(const struct droce_conf *conf, const char *key);
int conf_entry_set(struct droce_conf *conf, const char *key, const char *value,
		   size_t value_len, const char *origin, char *err,
		   size_t errlen);
int conf_read_file(struct droce_conf *conf, const char *file, char *err,
		   size_t errlen);
int conf_read_override(struct droce_conf *conf, const char *arg, char *err,
		       size_t errlen);

#endif /* DROCE_CORE_PRIVATE_H */
