/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A GPU buffer with guard regions on both sides and a model of what it
 * should hold, for tests that must prove no byte lands outside it (or
 * anywhere it should not inside it). Include after cmocka.h.
 */

#ifndef DROCE_TEST_GUARDED_BUF_H
#define DROCE_TEST_GUARDED_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "droce_gpu.h"

#define GUARD_BYTES 4096
#define GUARD_FILL 0x5a

struct guarded {
	struct droce_gpu_buf whole;
	struct droce_gpu_buf buf;   /* the middle */
	size_t size;
	uint8_t *model;
};

static inline void
guarded_alloc_size(struct guarded *g, int16_t dev, size_t size)
{
	char err[256];

	if (droce_gpu_buf_alloc(dev, size + 2 * GUARD_BYTES, 4096, &g->whole,
				err, sizeof(err)) != 0)
		fail_msg("%s", err);
	memset(g->whole.cpu, GUARD_FILL, size + 2 * GUARD_BYTES);
	g->size = size;
	g->buf = g->whole;
	g->buf.gpu = (uint8_t *)g->whole.gpu + GUARD_BYTES;
	g->buf.cpu = (uint8_t *)g->whole.cpu + GUARD_BYTES;
	g->buf.size = size;
	g->model = malloc(size);
	assert_non_null(g->model);
	memset(g->model, GUARD_FILL, size);
}

/* The guards are intact and the buffer matches the model, byte by byte. */
static inline void
guarded_check(const struct guarded *g)
{
	const uint8_t *w = g->whole.cpu, *b = g->buf.cpu;

	for (size_t i = 0; i < GUARD_BYTES; i++)
		if (w[i] != GUARD_FILL || w[GUARD_BYTES + g->size + i] != GUARD_FILL)
			fail_msg("a byte outside the buffer was written (guard %s, %zu)",
				 w[i] != GUARD_FILL ? "before" : "after", i);
	if (memcmp(b, g->model, g->size) != 0)
		for (size_t i = 0; i < g->size; i++)
			if (b[i] != g->model[i])
				fail_msg("byte %zu: %#x placed, %#x expected", i,
					 b[i], g->model[i]);
}

static inline void
guarded_free(struct guarded *g)
{
	droce_gpu_buf_free(&g->whole);
	free(g->model);
}

#endif /* DROCE_TEST_GUARDED_BUF_H */
