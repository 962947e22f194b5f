/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * rte_telemetry commands, answered on DPDK's telemetry thread:
 *   /droce/stats[,PORT]   counters of one port, or of all ports together
 *   /droce/config         the keys as given, with where each came from
 *   /droce/lcores[,LCORE] the lcore layout, or one lcore's counters
 *   /droce/memory         objects in use in each mempool (DPDK's own
 *                         /mempool/info tells a pool's size, not what is
 *                         taken) and bytes in use from malloc: what a leak
 *                         check compares
 * 22.11 callbacks take no argument, so the stack is a file-scope pointer;
 * the lock keeps droce_stack_destroy() from pulling it away mid-answer.
 */

#include <stdlib.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif

#include <rte_mempool.h>
#include <rte_rwlock.h>
#include <rte_telemetry.h>

#include "net_private.h"

static struct droce_stack *tel_stack;
static rte_rwlock_t tel_lock = RTE_RWLOCK_INITIALIZER;
static bool tel_registered;

static void
tel_counters(struct rte_tel_data *d, const struct droce_counters *c)
{
	char name[64];

	rte_tel_data_add_dict_u64(d, "rx_packets", c->rx_packets);
	rte_tel_data_add_dict_u64(d, "rx_bytes", c->rx_bytes);
	rte_tel_data_add_dict_u64(d, "tx_packets", c->tx_packets);
	rte_tel_data_add_dict_u64(d, "tx_bytes", c->tx_bytes);
	rte_tel_data_add_dict_u64(d, "drops", droce_counters_drops(c));
	for (unsigned int r = 0; r < DROCE_DROP_MAX; r++) {
		snprintf(name, sizeof(name), "drop_%s",
			 droce_drop_reason_name(r));
		rte_tel_data_add_dict_u64(d, name, c->drop[r]);
	}
}

/* The number in @params, or -1 when there is none; -2 when malformed. */
static long
tel_param(const char *params)
{
	char *end;
	long v;

	if (params == NULL || params[0] == '\0')
		return -1;
	v = strtol(params, &end, 10);
	if (end == params || *end != '\0' || v < 0)
		return -2;
	return v;
}

static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	long port = tel_param(params);
	struct droce_counters c, sum;
	int ret = 0;

	RTE_SET_USED(cmd);
	rte_rwlock_read_lock(&tel_lock);
	if (tel_stack == NULL || port == -2 ||
	    (port >= 0 && port >= tel_stack->nb_ports)) {
		ret = -EINVAL;
		goto out;
	}
	rte_tel_data_start_dict(d);
	memset(&sum, 0, sizeof(sum));
	for (uint16_t i = 0; i < tel_stack->nb_ports; i++) {
		if (port >= 0 && i != port)
			continue;
		droce_port_counters(tel_stack, i, &c);
		net_counters_add(&sum, &c);
	}
	rte_tel_data_add_dict_int(d, "ports", port >= 0 ? 1 : tel_stack->nb_ports);
	tel_counters(d, &sum);
out:
	rte_rwlock_read_unlock(&tel_lock);
	return ret;
}

static int
tel_config(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *entries;
	const struct droce_conf *conf;
	int ret = 0;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_rwlock_read_lock(&tel_lock);
	if (tel_stack == NULL) {
		ret = -EINVAL;
		goto out;
	}
	conf = &tel_stack->conf;
	entries = rte_tel_data_alloc();
	if (entries == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	rte_tel_data_start_array(entries, RTE_TEL_STRING_VAL);
	for (unsigned int i = 0; i < conf->nb_entries; i++) {
		char line[RTE_TEL_MAX_STRING_LEN];

		size_t used = 0;

		/* Telemetry strings are short: a long one ends in "...". */
		droce_str_append(line, sizeof(line), &used, "%s=%s @ %s",
				 conf->entry[i].key, conf->entry[i].value,
				 conf->entry[i].origin);
		rte_tel_data_add_array_string(entries, line);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "ports", conf->nb_ports);
	rte_tel_data_add_dict_int(d, "worker_groups", conf->workers.nb_groups);
	rte_tel_data_add_dict_int(d, "workers", (int)conf->workers.nb_workers);
	rte_tel_data_add_dict_string(d, "poll", conf->busy_poll ? "busy" : "event");
	rte_tel_data_add_dict_int(d, "stats_period", (int)conf->stats_period);
	rte_tel_data_add_dict_int(d, "udp_echo_port", conf->udp_echo_port);
	rte_tel_data_add_dict_container(d, "given", entries, 0);
out:
	rte_rwlock_read_unlock(&tel_lock);
	return ret;
}

static void
lcore_queues(const struct droce_lcore_ctx *ctx, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint16_t i = 0; i < ctx->nb_poll; i++)
		droce_str_append(buf, len, &used, "%sp%uq%u", i ? " " : "",
				 ctx->poll[i].port->index, ctx->poll[i].queue);
}

static int
tel_lcore_layout(const struct droce_stack *s, struct rte_tel_data *d)
{
	struct rte_tel_data *ids = rte_tel_data_alloc();
	struct rte_tel_data *roles = rte_tel_data_alloc();
	struct rte_tel_data *groups = rte_tel_data_alloc();
	struct rte_tel_data *queues = rte_tel_data_alloc();

	if (ids == NULL || roles == NULL || groups == NULL || queues == NULL) {
		rte_tel_data_free(ids);
		rte_tel_data_free(roles);
		rte_tel_data_free(groups);
		rte_tel_data_free(queues);
		return -ENOMEM;
	}
	rte_tel_data_start_array(ids, RTE_TEL_INT_VAL);
	rte_tel_data_start_array(roles, RTE_TEL_STRING_VAL);
	rte_tel_data_start_array(groups, RTE_TEL_INT_VAL);
	rte_tel_data_start_array(queues, RTE_TEL_STRING_VAL);
	rte_tel_data_add_array_int(ids, (int)s->control->lcore_id);
	rte_tel_data_add_array_string(roles, "control");
	rte_tel_data_add_array_int(groups, -1);
	rte_tel_data_add_array_string(queues, "");
	for (uint32_t w = 0; w < s->layout.nb_workers; w++) {
		char q[RTE_TEL_MAX_STRING_LEN];

		lcore_queues(s->worker[w], q, sizeof(q));
		rte_tel_data_add_array_int(ids, (int)s->worker[w]->lcore_id);
		rte_tel_data_add_array_string(roles, "worker");
		rte_tel_data_add_array_int(groups, s->layout.worker_group[w]);
		rte_tel_data_add_array_string(queues, q);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "poll", s->conf.busy_poll ? "busy" : "event");
	rte_tel_data_add_dict_container(d, "lcore", ids, 0);
	rte_tel_data_add_dict_container(d, "role", roles, 0);
	rte_tel_data_add_dict_container(d, "group", groups, 0);
	rte_tel_data_add_dict_container(d, "queues", queues, 0);
	return 0;
}

static bool
stack_has_lcore(const struct droce_stack *s, long lcore)
{
	for (uint32_t i = 0; i < net_nb_ctx(s); i++)
		if ((long)net_ctx(s, i)->lcore_id == lcore)
			return true;
	return false;
}

static int
tel_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
	long lcore = tel_param(params);
	struct droce_counters c;
	int ret = 0;

	RTE_SET_USED(cmd);
	rte_rwlock_read_lock(&tel_lock);
	if (tel_stack == NULL || lcore == -2 ||
	    (lcore >= 0 && !stack_has_lcore(tel_stack, lcore))) {
		ret = -EINVAL;
	} else if (lcore < 0) {
		ret = tel_lcore_layout(tel_stack, d);
	} else {
		rte_tel_data_start_dict(d);
		rte_tel_data_add_dict_int(d, "lcore", (int)lcore);
		droce_lcore_counters(tel_stack, (unsigned int)lcore, &c);
		tel_counters(d, &c);
	}
	rte_rwlock_read_unlock(&tel_lock);
	return ret;
}

static void
mempool_in_use(struct rte_mempool *mp, void *arg)
{
	rte_tel_data_add_dict_u64(arg, mp->name, rte_mempool_in_use_count(mp));
}

static int
tel_memory(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *pools;

	RTE_SET_USED(cmd);
	if (params != NULL && *params != '\0')
		return -EINVAL;
	pools = rte_tel_data_alloc();
	if (pools == NULL)
		return -ENOMEM;
	rte_tel_data_start_dict(pools);
	rte_mempool_walk(mempool_in_use, pools);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_container(d, "mempools_in_use", pools, 0);
#ifdef HAVE_MALLINFO2
	{
		/* RSS keeps what glibc's arenas hold after a free; this does not. */
		struct mallinfo2 mi = mallinfo2();

		rte_tel_data_add_dict_u64(d, "malloc_in_use", mi.uordblks + mi.hblkhd);
	}
#endif
	return 0;
}

int
droce_telemetry_register(struct droce_stack *s)
{
	int ret = 0;

	rte_rwlock_write_lock(&tel_lock);
	tel_stack = s;
	rte_rwlock_write_unlock(&tel_lock);
	if (tel_registered)
		return 0;
	ret |= rte_telemetry_register_cmd("/droce/stats", tel_stats,
		"droce counters of all ports together, or of one. Parameters: int port (optional)");
	ret |= rte_telemetry_register_cmd("/droce/config", tel_config,
		"droce configuration: keys as given and where they came from. Takes no parameters");
	ret |= rte_telemetry_register_cmd("/droce/lcores", tel_lcores,
		"droce lcore layout, or one lcore's counters. Parameters: int lcore_id (optional)");
	ret |= rte_telemetry_register_cmd("/droce/memory", tel_memory,
		"objects in use in each mempool (caches count as free) and bytes in use from malloc. Takes no parameters");
	tel_registered = ret == 0;
	return ret == 0 ? 0 : -EINVAL;
}

void
net_telemetry_forget(const struct droce_stack *s)
{
	rte_rwlock_write_lock(&tel_lock);
	if (tel_stack == s)
		tel_stack = NULL;
	rte_rwlock_write_unlock(&tel_lock);
}
