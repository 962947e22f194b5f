/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * A bad wire between two ports: frames from port 0 go out of port 1 and
 * the other way round; IPv4 frames from port 0 are dropped, duplicated or
 * held back behind the next one (reordered) at the rates given. Other
 * frames (ARP) and port 1's pass untouched unless --both. For tests that
 * put two programs on either side, over net_memif, say:
 *
 *   wire_faults [EAL options with two vdevs] -- --seconds S
 *       [--drop P] [--duplicate P] [--reorder P] [--seed N] [--both | --back]
 *       [--tamper N | --tamper-read N | --tamper-write N] [--look-for TEXT]
 *       [--spare-src IP]
 *
 * --tamper N flips one payload byte of the Nth RoCEv2 SEND (with a
 * payload) from port 0 and computes its ICRC again, so that RC takes it
 * as sent: what runs above RC must notice (TLS's record tag, say).
 * --tamper-read N does that to the Nth RDMA READ response instead, and
 * --tamper-write N to the Nth RDMA WRITE packet. --back puts the faults
 * on port 1's frames instead of port 0's. --look-for TEXT counts the
 * frames, either way, with TEXT in them (plaintext on the wire).
 * --spare-src IP lets IPv4 frames from IP through untouched (counted as
 * spared): a sender that injects faults of its own, so that what its
 * receiver must count stays known exactly (droce-sensor --faults).
 *
 * P is a fraction (0.03 is 3 %). Runs until SIGTERM or SIGINT or S seconds,
 * then prints what it did to each direction. Exit status: 0, 1 at run
 * time, 2 for bad arguments.
 */

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ip.h>
#include <rte_random.h>
#include <rte_udp.h>

#include "droce_roce.h"

#define PROG "wire_faults"
#define BURST 32
#define QUEUES_MAX 4
/* A frame held back for reordering goes out at the latest after this. */
#define HOLD_US 500

struct direction {
	uint16_t from, to;
	bool faulty;
	struct rte_mbuf *held;
	uint64_t held_since;
	uint64_t passed, dropped, duplicated, reordered, tx_dropped, tampered, spared;
};

struct fault_rates {
	uint64_t drop, duplicate, reorder;      /* out of 2^32 */
};

static volatile sig_atomic_t stop;
/* What --tamper, --tamper-read and --tamper-write flip a byte of. */
enum tamper_kind { TAMPER_SEND, TAMPER_READ_RESPONSE, TAMPER_WRITE };

static uint64_t tamper_at;      /* which packet of its kind; 0, none */
static enum tamper_kind tamper_kind;
static uint64_t tamper_seen;
static const char *look_for;    /* --look-for */
static uint64_t look_found;
static struct rte_mempool *pool;
static uint16_t nb_queues;
static rte_be32_t spare_src;    /* --spare-src; 0, none */

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
parse_rate(const char *name, const char *arg, uint64_t *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !(v >= 0 && v <= 1)) {
		fprintf(stderr, PROG ": %s \"%s\": allowed: a fraction 0..1\n", name, arg);
		return -1;
	}
	*out = (uint64_t)(v * 4294967296.0);
	return 0;
}

static int
port_up(uint16_t port)
{
	struct rte_eth_conf conf = { 0 };
	int ret = rte_eth_dev_configure(port, nb_queues, nb_queues, &conf);

	for (uint16_t q = 0; ret == 0 && q < nb_queues; q++) {
		ret = rte_eth_rx_queue_setup(port, q, 1024, rte_eth_dev_socket_id(port), NULL, pool);
		if (ret == 0)
			ret = rte_eth_tx_queue_setup(port, q, 1024, rte_eth_dev_socket_id(port), NULL);
	}
	if (ret == 0)
		ret = rte_eth_dev_start(port);
	if (ret != 0)
		fprintf(stderr, PROG ": port %u: %s\n", port, rte_strerror(-ret));
	return ret;
}

static bool
is_ipv4(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	return rte_pktmbuf_data_len(m) >= sizeof(*eth) &&
	       eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4);
}

/* Whether @p m is an IPv4 frame from --spare-src's address. */
static bool
is_spared(const struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip;

	if (spare_src == 0 || !is_ipv4(m) ||
	    rte_pktmbuf_data_len(m) < sizeof(struct rte_ether_hdr) + sizeof(*ip))
		return false;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
	return ip->src_addr == spare_src;
}

/* The headers after the BTH of a packet of the kind --tamper* picks;
 * -1 for any other packet.
 */
static int
tamper_headers(uint8_t opcode)
{
	switch (tamper_kind) {
	case TAMPER_SEND:
		if (opcode > DROCE_OP_SEND_ONLY_IMM)
			return -1;
		return opcode == DROCE_OP_SEND_LAST_IMM || opcode == DROCE_OP_SEND_ONLY_IMM ? 4 : 0;
	case TAMPER_READ_RESPONSE:
		if (opcode < DROCE_OP_READ_RESPONSE_FIRST || opcode > DROCE_OP_READ_RESPONSE_ONLY)
			return -1;
		return opcode == DROCE_OP_READ_RESPONSE_MIDDLE ? 0 : 4;     /* AETH */
	case TAMPER_WRITE:
		if (opcode < DROCE_OP_WRITE_FIRST || opcode > DROCE_OP_WRITE_ONLY_IMM)
			return -1;
		/* RETH on the first and only packets, ImmDt on those with one. */
		return (opcode == DROCE_OP_WRITE_FIRST || opcode >= DROCE_OP_WRITE_ONLY ? 16 : 0) +
		       (opcode == DROCE_OP_WRITE_LAST_IMM || opcode == DROCE_OP_WRITE_ONLY_IMM ? 4 : 0);
	}
	return -1;
}

/* With --look-for: whether the frame carries the text. */
static void
look(const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (look_for != NULL && m->nb_segs == 1 &&
	    memmem(p, rte_pktmbuf_data_len(m), look_for, strlen(look_for)) != NULL)
		look_found++;
}

/* With --tamper(-read): the payload, one byte flipped, its ICRC made again. */
static void
tamper(struct direction *d, struct rte_mbuf *m)
{
	const uint32_t l3 = sizeof(struct rte_ether_hdr);
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	uint8_t *bth;
	uint32_t hdrs, len, payload;
	int extra;

	if (tamper_at == 0 || tamper_seen >= tamper_at || !is_ipv4(m) || m->nb_segs != 1 ||
	    rte_pktmbuf_data_len(m) < l3 + sizeof(*ip) + sizeof(*udp) + sizeof(struct droce_bth))
		return;
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, l3);
	if (ip->next_proto_id != IPPROTO_UDP || rte_ipv4_hdr_len(ip) != sizeof(*ip))
		return;
	udp = (struct rte_udp_hdr *)(ip + 1);
	bth = (uint8_t *)(udp + 1);
	extra = tamper_headers(bth[0]);
	if (udp->dst_port != RTE_BE16(DROCE_ROCE_UDP_PORT) || extra < 0)
		return;
	hdrs = (uint32_t)sizeof(struct droce_bth) + (uint32_t)extra;
	len = rte_be_to_cpu_16(udp->dgram_len);
	if (len > rte_pktmbuf_data_len(m) - l3 - sizeof(*ip) ||
	    len < sizeof(*udp) + hdrs + ((bth[1] >> 4) & 3) + DROCE_ICRC_LEN)
		return;
	payload = len - (uint32_t)sizeof(*udp) - hdrs - ((bth[1] >> 4) & 3) - DROCE_ICRC_LEN;
	if (payload == 0 || ++tamper_seen != tamper_at)
		return;
	bth[hdrs + payload / 2] ^= 0x01;
	udp->dgram_cksum = 0;
	droce_icrc_fill_mbuf(m, l3);
	d->tampered++;
}

static void
send_out(struct direction *d, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = 0;

	for (int tries = 0; sent < n && tries < 1000; tries++)
		sent += rte_eth_tx_burst(d->to, 0, pkts + sent, (uint16_t)(n - sent));
	if (sent < n) {
		d->tx_dropped += n - sent;
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	}
}

/* One frame's fate; it and what it lets go are appended to @p out. */
static void
judge(struct direction *d, const struct fault_rates *f, struct rte_mbuf *m,
      struct rte_mbuf **out, uint16_t *n)
{
	uint64_t r = d->faulty && is_ipv4(m) ? rte_rand() >> 32 : UINT64_MAX;
	struct rte_mbuf *copy;

	look(m);
	if (r != UINT64_MAX && is_spared(m)) {
		d->spared++;
		r = UINT64_MAX;
	} else if (d->faulty) {
		tamper(d, m);
	}
	if (r < f->drop) {
		d->dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	if (r < f->drop + f->duplicate && (copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX)) != NULL) {
		d->duplicated++;
		out[(*n)++] = m;
		m = copy;
	} else if (r < f->drop + f->duplicate + f->reorder && d->held == NULL) {
		d->reordered++;
		d->held = m;
		d->held_since = rte_get_tsc_cycles();
		return;
	}
	out[(*n)++] = m;
	d->passed++;
	if (d->held != NULL) {
		out[(*n)++] = d->held;
		d->held = NULL;
	}
}

static bool
forward(struct direction *d, const struct fault_rates *f)
{
	struct rte_mbuf *in[BURST], *out[3 * BURST];
	uint16_t n_out = 0;
	bool busy = false;

	for (uint16_t q = 0; q < nb_queues; q++) {
		uint16_t n = rte_eth_rx_burst(d->from, q, in, BURST);

		busy |= n != 0;
		for (uint16_t i = 0; i < n; i++)
			judge(d, f, in[i], out, &n_out);
	}
	if (d->held != NULL &&
	    rte_get_tsc_cycles() - d->held_since > rte_get_tsc_hz() / 1000000 * HOLD_US) {
		out[n_out++] = d->held;
		d->held = NULL;
	}
	if (n_out != 0)
		send_out(d, out, n_out);
	return busy;
}

static void
report(const struct direction *d)
{
	printf(PROG ": port %u -> %u: %" PRIu64 " passed, %" PRIu64 " dropped, %" PRIu64
	       " duplicated, %" PRIu64 " reordered, %" PRIu64 " tampered with, %" PRIu64
	       " lost at TX, %" PRIu64 " spared\n", d->from, d->to, d->passed, d->dropped,
	       d->duplicated, d->reordered, d->tampered, d->tx_dropped, d->spared);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "drop", required_argument, NULL, 'd' },
		{ "duplicate", required_argument, NULL, 'u' },
		{ "reorder", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'e' },
		{ "both", no_argument, NULL, 'b' },
		{ "queues", required_argument, NULL, 'q' },
		{ "tamper", required_argument, NULL, 't' },
		{ "tamper-read", required_argument, NULL, 'R' },
		{ "tamper-write", required_argument, NULL, 'W' },
		{ "back", no_argument, NULL, 'B' },
		{ "look-for", required_argument, NULL, 'l' },
		{ "spare-src", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct fault_rates f = { 0 };
	struct direction d[2] = { { .from = 0, .to = 1, .faulty = true }, { .from = 1, .to = 0 } };
	unsigned long seconds = 60, seed = 1;
	uint64_t deadline, idle = 0;
	int n = rte_eal_init(argc, argv), opt;
	char *end;

	if (n < 0) {
		fprintf(stderr, PROG ": EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	nb_queues = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			seconds = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			if (parse_rate("--drop", optarg, &f.drop) != 0)
				return 2;
			break;
		case 'u':
			if (parse_rate("--duplicate", optarg, &f.duplicate) != 0)
				return 2;
			break;
		case 'r':
			if (parse_rate("--reorder", optarg, &f.reorder) != 0)
				return 2;
			break;
		case 'e':
			seed = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			d[1].faulty = true;
			break;
		case 'B':
			d[0].faulty = false;
			d[1].faulty = true;
			break;
		case 't':
		case 'R':
		case 'W':
			tamper_kind = opt == 't' ? TAMPER_SEND : opt == 'R' ? TAMPER_READ_RESPONSE
				      : TAMPER_WRITE;
			tamper_at = strtoull(optarg, &end, 10);
			if (*end != '\0' || tamper_at == 0) {
				fprintf(stderr, PROG ": --tamper%s \"%s\": allowed: 1 or more (the Nth packet)\n",
					opt == 't' ? "" : opt == 'R' ? "-read" : "-write", optarg);
				return 2;
			}
			break;
		case 'l':
			look_for = optarg;
			if (*look_for == '\0') {
				fprintf(stderr, PROG ": --look-for: allowed: a text of 1 byte or more\n");
				return 2;
			}
			break;
		case 'S':
			if (inet_pton(AF_INET, optarg, &spare_src) != 1 || spare_src == 0) {
				fprintf(stderr, PROG ": --spare-src \"%s\": allowed: an IPv4 address other than 0.0.0.0\n",
					optarg);
				return 2;
			}
			break;
		case 'q':
			nb_queues = (uint16_t)strtoul(optarg, NULL, 10);
			if (nb_queues < 1 || nb_queues > QUEUES_MAX) {
				fprintf(stderr, PROG ": --queues \"%s\": allowed: 1..%u\n", optarg,
					QUEUES_MAX);
				return 2;
			}
			break;
		default:
			fprintf(stderr, PROG ": options: --seconds S --drop P --duplicate P --reorder P --seed N --both --back --queues N --tamper N --tamper-read N --tamper-write N --look-for TEXT --spare-src IP\n");
			return 2;
		}
	}
	if (seconds == 0 || f.drop + f.duplicate + f.reorder > (1ull << 32)) {
		fprintf(stderr, PROG ": --seconds must be 1 or more, and the rates together at most 1\n");
		return 2;
	}
	if (rte_eth_dev_count_avail() != 2) {
		fprintf(stderr, PROG ": needs exactly two ports (vdevs), has %u\n",
			rte_eth_dev_count_avail());
		return 2;
	}
	rte_srand(seed);
	pool = rte_pktmbuf_pool_create("wire_faults", 8191, 256, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (pool == NULL || port_up(0) != 0 || port_up(1) != 0)
		return 1;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf(PROG ": running\n");
	fflush(stdout);
	deadline = rte_get_tsc_cycles() + seconds * rte_get_tsc_hz();
	while (!stop && rte_get_tsc_cycles() < deadline) {
		bool busy = forward(&d[0], &f);

		busy |= forward(&d[1], &f);
		/* Both ends poll too: give them the cpu when there is nothing. */
		if (busy)
			idle = 0;
		else if (++idle > 64)
			usleep(10);
	}
	report(&d[0]);
	report(&d[1]);
	if (look_for != NULL)
		printf(PROG ": \"%s\" seen in %" PRIu64 " frames\n", look_for, look_found);
	for (uint16_t p = 0; p < 2; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	rte_eal_cleanup();
	return 0;
}
