/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * What configuration keys mean. One table row per key: its name, type,
 * range, default and help. Loading, defaults, --help and the "did you
 * mean" for unknown keys all read this table.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rte_common.h>
#include <rte_debug.h>

#include "core_private.h"

RTE_LOG_REGISTER(droce_core_logtype, droce.core, INFO);

enum key_kind {
	KIND_BOOL,
	KIND_UINT,
	KIND_STRING,
	KIND_IPV4,
	KIND_IPV4_PREFIX, /* writes addr and, at offset + 4, prefix_len */
	KIND_WORKERS,     /* read as a pair by droce_workers_parse() */
	KIND_CHOICE,      /* one of a list of words, stored as its index */
	KIND_UINT64,      /* the full 64-bit range; min and max unused */
	KIND_MAC,         /* a unicast MAC address, struct rte_ether_addr */
};

/* Keys are global, or belong to an indexed section: port.N.*, rx.N.*. */
enum key_family { FAMILY_GLOBAL, FAMILY_PORT, FAMILY_RX, FAMILY_MAX };

static const struct {
	const char *prefix;   /* "port." */
	unsigned int max;     /* indices 0..max-1 */
} families[FAMILY_MAX] = {
	[FAMILY_GLOBAL] = { "", 1 },
	[FAMILY_PORT] = { "port.", DROCE_MAX_PORTS },
	[FAMILY_RX] = { "rx.", DROCE_MAX_RX_CONF },
};

struct key_desc {
	const char *name;  /* section keys: "N" stands for the index */
	enum key_kind kind;
	enum key_family family;
	size_t offset;     /* in struct droce_conf or the section's struct */
	size_t size;
	uint32_t min, max; /* KIND_UINT */
	const char *def;   /* parsed by droce_conf_defaults(); NULL: none */
	const char *help;
	const char *const *choices; /* KIND_CHOICE, NULL-terminated */
};

#define GLOBAL_KEY(name, kind, field, min, max, def, help) \
	{ name, kind, FAMILY_GLOBAL, offsetof(struct droce_conf, field), \
	  sizeof(((struct droce_conf *)0)->field), min, max, def, help, NULL }
#define PORT_KEY(name, kind, field, min, max, def, help) \
	{ "port.N." name, kind, FAMILY_PORT, offsetof(struct droce_port_conf, field), \
	  sizeof(((struct droce_port_conf *)0)->field), min, max, def, help, NULL }
#define RX_KEY(name, kind, field, min, max, def, help) \
	{ "rx.N." name, kind, FAMILY_RX, offsetof(struct droce_rx_conf, field), \
	  sizeof(((struct droce_rx_conf *)0)->field), min, max, def, help, NULL }
#define RX_CHOICE_KEY(name, field, choices, def, help) \
	{ "rx.N." name, KIND_CHOICE, FAMILY_RX, offsetof(struct droce_rx_conf, field), \
	  sizeof(((struct droce_rx_conf *)0)->field), 0, 0, def, help, choices }
#define WORKERS_KEY(name, def, help) \
	{ name, KIND_WORKERS, FAMILY_GLOBAL, 0, 0, 0, 0, def, help, NULL }

/* The orders match enum droce_place_mode, droce_rx_icrc, droce_copy_stores,
 * droce_hsb_imm.
 */
static const char *const placement_choices[] = { "auto", "copy", "gather", NULL };
static const char *const icrc_choices[] = { "on", "fused", "off", NULL };
static const char *const copy_stores_choices[] = { "streaming", "cached", NULL };
static const char *const immediate_choices[] = { "hsb", "hsb-lite", "opaque", NULL };

static const struct key_desc conf_keys[] = {
	WORKERS_KEY("worker.thread.groups", "",
		"worker counts per group, e.g. \"1,2,3\"; empty: one group of one worker"),
	WORKERS_KEY("worker.thread.cpuset", "",
		"cpu range per group, e.g. \"1-1,2-3,na\"; empty or na: unpinned"),
	GLOBAL_KEY("worker.poll.enable", KIND_BOOL, busy_poll, 0, 0, "yes",
		"yes: busy-poll RX queues; no: RX interrupts or rte_power_pmd_mgmt"),
	GLOBAL_KEY("worker.inline", KIND_BOOL, workers_inline, 0, 0, "no",
		"yes: the control lcore runs the workers' rounds too, one polling thread in all (few cpus; needs worker.poll.enable=yes)"),
	GLOBAL_KEY("control.cpu", KIND_UINT, control_cpu, 0, CPU_SETSIZE - 1,
		NULL, "cpu of the control (main) lcore; default: the first cpu no pinned worker uses"),
	GLOBAL_KEY("stats.period", KIND_UINT, stats_period, 0, 3600, "5",
		"seconds between stats lines; 0: none"),
	GLOBAL_KEY("udp.echo.port", KIND_UINT, udp_echo_port, 0, 65535, "0",
		"UDP port of an echo service (RFC 862) on every port; 0: off"),
	GLOBAL_KEY("arp.timeout", KIND_UINT, arp_timeout, 1, 86400, "60",
		"seconds a resolved ARP entry is trusted before it is refreshed"),
	GLOBAL_KEY("gpu", KIND_STRING, gpu, 0, 0, "auto",
		"GPU memory for placement: host, cuda:N, or auto (cuda:0 if any, else host)"),
	GLOBAL_KEY("rpc.port", KIND_UINT, rpc_port, 0, 65535, "0",
		"port of droce's hcom4db RPC server over RDMA (the rdma_cm port) on port 0's address, with an echo service (id 0); 0: none"),
	GLOBAL_KEY("server.tls.enable", KIND_BOOL, rpc_tls, 0, 0, "yes",
		"yes: the RPC server speaks TLS 1.3 only, with rpc.tls.cert, rpc.tls.key and rpc.tls.ca"),
	GLOBAL_KEY("server.heartbeat.idle", KIND_UINT, rpc_heartbeat_idle, 1, 3600, "1",
		"seconds an RPC session may be silent before it is probed; gone after twice that"),
	GLOBAL_KEY("rpc.tls.cert", KIND_STRING, rpc_tls_cert, 0, 0, NULL,
		"the RPC server's certificate (PEM file)"),
	GLOBAL_KEY("rpc.tls.key", KIND_STRING, rpc_tls_key, 0, 0, NULL,
		"its private key (PEM file)"),
	GLOBAL_KEY("rpc.tls.keypass", KIND_STRING, rpc_tls_keypass, 0, 0, NULL,
		"a file whose first line is the key's passphrase; default: the key is not encrypted"),
	GLOBAL_KEY("rpc.tls.ca", KIND_STRING, rpc_tls_ca, 0, 0, NULL,
		"the CAs clients' certificates must come from (PEM files or folders, ':'-separated)"),
	GLOBAL_KEY("rpc.tls.crl", KIND_STRING, rpc_tls_crl, 0, 0, NULL,
		"a PEM file of CRLs to enforce; default: none"),
	PORT_KEY("device", KIND_STRING, device, 0, 0, NULL,
		"ethdev name (0000:03:00.0, net_af_packet0) or vdev devargs to probe"),
	PORT_KEY("address", KIND_IPV4_PREFIX, addr, 0, 0, NULL,
		"IPv4 address and prefix length, e.g. 198.18.0.1/24"),
	PORT_KEY("gateway", KIND_IPV4, gateway, 0, 0, NULL,
		"next hop for destinations outside the prefix; default: none"),
	PORT_KEY("mtu", KIND_UINT, mtu, 68, 9600, "1500", "IP MTU"),
	PORT_KEY("queues", KIND_UINT, rx_queues, 0, DROCE_MAX_PORT_QUEUES, "0",
		"RX queues (RSS spreads flows); 0: one per worker"),
	PORT_KEY("rxd", KIND_UINT, rx_desc, 64, 16384, "1024",
		"RX descriptors per queue"),
	PORT_KEY("txd", KIND_UINT, tx_desc, 64, 16384, "1024",
		"TX descriptors per queue"),
	PORT_KEY("capture", KIND_STRING, capture, 0, 0, NULL,
		"pcapng file that gets every RoCEv2 packet the port sends or receives"),
	PORT_KEY("mac", KIND_MAC, mac, 0, 0, NULL,
		"MAC address set on the device before it starts (xx:xx:xx:xx:xx:xx, unicast); default: the device's own"),
	PORT_KEY("tx.chains", KIND_BOOL, tx_chains, 0, 0, "no",
		"yes: ask the device for multi-segment TX, so that RC sends of 1 KiB and more go out from their memory regions (zero copy); some drivers then leave their fastest TX path (ixgbe, i40e, ice vector TX)"),
	RX_KEY("port", KIND_UINT, port, 0, DROCE_MAX_PORTS - 1, "0",
		"port the sensor's frames arrive on"),
	RX_KEY("peer", KIND_IPV4, peer, 0, 0, NULL,
		"IPv4 address of the sensor; data from any other address is refused"),
	RX_KEY("qp", KIND_UINT, qp, 0, 0xffffff, "0",
		"QP number of the first stream (0x.. or decimal); 0: droce picks"),
	RX_KEY("rkey", KIND_UINT, rkey, 0, UINT32_MAX, "0",
		"rkey the sensor must present; 0: droce picks one at random"),
	RX_KEY("frame.size", KIND_UINT, frame_size, 1, 1u << 30, NULL,
		"bytes of frame data per frame"),
	RX_KEY("pages", KIND_UINT, pages, 1, 4096, "4",
		"pages (frame slots) the sensor cycles through"),
	RX_KEY("metadata.offset", KIND_UINT, metadata_offset, 0, UINT32_MAX, "0",
		"offset of the 128-byte metadata block in a page; 0: frame size rounded up to 128"),
	RX_KEY("page.size", KIND_UINT, page_size, 0, UINT32_MAX, "0",
		"bytes from one page to the next; 0: metadata offset + 128"),
	RX_KEY("va", KIND_UINT64, va, 0, 0, "0",
		"device address of page 0 that the sensor was programmed with (0x.. or decimal)"),
	RX_KEY("queue.size", KIND_UINT, queue_size, 1, 65536, "4",
		"completed frames held for the application; the oldest is discarded beyond"),
	RX_CHOICE_KEY("placement", placement, placement_choices, "auto",
		"copy (CPU writes through a mapping), gather (GPU engine), auto"),
	RX_CHOICE_KEY("icrc", icrc, icrc_choices, "on",
		"on: checked before a byte is written; fused: in the copy's pass; off: trust the link"),
	RX_CHOICE_KEY("copy.stores", copy_stores, copy_stores_choices, "streaming",
		"copy placement of payloads >= 256 bytes: streaming (non-temporal) or cached"),
	RX_CHOICE_KEY("immediate", immediate, immediate_choices, "hsb",
		"immediate format: hsb (12-bit page, 20-bit PSN), hsb-lite (8/24), opaque"),
	RX_KEY("count", KIND_UINT, count, 1, 4096, "1",
		"streams made alike from this section, QPs qp .. qp + count - 1"),
	RX_KEY("remote.qp", KIND_UINT, remote_qp, 0, 0xffffff, "0",
		"RC senders: the requester's QP, which droce's ACKs go to"),
	RX_KEY("reorder.window", KIND_UINT, reorder_window, 0, 8192, "4096",
		"UC: packets held after a PSN gap while it may still fill (a power of two; af_packet's fanout moves up to 3/4 of a queue's ring); 0: a gap is a loss at once"),
	RX_KEY("reorder.timeout", KIND_UINT, reorder_timeout_us, 1, 10000000, "20000",
		"microseconds a PSN gap may wait to fill before its packets count as lost"),
	RX_KEY("gpu", KIND_STRING, gpu, 0, 0, NULL,
		"GPU memory for this section's frames; default: the global gpu key"),
};

/* Where a parsed value goes and how it is named in messages. */
struct key_ref {
	const struct key_desc *desc;
	int index;         /* of its section; -1 for global keys */
	const char *key;   /* the key as given */
	const char *value;
	const char *origin;
};

static int
value_error(const struct key_ref *ref, char *err, size_t errlen,
	    const char *problem, const char *allowed)
{
	snprintf(err, errlen, "%s: %s = \"%s\": %s; allowed: %s",
		 ref->origin, ref->key, ref->value, problem, allowed);
	return -EINVAL;
}

static void *
key_field(struct droce_conf *conf, const struct key_ref *ref)
{
	char *base = (char *)conf;

	if (ref->desc->family == FAMILY_PORT)
		base = (char *)&conf->port[ref->index];
	else if (ref->desc->family == FAMILY_RX)
		base = (char *)&conf->rx[ref->index];
	return base + ref->desc->offset;
}

static void
store_uint(void *field, size_t size, uint32_t v)
{
	switch (size) {
	case 1: *(uint8_t *)field = (uint8_t)v; break;
	case 2: *(uint16_t *)field = (uint16_t)v; break;
	default: *(uint32_t *)field = v; break;
	}
}

static bool
parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (unsigned int i = 0; i < RTE_DIM(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* Decimal, or hexadecimal after 0x (QP numbers, keys and addresses are
 * written so). Returns 0, -EINVAL for what is not a number, -ERANGE for
 * a number past UINT64_MAX.
 */
static int
parse_u64(const char *s, uint64_t *out)
{
	unsigned int base = 10;
	bool overflow = false;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned int)(*s - 'A' + 10);
		else
			return -EINVAL;
		/* Past UINT64_MAX, the rest is only checked to be digits. */
		if (overflow || v > (UINT64_MAX - d) / base)
			overflow = true;
		else
			v = v * base + d;
	}
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

static bool
parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) != 0 || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static unsigned int
hex_value(char c)
{
	return isdigit((unsigned char)c) ? (unsigned int)(c - '0')
		: (unsigned int)(tolower((unsigned char)c) - 'a' + 10);
}

/* Exactly xx:xx:xx:xx:xx:xx, as ip(8) prints it, in either case. */
static bool
parse_mac_syntax(const char *s, struct rte_ether_addr *out)
{
	for (unsigned int i = 0; i < RTE_ETHER_ADDR_LEN; i++, s += 3) {
		if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) ||
		    s[2] != (i + 1 < RTE_ETHER_ADDR_LEN ? ':' : '\0'))
			return false;
		out->addr_bytes[i] = (uint8_t)(hex_value(s[0]) << 4 | hex_value(s[1]));
	}
	return true;
}

/* A port's own address: the device sends from it and answers ARP for it,
 * so a group address (multicast, broadcast) or zero cannot be one.
 */
static int
parse_mac(const struct key_ref *ref, struct rte_ether_addr *field,
	  char *err, size_t errlen)
{
	const char *allowed = "a unicast MAC address xx:xx:xx:xx:xx:xx (first byte even, not all zero), e.g. 02:00:00:00:00:01";
	struct rte_ether_addr mac;

	if (!parse_mac_syntax(ref->value, &mac))
		return value_error(ref, err, errlen, "not a MAC address", allowed);
	if (rte_is_broadcast_ether_addr(&mac))
		return value_error(ref, err, errlen, "the broadcast address", allowed);
	if (rte_is_multicast_ether_addr(&mac))
		return value_error(ref, err, errlen, "a multicast address", allowed);
	if (rte_is_zero_ether_addr(&mac))
		return value_error(ref, err, errlen, "the zero address", allowed);
	*field = mac;
	return 0;
}

static bool
parse_ipv4(const char *s, rte_be32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*out = a.s_addr;
	return true;
}

static int
parse_prefix(const struct key_ref *ref, struct droce_port_conf *port,
	     char *err, size_t errlen)
{
	const char *allowed = "a.b.c.d/len with len 1..32, e.g. 198.18.0.1/24";
	char addr[INET_ADDRSTRLEN];
	const char *slash = strchr(ref->value, '/');
	uint32_t len, host, mask;
	rte_be32_t a;

	if (slash == NULL)
		return value_error(ref, err, errlen, "no prefix length",
				   allowed);
	if ((size_t)(slash - ref->value) >= sizeof(addr))
		return value_error(ref, err, errlen, "not an IPv4 address",
				   allowed);
	memcpy(addr, ref->value, (size_t)(slash - ref->value));
	addr[slash - ref->value] = '\0';
	if (!parse_ipv4(addr, &a))
		return value_error(ref, err, errlen, "not an IPv4 address",
				   allowed);
	if (!parse_u32(slash + 1, &len) || len < 1 || len > 32)
		return value_error(ref, err, errlen,
				   "prefix length out of range", allowed);
	host = rte_be_to_cpu_32(a);
	mask = len == 32 ? UINT32_MAX : ~(UINT32_MAX >> len);
	if (host == 0 || (host >> 28) >= 0xe ||
	    (len <= 30 && ((host & ~mask) == 0 || (host | mask) == UINT32_MAX)))
		return value_error(ref, err, errlen,
			"not a host address (zero, multicast, reserved, or the network or broadcast address of its prefix)",
			allowed);
	port->addr = a;
	port->prefix_len = (uint8_t)len;
	return 0;
}

static int
parse_choice(const struct key_ref *ref, uint8_t *field, char *err, size_t errlen)
{
	char allowed[DROCE_CONF_VALUE_LEN] = "";
	size_t used = 0;

	for (uint8_t i = 0; ref->desc->choices[i] != NULL; i++) {
		if (strcmp(ref->value, ref->desc->choices[i]) == 0) {
			*field = i;
			return 0;
		}
		used += (size_t)snprintf(allowed + used, sizeof(allowed) - used,
					 "%s%s", i ? ", " : "", ref->desc->choices[i]);
	}
	return value_error(ref, err, errlen, "not a known value", allowed);
}

static int
parse_value(struct droce_conf *conf, const struct key_ref *ref,
	    char *err, size_t errlen)
{
	const struct key_desc *d = ref->desc;
	void *field = key_field(conf, ref);
	char allowed[80];
	uint64_t v;
	int ret;

	switch (d->kind) {
	case KIND_BOOL:
		if (!parse_bool(ref->value, (bool *)field))
			return value_error(ref, err, errlen, "not a boolean",
					   "yes or no (also true/false, on/off, 1/0)");
		return 0;
	case KIND_UINT:
		snprintf(allowed, sizeof(allowed), "a whole number %u..%u",
			 d->min, d->max);
		ret = parse_u64(ref->value, &v);
		if (ret == -EINVAL)
			return value_error(ref, err, errlen, "not a number",
					   allowed);
		if (ret != 0 || v < d->min || v > d->max)
			return value_error(ref, err, errlen, "out of range",
					   allowed);
		store_uint(field, d->size, (uint32_t)v);
		return 0;
	case KIND_UINT64:
		snprintf(allowed, sizeof(allowed),
			 "a whole number 0..%" PRIu64 " (decimal or 0x hex)",
			 UINT64_MAX);
		ret = parse_u64(ref->value, &v);
		if (ret != 0)
			return value_error(ref, err, errlen, ret == -ERANGE
					   ? "out of range" : "not a number",
					   allowed);
		*(uint64_t *)field = v;
		return 0;
	case KIND_MAC:
		return parse_mac(ref, field, err, errlen);
	case KIND_STRING:
		if (ref->value[0] == '\0')
			return value_error(ref, err, errlen, "empty",
					   "a non-empty name");
		if (strlen(ref->value) >= d->size) {
			snprintf(allowed, sizeof(allowed), "at most %zu characters",
				 d->size - 1);
			return value_error(ref, err, errlen, "too long", allowed);
		}
		memcpy(field, ref->value, strlen(ref->value) + 1);
		return 0;
	case KIND_IPV4:
		if (!parse_ipv4(ref->value, field))
			return value_error(ref, err, errlen,
					   "not an IPv4 address",
					   "a.b.c.d, e.g. 198.18.0.254");
		return 0;
	case KIND_IPV4_PREFIX:
		return parse_prefix(ref, &conf->port[ref->index], err, errlen);
	case KIND_CHOICE:
		return parse_choice(ref, field, err, errlen);
	case KIND_WORKERS:
		return 0;
	}
	return 0;
}

/* The key's row, and its section index; NULL if unknown. */
static const struct key_desc *
key_lookup(const char *key, int *index, bool *bad_index)
{
	*index = -1;
	*bad_index = false;
	for (int f = FAMILY_PORT; f < FAMILY_MAX; f++) {
		size_t plen = strlen(families[f].prefix);
		const char *p = key + plen;
		unsigned long idx = 0;

		if (strncmp(key, families[f].prefix, plen) != 0)
			continue;
		if (*p < '0' || *p > '9')
			return NULL;
		for (; *p >= '0' && *p <= '9'; p++)
			if (idx <= families[f].max) /* saturate, never overflow */
				idx = idx * 10 + (unsigned long)(*p - '0');
		if (*p != '.')
			return NULL;
		for (unsigned int i = 0; i < RTE_DIM(conf_keys); i++) {
			if (conf_keys[i].family == (enum key_family)f &&
			    strcmp(conf_keys[i].name + plen + 2, p + 1) == 0) {
				if (idx >= families[f].max) {
					*bad_index = true;
					return NULL;
				}
				*index = (int)idx;
				return &conf_keys[i];
			}
		}
		return NULL;
	}
	for (unsigned int i = 0; i < RTE_DIM(conf_keys); i++)
		if (conf_keys[i].family == FAMILY_GLOBAL &&
		    strcmp(conf_keys[i].name, key) == 0)
			return &conf_keys[i];
	return NULL;
}

static unsigned int
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned int row[DROCE_CONF_KEY_LEN + 1];

	if (la > DROCE_CONF_KEY_LEN || lb > DROCE_CONF_KEY_LEN)
		return UINT32_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned int diag = row[0];

		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned int up = row[j];
			unsigned int best = diag + (a[i - 1] != b[j - 1]);

			best = RTE_MIN(best, up + 1);
			best = RTE_MIN(best, row[j - 1] + 1);
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The index a mistyped section key most likely meant. */
static unsigned long
guess_index(const char *key, unsigned int max)
{
	const char *p = strpbrk(key, "0123456789");

	return p != NULL ? strtoul(p, NULL, 10) % max : 0;
}

static int
unknown_key(const struct droce_conf_entry *e, bool bad_index,
	    char *err, size_t errlen)
{
	char best[DROCE_CONF_KEY_LEN] = "";
	unsigned int best_dist = UINT32_MAX;

	if (bad_index) {
		bool rx = strncmp(e->key, "rx.", 3) == 0;

		snprintf(err, errlen,
			 "%s: %s: %s index out of range; allowed: %s.0 .. %s.%u",
			 e->origin, e->key, rx ? "rx" : "port", rx ? "rx" : "port",
			 rx ? "rx" : "port",
			 (rx ? DROCE_MAX_RX_CONF : DROCE_MAX_PORTS) - 1);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < RTE_DIM(conf_keys); i++) {
		const struct key_desc *d0 = &conf_keys[i];
		const char *prefix = families[d0->family].prefix;
		char cand[DROCE_CONF_KEY_LEN];
		unsigned int d;

		if (d0->family != FAMILY_GLOBAL)
			snprintf(cand, sizeof(cand), "%s%lu.%s", prefix,
				 guess_index(e->key, families[d0->family].max),
				 d0->name + strlen(prefix) + 2);
		else
			snprintf(cand, sizeof(cand), "%s", d0->name);
		d = edit_distance(e->key, cand);
		if (d < best_dist) {
			best_dist = d;
			snprintf(best, sizeof(best), "%s", cand);
		}
	}
	if (best_dist <= RTE_MAX(3u, (unsigned int)strlen(e->key) / 4))
		snprintf(err, errlen,
			 "%s: unknown key '%s' (did you mean '%s'?); 'droce --help' lists the keys",
			 e->origin, e->key, best);
	else
		snprintf(err, errlen,
			 "%s: unknown key '%s'; 'droce --help' lists the keys",
			 e->origin, e->key);
	return -EINVAL;
}

static const struct droce_conf_entry *
entry_get(const struct droce_conf *conf, const char *key)
{
	int i = conf_entry_index(conf, key);

	return i >= 0 ? &conf->entry[i] : NULL;
}

const char *
droce_conf_origin(const struct droce_conf *conf, const char *key)
{
	const struct droce_conf_entry *e = entry_get(conf, key);

	return e != NULL ? e->origin : "default";
}

static int
workers_error(const struct droce_conf_entry *e, const char *key,
	      const char *why, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s = \"%s\": %s",
		 e != NULL ? e->origin : "default", key,
		 e != NULL ? e->value : "", why);
	return -EINVAL;
}

static int
apply_workers(struct droce_conf *conf, char *err, size_t errlen)
{
	const struct droce_conf_entry *groups, *cpuset;
	char why[DROCE_ERR_LEN];

	groups = entry_get(conf, "worker.thread.groups");
	cpuset = entry_get(conf, "worker.thread.cpuset");
	/* Groups alone first, so each message blames the key at fault. */
	if (droce_workers_parse(&conf->workers,
				groups != NULL ? groups->value : "", "",
				conf->busy_poll, why, sizeof(why)) != 0)
		return workers_error(groups, "worker.thread.groups", why,
				     err, errlen);
	if (droce_workers_parse(&conf->workers,
				groups != NULL ? groups->value : "",
				cpuset != NULL ? cpuset->value : "",
				conf->busy_poll, why, sizeof(why)) != 0)
		return workers_error(cpuset, "worker.thread.cpuset", why,
				     err, errlen);
	return 0;
}

static int
check_ports(struct droce_conf *conf, const bool *given, char *err,
	    size_t errlen)
{
	for (unsigned int p = 0; p < DROCE_MAX_PORTS; p++) {
		char key[64];
		struct droce_port_conf *pc = &conf->port[p];

		if (!given[p])
			continue;
		if (p > 0 && !given[p - 1]) {
			snprintf(err, errlen,
				 "port.%u is configured but port.%u is not; allowed: ports numbered from 0 without gaps",
				 p, p - 1);
			return -EINVAL;
		}
		if (pc->device[0] == '\0' || pc->prefix_len == 0) {
			snprintf(key, sizeof(key), "port.%u.%s", p,
				 pc->device[0] == '\0' ? "device" : "address");
			snprintf(err, errlen,
				 "port.%u has no %s; allowed: every port needs port.N.device and port.N.address",
				 p, key);
			return -EINVAL;
		}
		if (pc->gateway != 0) {
			uint32_t mask = pc->prefix_len == 32 ? UINT32_MAX
				: ~(UINT32_MAX >> pc->prefix_len);

			if (((rte_be_to_cpu_32(pc->gateway) ^
			      rte_be_to_cpu_32(pc->addr)) & mask) != 0) {
				snprintf(key, sizeof(key), "port.%u.gateway", p);
				snprintf(err, errlen,
					 "%s: %s = \"%s\": outside the prefix of port.%u.address; allowed: an address on the port's own subnet",
					 droce_conf_origin(conf, key), key,
					 entry_get(conf, key)->value, p);
				return -EINVAL;
			}
		}
		conf->nb_ports = (uint16_t)(p + 1);
	}
	return 0;
}

/* What each rx.N section needs; the stream's layout rules are checked
 * where it starts, with the receiver's own messages.
 */
static int
check_rx(struct droce_conf *conf, const bool *given, char *err, size_t errlen)
{
	for (unsigned int n = 0; n < DROCE_MAX_RX_CONF; n++) {
		const struct droce_rx_conf *rc = &conf->rx[n];
		char key[64];

		if (!given[n])
			continue;
		if (n > 0 && !given[n - 1]) {
			snprintf(err, errlen,
				 "rx.%u is configured but rx.%u is not; allowed: receivers numbered from 0 without gaps",
				 n, n - 1);
			return -EINVAL;
		}
		if (rc->peer == 0 || rc->frame_size == 0) {
			snprintf(err, errlen,
				 "rx.%u has no rx.%u.%s; allowed: every receiver needs rx.N.peer and rx.N.frame.size",
				 n, n, rc->peer == 0 ? "peer" : "frame.size");
			return -EINVAL;
		}
		if (rc->port >= conf->nb_ports) {
			snprintf(key, sizeof(key), "rx.%u.port", n);
			snprintf(err, errlen,
				 "%s: %s = %u: no such port; allowed: 0..%d (the port.N sections)",
				 droce_conf_origin(conf, key), key, rc->port,
				 (int)conf->nb_ports - 1);
			return -EINVAL;
		}
		if ((rc->reorder_window & (rc->reorder_window - 1)) != 0) {
			snprintf(key, sizeof(key), "rx.%u.reorder.window", n);
			snprintf(err, errlen,
				 "%s: %s = %u: not a power of two; allowed: 0 (off), 1, 2, 4, ... 8192",
				 droce_conf_origin(conf, key), key, rc->reorder_window);
			return -EINVAL;
		}
		if (rc->qp != 0 && (rc->qp < 2 || rc->qp + rc->count - 1 > 0xffffff)) {
			snprintf(key, sizeof(key), "rx.%u.qp", n);
			snprintf(err, errlen,
				 "%s: %s = %#x with rx.%u.count = %u: allowed: QPs 2..0xffffff for every stream",
				 droce_conf_origin(conf, key), key, rc->qp, n, rc->count);
			return -EINVAL;
		}
		conf->nb_rx = (uint16_t)(n + 1);
	}
	return 0;
}

static int
apply_defaults(struct droce_conf *conf)
{
	char err[DROCE_ERR_LEN];

	for (unsigned int i = 0; i < RTE_DIM(conf_keys); i++) {
		const struct key_desc *d = &conf_keys[i];
		int nb = (int)families[d->family].max;

		if (d->def == NULL)
			continue;
		for (int p = 0; p < nb; p++) {
			struct key_ref ref = {
				.desc = d, .index = d->family != FAMILY_GLOBAL ? p : -1,
				.key = d->name, .value = d->def,
				.origin = "default",
			};

			if (parse_value(conf, &ref, err, sizeof(err)) != 0)
				return -EINVAL;
		}
	}
	return 0;
}

void
droce_conf_defaults(struct droce_conf *conf)
{
	char err[DROCE_ERR_LEN];

	memset(conf, 0, sizeof(*conf));
	conf->control_cpu = -1;
	/* The table's defaults are constants checked by the unit tests. */
	RTE_VERIFY(apply_defaults(conf) == 0);
	RTE_VERIFY(droce_workers_parse(&conf->workers, "", "", conf->busy_poll,
				       err, sizeof(err)) == 0);
}

int
droce_conf_load(struct droce_conf *conf, const char *file,
		char *const overrides[], int nb_overrides,
		char *err, size_t errlen)
{
	bool port_given[DROCE_MAX_PORTS] = { false };
	bool rx_given[DROCE_MAX_RX_CONF] = { false };
	int ret;

	droce_conf_defaults(conf);
	if (file != NULL) {
		ret = conf_read_file(conf, file, err, errlen);
		if (ret != 0)
			return ret;
	}
	for (int i = 0; i < nb_overrides; i++) {
		ret = conf_read_override(conf, overrides[i], err, errlen);
		if (ret != 0)
			return ret;
	}

	for (unsigned int i = 0; i < conf->nb_entries; i++) {
		const struct droce_conf_entry *e = &conf->entry[i];
		struct key_ref ref = {
			.key = e->key, .value = e->value, .origin = e->origin,
		};
		bool bad_index;

		ref.desc = key_lookup(e->key, &ref.index, &bad_index);
		if (ref.desc == NULL)
			return unknown_key(e, bad_index, err, errlen);
		ret = parse_value(conf, &ref, err, errlen);
		if (ret != 0)
			return ret;
		if (ref.desc->family == FAMILY_PORT)
			port_given[ref.index] = true;
		else if (ref.desc->family == FAMILY_RX)
			rx_given[ref.index] = true;
	}
	ret = apply_workers(conf, err, errlen);
	/* A sleeping control lcore would not see the packets of the
	 * workers it polls for.
	 */
	if (ret == 0 && conf->workers_inline && !conf->busy_poll) {
		snprintf(err, errlen, "%s: worker.inline = yes needs worker.poll.enable = yes",
			 droce_conf_origin(conf, "worker.inline"));
		ret = -EINVAL;
	}
	if (ret == 0)
		ret = check_ports(conf, port_given, err, errlen);
	if (ret == 0)
		ret = check_rx(conf, rx_given, err, errlen);
	return ret;
}

void
droce_conf_print_keys(FILE *out)
{
	for (unsigned int i = 0; i < RTE_DIM(conf_keys); i++) {
		const struct key_desc *d = &conf_keys[i];

		fprintf(out, "  %-22s %s", d->name, d->help);
		if (d->kind == KIND_UINT)
			fprintf(out, " (%u..%u)", d->min, d->max);
		if (d->kind == KIND_UINT64)
			fprintf(out, " (0..2^64-1)");
		if (d->kind == KIND_CHOICE) {
			fputs(" (", out);
			for (unsigned int c = 0; d->choices[c] != NULL; c++)
				fprintf(out, "%s%s", c ? "|" : "", d->choices[c]);
			fputc(')', out);
		}
		if (d->def != NULL && d->def[0] != '\0')
			fprintf(out, " [%s]", d->def);
		fputc('\n', out);
	}
}
