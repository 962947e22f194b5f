/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Loading the CUDA driver API and GDRCopy at run time. */

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"

/* cuGetProcAddress as CUDA 12 and later export it (cuGetProcAddress_v2),
 * and as CUDA 11.3 to 11.8 did.
 */
typedef CUresult (*get_proc_v2_t)(const char *symbol, void **pfn, int version,
				  cuuint64_t flags,
				  CUdriverProcAddressQueryResult *status);
typedef CUresult (*get_proc_v1_t)(const char *symbol, void **pfn, int version,
				  cuuint64_t flags);

struct resolver {
	get_proc_v2_t v2;
	get_proc_v1_t v1;
};

static int
resolve(const struct resolver *r, const char *name, void **fn)
{
	CUdriverProcAddressQueryResult status;
	CUresult ret;

	*fn = NULL;
	if (r->v2 != NULL)
		ret = r->v2(name, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
	else
		ret = r->v1(name, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
	return ret == CUDA_SUCCESS && *fn != NULL ? 0 : -ENOENT;
}

int
cuda_api_load(struct cuda_api *api, char *err, size_t errlen)
{
	const struct {
		const char *name;
		void **fn;
	} fns[] = {
		{ "cuInit", (void **)&api->Init },
		{ "cuDriverGetVersion", (void **)&api->DriverGetVersion },
		{ "cuGetErrorString", (void **)&api->GetErrorString },
		{ "cuDeviceGetCount", (void **)&api->DeviceGetCount },
		{ "cuDeviceGet", (void **)&api->DeviceGet },
		{ "cuDeviceGetName", (void **)&api->DeviceGetName },
		{ "cuDeviceTotalMem", (void **)&api->DeviceTotalMem },
		{ "cuDeviceGetAttribute", (void **)&api->DeviceGetAttribute },
		{ "cuDevicePrimaryCtxRetain", (void **)&api->DevicePrimaryCtxRetain },
		{ "cuDevicePrimaryCtxRelease", (void **)&api->DevicePrimaryCtxRelease },
		{ "cuCtxSetCurrent", (void **)&api->CtxSetCurrent },
		{ "cuMemAlloc", (void **)&api->MemAlloc },
		{ "cuMemFree", (void **)&api->MemFree },
		{ "cuMemHostRegister", (void **)&api->MemHostRegister },
		{ "cuMemHostUnregister", (void **)&api->MemHostUnregister },
		{ "cuMemHostGetDevicePointer", (void **)&api->MemHostGetDevicePointer },
		{ "cuPointerSetAttribute", (void **)&api->PointerSetAttribute },
		{ "cuFlushGPUDirectRDMAWrites", (void **)&api->FlushGPUDirectRDMAWrites },
		{ "cuMemcpyHtoD", (void **)&api->MemcpyHtoD },
		{ "cuMemcpyDtoH", (void **)&api->MemcpyDtoH },
		{ "cuModuleLoadData", (void **)&api->ModuleLoadData },
		{ "cuModuleUnload", (void **)&api->ModuleUnload },
		{ "cuModuleGetFunction", (void **)&api->ModuleGetFunction },
		{ "cuLaunchKernel", (void **)&api->LaunchKernel },
		{ "cuStreamCreate", (void **)&api->StreamCreate },
		{ "cuStreamDestroy", (void **)&api->StreamDestroy },
		{ "cuStreamSynchronize", (void **)&api->StreamSynchronize },
		{ "cuStreamQuery", (void **)&api->StreamQuery },
	};
	struct resolver r;

	memset(api, 0, sizeof(*api));
	api->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (api->lib == NULL) {
		snprintf(err, errlen, "no CUDA driver: %s", dlerror());
		return -ENOENT;
	}
	r.v2 = (get_proc_v2_t)dlsym(api->lib, "cuGetProcAddress_v2");
	r.v1 = (get_proc_v1_t)dlsym(api->lib, "cuGetProcAddress");
	if (r.v2 == NULL && r.v1 == NULL) {
		snprintf(err, errlen, "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress (CUDA 11.3 or later needed)");
		goto fail;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (resolve(&r, fns[i].name, fns[i].fn) != 0) {
			snprintf(err, errlen, "CUDA driver lacks %s (built against CUDA %d.%d)",
				 fns[i].name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
			goto fail;
		}
	}
	if (api->Init(0) != CUDA_SUCCESS) {
		snprintf(err, errlen, "no CUDA driver: cuInit failed (no GPU, or its kernel module is not loaded)");
		goto fail;
	}
	api->DriverGetVersion(&api->driver_version);
	return 0;
fail:
	dlclose(api->lib);
	api->lib = NULL;
	return -ENOENT;
}

const char *
cuda_strerror(const struct cuda_api *api, CUresult r)
{
	const char *s = NULL;

	if (api->GetErrorString == NULL || api->GetErrorString(r, &s) != CUDA_SUCCESS ||
	    s == NULL)
		return "unknown CUDA error";
	return s;
}

bool
gdr_api_load(struct gdr_api *api, char *why, size_t whylen)
{
	memset(api, 0, sizeof(*api));
	api->lib = dlopen("libgdrapi.so.2", RTLD_NOW | RTLD_LOCAL);
	if (api->lib == NULL) {
		snprintf(why, whylen, "GDRCopy not found (%s)", dlerror());
		return false;
	}
	api->open = (gdr_t (*)(void))dlsym(api->lib, "gdr_open");
	api->close = (int (*)(gdr_t))dlsym(api->lib, "gdr_close");
	api->pin_buffer = (int (*)(gdr_t, unsigned long, size_t, uint64_t, uint32_t,
				   gdr_mh_t *))dlsym(api->lib, "gdr_pin_buffer");
	api->unpin_buffer = (int (*)(gdr_t, gdr_mh_t))dlsym(api->lib, "gdr_unpin_buffer");
	api->map = (int (*)(gdr_t, gdr_mh_t, void **, size_t))dlsym(api->lib, "gdr_map");
	api->unmap = (int (*)(gdr_t, gdr_mh_t, void *, size_t))dlsym(api->lib, "gdr_unmap");
	api->get_info = (int (*)(gdr_t, gdr_mh_t, void *))dlsym(api->lib, "gdr_get_info_v2");
	if (api->get_info == NULL)
		api->get_info = (int (*)(gdr_t, gdr_mh_t, void *))dlsym(api->lib, "gdr_get_info");
	if (api->open == NULL || api->pin_buffer == NULL || api->map == NULL ||
	    api->unmap == NULL || api->unpin_buffer == NULL || api->get_info == NULL) {
		snprintf(why, whylen, "libgdrapi.so.2 lacks the GDRCopy 2.x API");
		goto fail;
	}
	api->g = api->open();
	if (api->g == NULL) {
		snprintf(why, whylen, "gdr_open failed (is the gdrdrv kernel module loaded?)");
		goto fail;
	}
	return true;
fail:
	dlclose(api->lib);
	api->lib = NULL;
	return false;
}
