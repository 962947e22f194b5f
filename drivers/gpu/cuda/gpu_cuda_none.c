/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Built in place of the CUDA driver when no cuda.h was found. */

#include <errno.h>
#include <stdio.h>

#include "droce_gpu_drivers.h"

int
droce_gpu_cuda_probe(char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "droce was built without CUDA (no cuda.h at build time; meson -Dcuda=enabled -Dcudadir=DIR)");
	return -ENOTSUP;
}

bool
droce_gpu_is_cuda(int16_t dev_id)
{
	(void)dev_id;
	return false;
}

int
droce_gpu_cuda_dtoh(int16_t dev_id, void *dst, const void *gpu_src, size_t len)
{
	(void)dev_id;
	(void)dst;
	(void)gpu_src;
	(void)len;
	return -ENOTSUP;
}

int
droce_gpu_cuda_htod(int16_t dev_id, void *gpu_dst, const void *src, size_t len)
{
	(void)dev_id;
	(void)gpu_dst;
	(void)src;
	(void)len;
	return -ENOTSUP;
}
