/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * droce-rc [EAL options] -- MODE [options] [key=value ...]
 *
 * Starts the stack on its configuration (as droce does: the EAL's lcores
 * from the configuration unless given), opens the RC transport on port 0
 * and plays one side of an rdma-core tool against a peer. The main lcore
 * is the control lcore: the mode's loop runs droce's control round
 * itself, between its looks at the CQ and at the TCP socket.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "droce_core.h"
#include "droce_net.h"
#include "rc_app.h"

#define PROG "droce-rc"
/* Largest message a run takes: a buffer this big is allocated. */
#define MAX_SIZE (1u << 30)

volatile sig_atomic_t rcapp_interrupted;

static void
usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s [EAL options] -- MODE [options] [key=value ...]\n"
		"\n"
		"Plays one side of an rdma-core tool with droce's RC transport on port 0:\n"
		"the tool's own TCP exchange (kernel sockets, out of band), then RC traffic.\n"
		"\n"
		"Modes:\n"
		"  pingpong --server | --connect IP\n"
		"      ibv_rc_pingpong: RC SENDs of -s bytes back and forth, -n times; the\n"
		"      client sends first. Run the peer with -g <its IPv4 GID index> (rxe: 1).\n"
		"  perftest write|read|send [-R]\n"
		"      the server of ib_write_bw / ib_read_bw / ib_send_bw; run the client\n"
		"      with -x <its IPv4 GID index> (rxe: 1) and the same -s. With -R, as\n"
		"      perftest's -R: the exchange and the QP's connection through droce's\n"
		"      CM (port -p), the client run with -R too; --connect IP makes droce-rc\n"
		"      the client of ib_*_bw -R (-n iterations [5000] of -s bytes).\n"
		"  rping --server | --connect IP\n"
		"      librdmacm's rping through droce's connection manager (rdma_cm's TCP\n"
		"      port space, -p [7174]): -n pings (client [10]; server: until the client\n"
		"      stops) of -s bytes [64], each read, written back and (client) checked.\n"
		"      The peer: rping -s|-c -a IP -p 7174 -C N -S SIZE -V\n"
		"  ucmatose --server | --connect IP\n"
		"      librdmacm's ucmatose: -n messages [10] of -s bytes [100] each way\n"
		"      (-p [7471]); the peer: ucmatose [-s IP] -p 7471\n"
		"  stress --server | --connect IP\n"
		"      against another droce-rc: -n random SENDs, RDMA WRITEs with immediate\n"
		"      and RDMA READs of 0..-s bytes (the client's in random SGLs), made from\n"
		"      --seed; both sides check every byte and that each completion comes\n"
		"      once and in order. The client's -n, -s and --seed rule the run.\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE    INI configuration, as droce's\n"
		"  -p, --port N         TCP port of the exchange (1..65535) [%u]\n"
		"  -s, --size N         bytes per message (1..%u) [pingpong 4096, perftest 65536;\n"
		"                       stress: the largest, 1048576]\n"
		"  -n, --iters N        pingpong: exchanges [1000]; perftest: iterations the\n"
		"                       client must report (send: messages), unchecked if absent;\n"
		"                       stress: messages [100000]\n"
		"      --seed N         stress: the run's seed (0..2^64-1) [1]\n"
		"      --cycles N       rping, ucmatose: N connections one after another, each\n"
		"                       made, used and disconnected (1..1000000) [1]\n"
		"      --connections N  ucmatose: N connections at once, as ucmatose -c (1..1000) [1]\n"
		"      --reject TEXT    rping, ucmatose server: refuse each connection request,\n"
		"                       with TEXT (up to 147 bytes) as the REJ's private data\n"
		"      --cm-retries N   rping, ucmatose client: REQs sent again before the peer\n"
		"                       counts as unreachable (1..15) [15, as Linux]\n"
		"      --cm-timeout N   rping, ucmatose client: how long each REQ waits for an\n"
		"                       answer, 4.096 us * 2^N (1..31) [20: 4.3 s, as Linux]\n"
		"  -r, --rx-depth N     receives kept posted (1..16384) [pingpong 500, send 512]\n"
		"  -m, --mtu N          path MTU: 256, 512, 1024, 2048 or 4096 [pingpong 1024;\n"
		"                       perftest, stress: the largest port.0.mtu carries]\n"
		"      --owners L       which lcores run the QP: control (the main lcore) or\n"
		"                       workers (a worker, chosen by the QP's number) [control]\n"
		"      --zero-copy B    on: SEND and WRITE payloads of 1 KiB and more go out from\n"
		"                       the MR, chained behind their headers (port.0.tx.chains\n"
		"                       = yes); off: copied into the frame [on with port.0.tx.chains]\n"
		"      --workers-inline the main lcore runs the workers' rounds between its own\n"
		"                       (their lcores stay idle): for machines with fewer cpus\n"
		"                       than busy lcores, where polling threads share a cpu\n"
		"      --timeout S      longest wait in which nothing comes, neither the awaited\n"
		"                       TCP bytes or completion nor a RoCE packet (1..86400) [30]\n"
		"  -h, --help           this text\n"
		"  key=value            configuration override (port.0.device, port.0.address, ...;\n"
		"                       'droce --help' lists the keys). net_af_packet wants\n"
		"                       qpairs=2 or more: a TX queue for each lcore\n"
		"\n"
		"Exit status: 0 done, 1 failed at run time, 2 bad arguments or configuration.\n"
		"\n"
		"Example (droce at 198.18.0.1 on a veth, the peer's ibv_rc_pingpong -g 1 as client):\n"
		"  %s --no-pci --no-huge -m 256 --file-prefix rc0 \\\n"
		"      --vdev=net_af_packet0,iface=veth0,qpairs=2 -- pingpong --server -s 4096 -n 100 \\\n"
		"      port.0.device=net_af_packet0 port.0.address=198.18.0.1/24\n",
		prog, RCAPP_TCP_PORT, MAX_SIZE, prog);
}

/* A whole number @p min..@p max for option @p name. */
static int
parse_uint(const char *name, const char *arg, unsigned long min, unsigned long max,
	   uint32_t *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || v < min || v > max) {
		fprintf(stderr, PROG ": %s \"%s\": allowed: a whole number %lu..%lu\n", name, arg,
			min, max);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int
parse_mtu(const char *arg, enum droce_mtu *mtu)
{
	uint32_t bytes;

	if (parse_uint("-m/--mtu", arg, 256, 4096, &bytes) != 0)
		return -1;
	for (enum droce_mtu m = DROCE_MTU_256; m <= DROCE_MTU_4096; m++)
		if (droce_mtu_to_bytes(m) == bytes) {
			*mtu = m;
			return 0;
		}
	fprintf(stderr, PROG ": -m/--mtu \"%s\": allowed: 256, 512, 1024, 2048, 4096\n", arg);
	return -1;
}

/* Options present, so that the mode can say which do not belong to it. */
struct given {
	bool size, iters, rx_depth, mtu, server, connect, seed, port, cycles;
	bool connections, reject, cm_retries, cm_timeout, rdma_cm;
};

static int
parse_options(int argc, char **argv, struct rcapp_opts *o, struct given *g)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "server", no_argument, NULL, 'S' },
		{ "connect", required_argument, NULL, 'C' },
		{ "seed", required_argument, NULL, 'E' },
		{ "cycles", required_argument, NULL, 'Y' },
		{ "rdma-cm", no_argument, NULL, 'R' },
		{ "connections", required_argument, NULL, 'K' },
		{ "reject", required_argument, NULL, 'J' },
		{ "cm-retries", required_argument, NULL, 'Z' },
		{ "cm-timeout", required_argument, NULL, 'T' },
		{ "workers-inline", no_argument, NULL, 'W' },
		{ "owners", required_argument, NULL, 'O' },
		{ "zero-copy", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:p:s:n:r:m:Rh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config = optarg;
			break;
		case 'p':
			g->port = true;
			if (parse_uint("-p/--port", optarg, 1, 65535, &v) != 0)
				return -1;
			o->tcp_port = (uint16_t)v;
			break;
		case 's':
			g->size = true;
			if (parse_uint("-s/--size", optarg, 1, MAX_SIZE, &o->size) != 0)
				return -1;
			break;
		case 'n':
			g->iters = true;
			if (parse_uint("-n/--iters", optarg, 1, INT32_MAX, &o->iters) != 0)
				return -1;
			break;
		case 'r':
			g->rx_depth = true;
			if (parse_uint("-r/--rx-depth", optarg, 1, 16384, &o->rx_depth) != 0)
				return -1;
			break;
		case 'm':
			g->mtu = true;
			if (parse_mtu(optarg, &o->mtu) != 0)
				return -1;
			break;
		case 't':
			if (parse_uint("--timeout", optarg, 1, 86400, &o->timeout_s) != 0)
				return -1;
			break;
		case 'S':
			g->server = true;
			break;
		case 'C':
			g->connect = true;
			if (inet_pton(AF_INET, optarg, &o->connect_ip) != 1) {
				fprintf(stderr, PROG ": --connect \"%s\": allowed: an IPv4 address a.b.c.d\n",
					optarg);
				return -1;
			}
			break;
		case 'E': {
			char *end;

			g->seed = true;
			errno = 0;
			o->seed = strtoull(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-') {
				fprintf(stderr, PROG ": --seed \"%s\": allowed: a whole number 0..18446744073709551615\n",
					optarg);
				return -1;
			}
			break;
		}
		case 'W':
			o->workers_inline = true;
			break;
		case 'Y':
			g->cycles = true;
			if (parse_uint("--cycles", optarg, 1, 1000000, &o->cycles) != 0)
				return -1;
			break;
		case 'K':
			g->connections = true;
			if (parse_uint("--connections", optarg, 1, 1000, &o->connections) != 0)
				return -1;
			break;
		case 'J':
			g->reject = true;
			if (strlen(optarg) >= DROCE_CM_REJECT_PRIVATE_MAX) {
				fprintf(stderr, PROG ": --reject: %zu bytes; allowed: up to %u (a REJ's private data, with its NUL)\n",
					strlen(optarg), DROCE_CM_REJECT_PRIVATE_MAX - 1);
				return -1;
			}
			o->reject = optarg;
			break;
		case 'R':
			g->rdma_cm = true;
			o->rdma_cm = true;
			break;
		case 'Z':
			g->cm_retries = true;
			if (parse_uint("--cm-retries", optarg, 1, 15, &v) != 0)
				return -1;
			o->cm_retries = (uint8_t)v;
			break;
		case 'T':
			g->cm_timeout = true;
			if (parse_uint("--cm-timeout", optarg, 1, 31, &v) != 0)
				return -1;
			o->cm_response_timeout = (uint8_t)v;
			break;
		case 'O':
			if (strcmp(optarg, "control") == 0) {
				o->owners = DROCE_RC_OWNERS_CONTROL;
			} else if (strcmp(optarg, "workers") == 0) {
				o->owners = DROCE_RC_OWNERS_WORKERS;
			} else {
				fprintf(stderr, PROG ": --owners \"%s\": allowed: control, workers\n",
					optarg);
				return -1;
			}
			break;
		case 'P':
			if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
				fprintf(stderr, PROG ": --zero-copy \"%s\": allowed: on, off\n",
					optarg);
				return -1;
			}
			o->zero_copy = optarg[1] == 'n' ? 1 : 0;
			break;
		case 'h':
			return 1;
		default:
			fprintf(stderr, PROG ": '--help' lists the options\n");
			return -1;
		}
	}
	return 0;
}

/* The mode and its words, then key=value overrides, from what getopt left. */
static int
parse_words(int argc, char **argv, struct rcapp_opts *o)
{
	int i = optind, nb_words = 0;

	if (i == argc || strchr(argv[i], '=') != NULL) {
		fprintf(stderr, PROG ": no mode; allowed: pingpong, perftest, stress, rping, ucmatose ('--help' says more)\n");
		return -1;
	}
	if (strcmp(argv[i], "pingpong") == 0) {
		o->mode = RCAPP_PINGPONG;
		nb_words = 1;
	} else if (strcmp(argv[i], "stress") == 0) {
		o->mode = RCAPP_STRESS;
		nb_words = 1;
	} else if (strcmp(argv[i], "rping") == 0) {
		o->mode = RCAPP_RPING;
		nb_words = 1;
	} else if (strcmp(argv[i], "ucmatose") == 0) {
		o->mode = RCAPP_UCMATOSE;
		nb_words = 1;
	} else if (strcmp(argv[i], "perftest") == 0) {
		o->mode = RCAPP_PERFTEST;
		nb_words = 2;
		if (i + 1 == argc || strchr(argv[i + 1], '=') != NULL) {
			fprintf(stderr, PROG ": perftest: no test; allowed: write, read, send\n");
			return -1;
		}
		if (strcmp(argv[i + 1], "write") == 0) {
			o->verb = RCAPP_WRITE;
		} else if (strcmp(argv[i + 1], "read") == 0) {
			o->verb = RCAPP_READ;
		} else if (strcmp(argv[i + 1], "send") == 0) {
			o->verb = RCAPP_SEND;
		} else {
			fprintf(stderr, PROG ": perftest \"%s\": allowed: write, read, send\n",
				argv[i + 1]);
			return -1;
		}
	} else {
		fprintf(stderr, PROG ": mode \"%s\": allowed: pingpong, perftest, stress, rping, ucmatose\n", argv[i]);
		return -1;
	}
	for (int j = i + nb_words; j < argc; j++)
		if (strchr(argv[j], '=') == NULL) {
			fprintf(stderr, PROG ": argument \"%s\" is neither an option nor key=value; '--help' lists both\n",
				argv[j]);
			return -1;
		}
	o->overrides = argv + i + nb_words;
	o->nb_overrides = argc - i - nb_words;
	return 0;
}

/* Defaults of the mode, and the options that do not fit it. */
static int
mode_check(struct rcapp_opts *o, const struct given *g)
{
	if (g->rdma_cm && o->mode != RCAPP_PERFTEST) {
		fprintf(stderr, PROG ": -R/--rdma-cm applies to perftest only (rping and ucmatose always use the CM)\n");
		return -1;
	}
	if (g->seed && o->mode != RCAPP_STRESS) {
		fprintf(stderr, PROG ": --seed applies to stress only\n");
		return -1;
	}
	if (g->cycles && o->mode != RCAPP_RPING && o->mode != RCAPP_UCMATOSE) {
		fprintf(stderr, PROG ": --cycles applies to rping and ucmatose only\n");
		return -1;
	}
	if (!g->cycles)
		o->cycles = 1;
	if (g->connections && o->mode != RCAPP_UCMATOSE) {
		fprintf(stderr, PROG ": --connections applies to ucmatose only\n");
		return -1;
	}
	if (!g->connections)
		o->connections = 1;
	if ((g->reject || g->cm_retries || g->cm_timeout) && o->mode != RCAPP_RPING &&
	    o->mode != RCAPP_UCMATOSE) {
		fprintf(stderr, PROG ": --reject, --cm-retries and --cm-timeout apply to rping and ucmatose only\n");
		return -1;
	}
	if (g->reject && !g->server) {
		fprintf(stderr, PROG ": --reject applies to the server (--server) only\n");
		return -1;
	}
	if ((g->cm_retries || g->cm_timeout) && !g->connect) {
		fprintf(stderr, PROG ": --cm-retries and --cm-timeout apply to the client (--connect) only\n");
		return -1;
	}
	if (o->mode != RCAPP_PERFTEST) {
		if (g->server == g->connect) {
			fprintf(stderr, PROG ": %s: give %s\n",
				o->mode == RCAPP_PINGPONG ? "pingpong"
				: o->mode == RCAPP_STRESS ? "stress"
				: o->mode == RCAPP_RPING ? "rping" : "ucmatose",
				g->server ? "--server or --connect IP, not both" : "--server or --connect IP");
			return -1;
		}
		o->server = g->server;
	}
	if (o->mode == RCAPP_UCMATOSE) {
		if (g->rx_depth || g->mtu) {
			fprintf(stderr, PROG ": ucmatose: -r/--rx-depth and -m/--mtu do not apply\n");
			return -1;
		}
		if (!g->size)
			o->size = 100;
		if (!g->iters)
			o->iters = 10;
		if (o->iters > 4096) {
			fprintf(stderr, PROG ": ucmatose: -n %u: allowed: 1..4096\n", o->iters);
			return -1;
		}
		if (!g->port)
			o->tcp_port = RCAPP_UCMATOSE_PORT;
		return 0;
	}
	if (o->mode == RCAPP_RPING) {
		if (g->rx_depth || g->mtu) {
			fprintf(stderr, PROG ": rping: -r/--rx-depth and -m/--mtu do not apply (the CM sets the MTU)\n");
			return -1;
		}
		if (!g->size)
			o->size = 64;
		if (o->size < 24) {
			fprintf(stderr, PROG ": rping: -s %u: allowed: 24 bytes or more (rping's message and a number)\n",
				o->size);
			return -1;
		}
		if (!g->iters)
			o->iters = o->server ? 0 : 10;
		if (!g->port)
			o->tcp_port = RCAPP_RPING_PORT;
		return 0;
	}
	if (o->mode == RCAPP_STRESS) {
		if (g->rx_depth) {
			fprintf(stderr, PROG ": stress: -r/--rx-depth does not apply (the server keeps 8 receives posted)\n");
			return -1;
		}
		if (!g->size)
			o->size = 1u << 20;
		if (!g->iters)
			o->iters = 100000;
		if (!g->seed)
			o->seed = 1;
		return 0;
	}
	if (o->mode == RCAPP_PINGPONG) {
		if (!g->size)
			o->size = 4096;
		if (!g->iters)
			o->iters = 1000;
		if (!g->rx_depth)
			o->rx_depth = 500;
		if (!g->mtu)
			o->mtu = DROCE_MTU_1024;
		return 0;
	}
	if (g->server || (g->connect && !g->rdma_cm)) {
		fprintf(stderr, PROG ": perftest: %s does not apply: droce-rc is perftest's server (and with -R its client too, --connect IP)\n",
			g->server ? "--server" : "--connect without -R");
		return -1;
	}
	o->server = !g->connect;
	if (g->connect && !g->iters)
		o->iters = 5000; /* perftest's own */
	if (g->rdma_cm && g->mtu) {
		fprintf(stderr, PROG ": perftest -R: -m/--mtu does not apply (the CM sets the MTU)\n");
		return -1;
	}
	if (g->rx_depth && o->verb != RCAPP_SEND) {
		fprintf(stderr, PROG ": perftest %s: -r/--rx-depth applies to send only\n",
			o->verb == RCAPP_WRITE ? "write" : "read");
		return -1;
	}
	if (!g->size)
		o->size = 65536;
	if (!g->rx_depth)
		o->rx_depth = 512;
	return 0;
}

/* Parse everything after "--"; returns 0, 1 for --help, or -1. */
static int
parse_app_args(int argc, char **argv, struct rcapp_opts *o)
{
	struct given g = { 0 };
	int ret;

	o->tcp_port = RCAPP_TCP_PORT;
	o->timeout_s = 30;
	o->zero_copy = -1;
	ret = parse_options(argc, argv, o, &g);
	if (ret != 0)
		return ret;
	if (parse_words(argc, argv, o) != 0 || mode_check(o, &g) != 0)
		return -1;
	return 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	rcapp_interrupted = 1;
}

/* The configuration, with stats lines off unless the user turns them on. */
static int
load_conf(struct droce_conf *conf, const struct rcapp_opts *o)
{
	char **overrides = calloc((size_t)o->nb_overrides + 1, sizeof(*overrides));
	char err[DROCE_ERR_LEN];
	int ret;

	if (overrides == NULL)
		return -1;
	overrides[0] = (char *)"stats.period=0";
	memcpy(overrides + 1, o->overrides, sizeof(*overrides) * (size_t)o->nb_overrides);
	ret = droce_conf_load(conf, o->config, overrides, o->nb_overrides + 1, err, sizeof(err));
	free(overrides);
	if (ret != 0) {
		fprintf(stderr, PROG ": %s\n", err);
		return -1;
	}
	if (conf->nb_ports == 0) {
		fprintf(stderr, PROG ": no port configured: give port.0.device=... (vdev devargs such as net_af_packet0,iface=veth0, or a PCI address) and port.0.address=a.b.c.d/len\n");
		return -1;
	}
	/* Zero copy sends chained packets. */
	if (o->zero_copy == 1)
		conf->port[0].tx_chains = true;
	return 0;
}

/* The path MTU must fit the port (what modify_qp would refuse later). */
static int
mtu_check(const struct rcapp *app, const struct rcapp_opts *o, const struct droce_conf *conf)
{
	enum droce_mtu max = rcapp_port_mtu(app);

	if (o->mtu == 0 || o->mtu <= max)
		return 0;
	fprintf(stderr, PROG ": -m/--mtu %u does not fit port 0's IP MTU %u (%s: port.0.mtu); allowed: up to %u, or a port.0.mtu of %u\n",
		droce_mtu_to_bytes(o->mtu), droce_port_mtu(app->stack, 0),
		droce_conf_origin(conf, "port.0.mtu"), droce_mtu_to_bytes(max),
		droce_mtu_to_bytes(o->mtu) + RCAPP_ROCE_OVERHEAD);
	return -1;
}

/* The modes that connect through droce's CM. */
static bool
uses_cm(const struct rcapp_opts *o)
{
	return o->mode == RCAPP_RPING || o->mode == RCAPP_UCMATOSE ||
	       (o->mode == RCAPP_PERFTEST && o->rdma_cm);
}

static int
run(const struct droce_conf *conf, const struct rcapp_opts *o, const char *lcore_option)
{
	struct droce_lcore_layout layout;
	struct rcapp app = { .timeout_s = o->timeout_s, .workers_inline = o->workers_inline };
	char err[DROCE_ERR_LEN];
	int ret;

	if (droce_lcores_layout(conf, lcore_option, &layout, err, sizeof(err)) != 0) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	app.stack = droce_stack_create(conf, &layout, err, sizeof(err));
	if (app.stack == NULL) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	app.dev = droce_rc_open_conf(app.stack, 0, &(struct droce_rc_conf){ .owners = o->owners },
				     err, sizeof(err));
	if (app.dev != NULL && o->zero_copy >= 0 &&
	    droce_rc_set_zero_copy(app.dev, o->zero_copy == 1) != 0) {
		fprintf(stderr, PROG ": --zero-copy on: port 0 takes no chained packets\n");
		droce_rc_close(app.dev);
		droce_stack_destroy(app.stack);
		return 1;
	}
	if (app.dev != NULL && uses_cm(o))
		app.cm = droce_cm_open(app.stack, 0, err, sizeof(err));
	if (app.dev == NULL || (uses_cm(o) && app.cm == NULL)) {
		fprintf(stderr, PROG ": %s\n", err);
		droce_rc_close(app.dev);
		droce_stack_destroy(app.stack);
		return 1;
	}
	if (mtu_check(&app, o, conf) != 0) {
		droce_cm_close(app.cm);
		droce_rc_close(app.dev);
		droce_stack_destroy(app.stack);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = droce_stack_start(app.stack, !o->workers_inline);
	if (ret != 0) {
		fprintf(stderr, PROG ": start failed: %s\n", rte_strerror(-ret));
		droce_cm_close(app.cm);
		droce_rc_close(app.dev);
		droce_stack_destroy(app.stack);
		return 1;
	}
	ret = o->mode == RCAPP_PINGPONG ? rcapp_pingpong(&app, o)
	      : o->mode == RCAPP_STRESS ? rcapp_stress(&app, o)
	      : o->mode == RCAPP_RPING || o->mode == RCAPP_UCMATOSE ? rcapp_cm_tool(&app, o)
	      : rcapp_perftest(&app, o);
	droce_stack_stop(app.stack);
	if (droce_cm_close(app.cm) != 0 && ret == 0)
		ret = 1;
	if (droce_rc_close(app.dev) != 0 && ret == 0)
		ret = 1;
	droce_stack_destroy(app.stack);
	return ret;
}

int
main(int argc, char **argv)
{
	struct rcapp_opts opts = { 0 };
	static struct droce_eal_start eal;
	char err[DROCE_ERR_LEN];
	struct droce_conf *conf;
	int sep = argc, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	if (sep == argc && argc > 1 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout, argv[0]);
		return 0;
	}
	if (sep == argc) {
		fprintf(stderr, PROG ": no \"--\": the mode and its options come after the EAL options and \"--\" ('%s --help')\n",
			argv[0]);
		return 2;
	}
	/* getopt wants argv[0] in front of the application's arguments. */
	argv[sep] = argv[0];
	ret = parse_app_args(argc - sep, argv + sep, &opts);
	argv[sep] = (char *)"--";
	if (ret != 0) {
		if (ret > 0)
			usage(stdout, argv[0]);
		return ret > 0 ? 0 : 2;
	}
	conf = malloc(sizeof(*conf));
	if (conf == NULL)
		return 1;
	if (load_conf(conf, &opts) != 0) {
		free(conf);
		return 2;
	}
	ret = droce_eal_start(&eal, conf, sep, argv, err, sizeof(err));
	if (ret != 0) {
		fprintf(stderr, PROG ": %s\n", err);
		free(conf);
		return ret;
	}
	ret = run(conf, &opts, eal.lcore_option);
	droce_eal_stop(&eal);
	free(conf);
	return ret;
}
