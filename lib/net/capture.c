/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * pcapng capture of RoCEv2 traffic (UDP port 4791), both directions, for
 * Wireshark: NICs with RoCE offload hide this traffic from tcpdump. An
 * lcore that sees such a packet copies it (rte_pcapng_copy, from a shared
 * mempool) onto its own ring; the control lcore writes the copies out, so
 * no worker makes a system call. A copy that finds no room is counted as
 * capture_lost, never waited for.
 */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_pcapng.h>
#include <rte_string_fns.h>
#include <rte_udp.h>

#include "net_private.h"

#define CAPTURE_RING_SIZE 1024
#define CAPTURE_POOL_SIZE 8191

/* Is @m (Ethernet on) a RoCEv2 packet? IPv4 or IPv6, UDP to 4791. */
bool
net_is_roce(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const void *);
	const struct rte_udp_hdr *udp;
	uint32_t l3_len;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + 40 + sizeof(*udp))
		return false;
	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4)) {
		const struct rte_ipv4_hdr *ip = (const void *)(eth + 1);

		if (ip->next_proto_id != IPPROTO_UDP)
			return false;
		l3_len = rte_ipv4_hdr_len(ip);
	} else if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6)) {
		if (((const struct rte_ipv6_hdr *)(eth + 1))->proto != IPPROTO_UDP)
			return false;
		l3_len = sizeof(struct rte_ipv6_hdr);
	} else {
		return false;
	}
	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + l3_len + sizeof(*udp))
		return false;
	udp = rte_pktmbuf_mtod_offset(m, const void *, RTE_ETHER_HDR_LEN + l3_len);
	return udp->dst_port == RTE_BE16(4791);
}

void
net_capture(struct droce_lcore_ctx *ctx, const struct net_port *p,
	    struct rte_mbuf *m, uint32_t queue, bool rx)
{
	struct droce_stack *s = ctx->stack;
	struct rte_mbuf *copy;

	copy = rte_pcapng_copy(p->port_id, queue, m, s->capture_pool,
			       UINT32_MAX, rte_get_tsc_cycles(),
			       rx ? RTE_PCAPNG_DIRECTION_IN : RTE_PCAPNG_DIRECTION_OUT);
	if (copy == NULL) {
		net_count(&ctx->capture_lost, 1);
		return;
	}
	if (rte_ring_sp_enqueue(ctx->capture_ring, copy) != 0) {
		rte_pktmbuf_free(copy);
		net_count(&ctx->capture_lost, 1);
	}
}

/* One capture file; ports naming the same path share it. */
static int
file_for(struct droce_stack *s, const char *path, char *err, size_t errlen)
{
	struct net_capture_file *f;
	int fd;

	for (unsigned int i = 0; i < s->nb_capture_files; i++)
		if (strcmp(s->capture_file[i].path, path) == 0)
			return (int)i;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s for writing: %s", path,
			 strerror(errno));
		return -errno;
	}
	f = &s->capture_file[s->nb_capture_files];
	f->pcapng = rte_pcapng_fdopen(fd, NULL, NULL, "droce", "RoCEv2 traffic (UDP 4791)");
	if (f->pcapng == NULL) {
		snprintf(err, errlen, "%s: rte_pcapng_fdopen: %s", path,
			 rte_strerror(rte_errno));
		close(fd);
		return -rte_errno;
	}
	rte_strscpy(f->path, path, sizeof(f->path));
	return (int)s->nb_capture_files++;
}

int
net_capture_open(struct droce_stack *s, char *err, size_t errlen)
{
	char why[DROCE_ERR_LEN];
	bool any = false;

	for (uint16_t i = 0; i < s->nb_ports; i++)
		any |= s->conf.port[i].capture[0] != '\0';
	if (!any)
		return 0;
	s->capture_pool = rte_pktmbuf_pool_create("droce_capture",
			CAPTURE_POOL_SIZE, 256, 0,
			(uint16_t)rte_pcapng_mbuf_size(RTE_ETHER_MAX_JUMBO_FRAME_LEN),
			SOCKET_ID_ANY);
	if (s->capture_pool == NULL) {
		snprintf(err, errlen, "capture: no mempool: %s",
			 rte_strerror(rte_errno));
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < net_nb_ctx(s); c++) {
		struct droce_lcore_ctx *ctx = net_ctx(s, c);
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "droce%u_cap%u", s->instance, c);
		ctx->capture_ring = rte_ring_create(name, CAPTURE_RING_SIZE,
				SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (ctx->capture_ring == NULL) {
			snprintf(err, errlen, "capture: no ring: %s",
				 rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	for (uint16_t i = 0; i < s->nb_ports; i++) {
		const char *path = s->conf.port[i].capture;
		char key[64];
		int f;

		if (path[0] == '\0')
			continue;
		f = file_for(s, path, why, sizeof(why));
		if (f < 0) {
			snprintf(key, sizeof(key), "port.%u.capture", i);
			snprintf(err, errlen, "%s: %s = \"%s\": %s",
				 droce_conf_origin(&s->conf, key), key, path, why);
			return f;
		}
		s->port[i]->capture_file = f;
		s->port[i]->capture = true;
	}
	return 0;
}

/* The file of a copy: by the ethdev it was taken on (rte_pcapng_copy
 * keeps the port id in the copy).
 */
static int
file_of(const struct droce_stack *s, const struct rte_mbuf *copy)
{
	return s->port[s->port_of_ethdev[copy->port]]->capture_file;
}

/* Control lcore: write what the lcores copied. */
unsigned int
net_capture_drain(struct droce_stack *s)
{
	unsigned int total = 0;

	if (s->capture_pool == NULL)
		return 0;
	for (uint32_t c = 0; c < net_nb_ctx(s); c++) {
		struct droce_lcore_ctx *ctx = net_ctx(s, c);
		struct rte_mbuf *pkts[NET_BURST];
		unsigned int n;

		if (ctx == NULL || ctx->capture_ring == NULL)
			continue;
		n = rte_ring_sc_dequeue_burst(ctx->capture_ring, (void **)pkts,
					      NET_BURST, NULL);
		/* Runs of packets for one file go out in one write. */
		for (unsigned int i = 0; i < n;) {
			int f = file_of(s, pkts[i]);
			unsigned int j = i + 1;

			while (j < n && file_of(s, pkts[j]) == f)
				j++;
			if (rte_pcapng_write_packets(s->capture_file[f].pcapng,
						     pkts + i, j - i) < 0)
				net_count(&s->capture_write_errors, j - i);
			/* 22.11's write keeps them, whatever its header says
			 * (dpdk-dumpcap frees them too): kept, the pool ran
			 * dry after 8191 copies and the capture stopped.
			 */
			rte_pktmbuf_free_bulk(pkts + i, j - i);
			i = j;
		}
		total += n;
	}
	return total;
}

void
net_capture_close(struct droce_stack *s)
{
	while (net_capture_drain(s) != 0)
		;
	for (unsigned int i = 0; i < s->nb_capture_files; i++)
		rte_pcapng_close(s->capture_file[i].pcapng);
	s->nb_capture_files = 0;
	for (uint32_t c = 0; c < net_nb_ctx(s); c++) {
		struct droce_lcore_ctx *ctx = net_ctx(s, c);

		if (ctx != NULL) {
			rte_ring_free(ctx->capture_ring);
			ctx->capture_ring = NULL;
		}
	}
	rte_mempool_free(s->capture_pool);
	s->capture_pool = NULL;
}
