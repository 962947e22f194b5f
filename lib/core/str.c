/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Building messages piece by piece, without cutting them silently. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "droce_core.h"

int
droce_str_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len == 0)
		return -ENOSPC;
	if (*used >= len)
		return -ENOSPC; /* cut already */
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len - *used) {
		*used += (size_t)n;
		return 0;
	}
	/* Show that the text goes on. */
	if (len >= 4)
		memcpy(buf + len - 4, "...", 4);
	else
		buf[len - 1] = '\0';
	*used = len;
	return -ENOSPC;
}
