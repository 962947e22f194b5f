/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The CPU reference gather engine: what the persistent CUDA kernel does,
 * done by the CPU, for devices whose memory the CPU can write (the host
 * driver). Items are taken in ring order; each READY item has its entries
 * copied, then a write barrier through the device (which fails on a device
 * that is gone: the item becomes ERROR), then DONE.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_memcpy.h>
#include <rte_pause.h>

#include "gpu_private.h"

/* Idle rounds of rte_pause() before the thread naps (it is no worker). */
#define SPINS_BEFORE_NAP 1024
#define NAP_NS 20000

static bool
run_item(const struct droce_gather_job *job, struct rte_gpu_comm_list *item,
	 uint32_t index)
{
	const uint64_t *dst_off = job->dst_off + (size_t)index * RTE_GPU_COMM_LIST_PKTS_MAX;
	uint32_t n = RTE_GPU_VOLATILE(item->num_pkts);

	for (uint32_t i = 0; i < n; i++) {
		size_t len = item->pkt_list[i].size;

		/* The placer checked the range; an engine checks again. */
		if (dst_off[i] > job->dst_size || len > job->dst_size - dst_off[i])
			return false;
		rte_memcpy(job->dst + dst_off[i], (const void *)item->pkt_list[i].addr, len);
	}
	return rte_gpu_wmb(job->dev_id) == 0;
}

unsigned int
gather_cpu_step(const struct droce_gather_job *job, uint32_t *next_item)
{
	unsigned int done = 0;

	for (uint32_t k = 0; k < job->nb_items; k++) {
		struct rte_gpu_comm_list *item = &job->list[*next_item];
		enum rte_gpu_comm_list_status st;

		rte_gpu_comm_get_status(item, &st);
		if (st != RTE_GPU_COMM_LIST_READY)
			break;
		rte_smp_rmb(); /* entries after status */
		st = run_item(job, item, *next_item) ? RTE_GPU_COMM_LIST_DONE
						     : RTE_GPU_COMM_LIST_ERROR;
		rte_smp_wmb(); /* bytes before status */
		rte_gpu_comm_set_status(item, st);
		*next_item = (*next_item + 1) % job->nb_items;
		done++;
	}
	return done;
}

struct cpu_engine {
	struct droce_gather_job job;
	pthread_t thread;
	uint32_t next;
};

static void *
cpu_engine_main(void *arg)
{
	struct cpu_engine *e = arg;
	unsigned int idle = 0;

	while (RTE_GPU_VOLATILE(*e->job.quit) == 0) {
		if (gather_cpu_step(&e->job, &e->next) != 0) {
			idle = 0;
		} else if (++idle < SPINS_BEFORE_NAP) {
			rte_pause();
		} else {
			struct timespec ts = { .tv_nsec = NAP_NS };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

void *
gather_cpu_thread_start(const struct droce_gather_job *job, char *err,
			size_t errlen)
{
	struct cpu_engine *e = calloc(1, sizeof(*e));
	int ret;

	if (e == NULL) {
		snprintf(err, errlen, "gather: out of memory for the CPU engine");
		return NULL;
	}
	e->job = *job;
	ret = pthread_create(&e->thread, NULL, cpu_engine_main, e);
	if (ret != 0) {
		snprintf(err, errlen, "gather: cannot start the CPU engine: %s",
			 strerror(ret));
		free(e);
		return NULL;
	}
	pthread_setname_np(e->thread, "droce-gather");
	return e;
}

void
gather_cpu_thread_stop(void *handle)
{
	struct cpu_engine *e = handle;

	pthread_join(e->thread, NULL);
	free(e);
}
