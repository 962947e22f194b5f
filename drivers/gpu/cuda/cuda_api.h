/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CUDA_API_H
#define DROCE_CUDA_API_H

/*
 * The CUDA driver API functions droce uses, resolved at run time: only
 * cuda.h's types are needed at build time, libcuda.so.1 is opened with
 * dlopen() and every function found through cuGetProcAddress, so that the
 * version of each entry point matches the header droce was built with.
 * GDRCopy (libgdrapi.so.2), for CPU mappings of GPU memory, likewise.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

struct cuda_api {
	void *lib;
	int driver_version;
	CUresult (*Init)(unsigned int flags);
	CUresult (*DriverGetVersion)(int *version);
	CUresult (*GetErrorString)(CUresult error, const char **str);
	CUresult (*DeviceGetCount)(int *count);
	CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
	CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
	CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
	CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
	CUresult (*CtxSetCurrent)(CUcontext ctx);
	CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t size);
	CUresult (*MemFree)(CUdeviceptr ptr);
	CUresult (*MemHostRegister)(void *p, size_t size, unsigned int flags);
	CUresult (*MemHostUnregister)(void *p);
	CUresult (*MemHostGetDevicePointer)(CUdeviceptr *dptr, void *p, unsigned int flags);
	CUresult (*PointerSetAttribute)(const void *value, CUpointer_attribute attr,
				       CUdeviceptr ptr);
	CUresult (*FlushGPUDirectRDMAWrites)(CUflushGPUDirectRDMAWritesTarget target,
					    CUflushGPUDirectRDMAWritesScope scope);
	CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t len);
	CUresult (*ModuleLoadData)(CUmodule *mod, const void *image);
	CUresult (*ModuleUnload)(CUmodule mod);
	CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
	CUresult (*LaunchKernel)(CUfunction f, unsigned int gx, unsigned int gy,
				 unsigned int gz, unsigned int bx, unsigned int by,
				 unsigned int bz, unsigned int shared, CUstream stream,
				 void **params, void **extra);
	CUresult (*StreamCreate)(CUstream *stream, unsigned int flags);
	CUresult (*StreamDestroy)(CUstream stream);
	CUresult (*StreamSynchronize)(CUstream stream);
	CUresult (*StreamQuery)(CUstream stream);
};

/* Open libcuda.so.1 and resolve every function; 0, or -ENOENT with @err. */
int cuda_api_load(struct cuda_api *api, char *err, size_t errlen);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for messages. */
const char *cuda_strerror(const struct cuda_api *api, CUresult r);

/* GDRCopy, the optional CPU mapping of GPU memory. */
typedef void *gdr_t;
typedef struct { unsigned long h; } gdr_mh_t;

struct gdr_api {
	void *lib;
	gdr_t g;
	gdr_t (*open)(void);
	int (*close)(gdr_t g);
	int (*pin_buffer)(gdr_t g, unsigned long addr, size_t size,
			  uint64_t p2p_token, uint32_t va_space, gdr_mh_t *handle);
	int (*unpin_buffer)(gdr_t g, gdr_mh_t handle);
	int (*map)(gdr_t g, gdr_mh_t handle, void **va, size_t size);
	int (*unmap)(gdr_t g, gdr_mh_t handle, void *va, size_t size);
	/* gdr_get_info: only the first field, the pinned range's GPU address,
	 * is read; the rest of gdr_info_t changed across GDRCopy versions.
	 */
	int (*get_info)(gdr_t g, gdr_mh_t handle, void *info);
};

/* Open libgdrapi.so.2 and the GDRCopy device; false when either is absent. */
bool gdr_api_load(struct gdr_api *api, char *why, size_t whylen);

#endif /* DROCE_CUDA_API_H */
