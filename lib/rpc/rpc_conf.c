/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * An OckRpcCreateConfig's pairs into a struct rpc_conf. As the closed
 * library does: only what the mask says is read, unknown keys are
 * ignored (users pass keys of later versions), and the handler keys
 * carry function pointers, not text. Each refusal names the key, the
 * value and what is allowed.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rpc_private.h"

static void
conf_defaults(struct rpc_conf *c)
{
	char err[DROCE_ERR_LEN];

	memset(c, 0, sizeof(*c));
	strcpy(c->name, "service");
	c->range_first = 4000;
	c->range_last = 5000;
	c->type = RPC_TRANSPORT_RDMA;
	c->segsize = 65536;
	c->segcount = 1024;
	c->busy_poll = false;
	c->heartbeat_idle_s = 1;
	c->tls = true;
	strcpy(c->info, "hello");
	c->self_polling = true;
	droce_workers_parse(&c->workers, "", "", false, err, sizeof(err));
}

static OckRpcStatus
refuse(const char *key, const char *value, const char *allowed)
{
	RPC_LOG(ERR, "config %s=\"%s\": %s", key, value, allowed);
	return OCK_RPC_ERR_INVALID_PARAM;
}

static OckRpcStatus
read_yes_no(const char *key, const char *value, bool *out)
{
	if (strcmp(value, "yes") == 0)
		*out = true;
	else if (strcmp(value, "no") == 0)
		*out = false;
	else
		return refuse(key, value, "yes or no");
	return OCK_RPC_OK;
}

/* A decimal number in [min, max], nothing else. */
static OckRpcStatus
read_number(const char *key, const char *value, unsigned long min, unsigned long max,
	    const char *allowed, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || v < min || v > max)
		return refuse(key, value, allowed);
	*out = v;
	return OCK_RPC_OK;
}

static OckRpcStatus
read_text(const char *key, const char *value, char *out, size_t max)
{
	if (value[0] == '\0' || strlen(value) > max)
		return refuse(key, value, "1 to 64 characters");
	strcpy(out, value);
	return OCK_RPC_OK;
}

static OckRpcStatus
read_range(const char *key, const char *value, struct rpc_conf *c)
{
	unsigned long first, last;
	char *end;

	first = strtoul(value, &end, 10);
	if (end == value || *end != '-')
		return refuse(key, value, "first-last, ports 1024..65535, first <= last");
	last = strtoul(end + 1, &end, 10);
	if (*end != '\0' || first < 1024 || last > 65535 || first > last)
		return refuse(key, value, "first-last, ports 1024..65535, first <= last");
	c->range_first = (uint16_t)first;
	c->range_last = (uint16_t)last;
	return OCK_RPC_OK;
}

static OckRpcStatus
read_type(const char *key, const char *value, struct rpc_conf *c)
{
	if (strcmp(value, "TCP") == 0) {
		c->type = RPC_TRANSPORT_TCP;
	} else if (strcmp(value, "RDMA") == 0) {
		c->type = RPC_TRANSPORT_RDMA;
	} else if (strcmp(value, "UBC") == 0) {
		RPC_LOG(ERR, "config %s=UBC: droce has no UBC transport (TCP or RDMA)", key);
		return OCK_RPC_ERR_UNSUPPORT;
	} else {
		return refuse(key, value, "TCP, RDMA or UBC");
	}
	return OCK_RPC_OK;
}

/* One pair; @p groups and @p cpuset are kept for the end (they go together). */
static OckRpcStatus
read_pair(const RpcConfigPair *p, bool client, struct rpc_conf *c, const char **groups,
	  const char **cpuset)
{
	const char *k = p->key, *v = p->value;
	unsigned long n = 0;
	OckRpcStatus st = OCK_RPC_OK;

	if (k == NULL)
		return OCK_RPC_OK;
	/* Function pointers travel as values: any, NULL included. */
	if (strcmp(k, OCK_RPC_STR_CLIENT_NEW) == 0) {
		c->on_new = (OckRpcClientHandler)(uintptr_t)v;
		return OCK_RPC_OK;
	}
	if (strcmp(k, OCK_RPC_STR_CLIENT_BREAK) == 0) {
		c->on_break = (OckRpcClientHandler)(uintptr_t)v;
		return OCK_RPC_OK;
	}
	if (strcmp(k, OCK_RPC_STR_RNDV_MALLOC) == 0) {
		c->rndv_alloc = (OckRpcRndvMemAllocate)(uintptr_t)v;
		return OCK_RPC_OK;
	}
	if (strcmp(k, OCK_RPC_STR_RNDV_MFREE) == 0) {
		c->rndv_free = (OckRpcRndvMemFree)(uintptr_t)v;
		return OCK_RPC_OK;
	}
	if (v == NULL)
		return refuse(k, "(null)", "a value");
	if (strcmp(k, OCK_RPC_STR_SERVER_NAME) == 0) {
		st = read_text(k, v, c->name, RPC_NAME_MAX);
	} else if (strcmp(k, OCK_RPC_STR_SERVER_PORT_RANGE) == 0) {
		st = read_range(k, v, c);
	} else if (strcmp(k, OCK_RPC_STR_COMMUNICATION_TYPE) == 0) {
		st = read_type(k, v, c);
	} else if (strcmp(k, OCK_RPC_STR_PRE_SEGMENT_SIZE) == 0) {
		st = read_number(k, v, 1, RPC_SEGSIZE_MAX, "1..943718400", &n);
		c->segsize = (uint32_t)n;
	} else if (strcmp(k, OCK_RPC_STR_PRE_SEGMENT_COUNT) == 0) {
		st = read_number(k, v, 0, RPC_SEGCOUNT_MAX, "0..65535", &n);
		c->segcount = (uint32_t)n;
	} else if (strcmp(k, OCK_RPC_STR_WRK_THR_GRP) == 0) {
		*groups = v;
	} else if (strcmp(k, OCK_RPC_STR_WRK_CPU_SET) == 0) {
		*cpuset = v;
	} else if (strcmp(k, OCK_RPC_STR_ENABLE_POLL_WORKER) == 0) {
		st = read_yes_no(k, v, &c->busy_poll);
	} else if (strcmp(k, OCK_RPC_STR_ENABLE_SEND_RNDV) == 0) {
		st = read_yes_no(k, v, &c->rndv);
	} else if (strcmp(k, OCK_RPC_STR_HEATBEAT_IDLE) == 0) {
		st = read_number(k, v, 1, 86400, "1..86400 seconds", &n);
		c->heartbeat_idle_s = (unsigned int)n;
	} else if (strcmp(k, OCK_RPC_STR_ENABLE_TLS) == 0) {
		st = read_yes_no(k, v, &c->tls);
	} else if (client && strcmp(k, OCK_RPC_STR_CLIENT_CREATE_INFO) == 0) {
		st = read_text(k, v, c->info, RPC_INFO_MAX);
	} else if (client && strcmp(k, OCK_RPC_STR_ENABLE_SELFPOLLING) == 0) {
		st = read_yes_no(k, v, &c->self_polling);
	}
	return st;
}

/*
 * TLS is on by default and takes effect with the mask's callbacks; a
 * default without them means none. Asked for with "yes" and no
 * callbacks, it cannot be had.
 */
static OckRpcStatus
check_tls(const OckRpcCreateConfig *cfg, struct rpc_conf *c, bool said)
{
	bool callbacks = cfg != NULL && (cfg->mask & OCK_RPC_CONFIG_USE_SSL_CALLBACK);

	if (!c->tls)
		return OCK_RPC_OK;
	if (callbacks && (cfg->getCaAndVerify == NULL || cfg->getCert == NULL ||
			  cfg->getPriKey == NULL)) {
		RPC_LOG(ERR, "config: TLS callbacks asked for (mask %#" PRIx64 ") but not all three given",
			cfg->mask);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (!callbacks && said) {
		RPC_LOG(ERR, "config %s=yes needs the TLS callbacks (mask OCK_RPC_CONFIG_USE_SSL_CALLBACK); set it to no for none",
			OCK_RPC_STR_ENABLE_TLS);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (!callbacks) {
		c->tls = false;
		return OCK_RPC_OK;
	}
	c->tls_ca = cfg->getCaAndVerify;
	c->tls_cert = cfg->getCert;
	c->tls_key = cfg->getPriKey;
	return OCK_RPC_OK;
}

OckRpcStatus
rpc_conf_read(const OckRpcCreateConfig *cfg, bool client, struct rpc_conf *c)
{
	const char *groups = "", *cpuset = "";
	char err[DROCE_ERR_LEN];
	bool tls_said = false;
	OckRpcStatus st;

	conf_defaults(c);
	if (cfg != NULL && (cfg->mask & OCK_RPC_CONFIG_USE_RPC_CONFIGS)) {
		if (cfg->configs.size < 0 || (cfg->configs.size > 0 && cfg->configs.pairs == NULL)) {
			RPC_LOG(ERR, "config: %d pairs at %p", cfg->configs.size,
				(void *)cfg->configs.pairs);
			return OCK_RPC_ERR_INVALID_PARAM;
		}
		for (int i = 0; i < cfg->configs.size; i++) {
			const RpcConfigPair *p = &cfg->configs.pairs[i];

			st = read_pair(p, client, c, &groups, &cpuset);
			if (st != OCK_RPC_OK)
				return st;
			if (p->key != NULL && strcmp(p->key, OCK_RPC_STR_ENABLE_TLS) == 0)
				tls_said = c->tls;
		}
	}
	if (droce_workers_parse(&c->workers, groups, cpuset, c->busy_poll, err,
				sizeof(err)) != 0) {
		RPC_LOG(ERR, "config %s=\"%s\" %s=\"%s\": %s", OCK_RPC_STR_WRK_THR_GRP, groups,
			OCK_RPC_STR_WRK_CPU_SET, cpuset, err);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	if (c->rndv && (c->rndv_alloc == NULL || c->rndv_free == NULL)) {
		RPC_LOG(ERR, "config %s=yes needs %s and %s", OCK_RPC_STR_ENABLE_SEND_RNDV,
			OCK_RPC_STR_RNDV_MALLOC, OCK_RPC_STR_RNDV_MFREE);
		return OCK_RPC_ERR_INVALID_PARAM;
	}
	return check_tls(cfg, c, tls_said);
}
