/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_CORE_H
#define DROCE_CORE_H

/**
 * @file
 * droce core: configuration, worker groups and lcore layout.
 *
 * Configuration comes from one INI file (read with rte_cfgfile) and
 * `key=value` overrides from the command line. Both are parsed once, at
 * start, into a struct droce_conf; nothing after start sees a string.
 *
 * Keys use the hcom vocabulary where one exists (`worker.thread.groups`,
 * `worker.thread.cpuset`, `worker.poll.enable`). In the file, a key
 * `a.b.c` is written either whole before any section or as entry `b.c`
 * of section `[a]`, or entry `c` of section `[a.b]`.
 *
 * Errors are returned as a negative errno and a message that names the
 * file and line (or the command-line argument), the key, the value and
 * what is allowed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_config.h>
#include <rte_byteorder.h>
#include <rte_ether.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest error message the configuration functions write. */
#define DROCE_ERR_LEN 512

/** Most worker groups, as in hcom. */
#define DROCE_MAX_GROUPS 128
/** Most workers in one group, as in hcom. */
#define DROCE_MAX_GROUP_WORKERS 128
/** Most ports in one configuration. */
#define DROCE_MAX_PORTS 8
/** Most RX queues on one port. */
#define DROCE_MAX_PORT_QUEUES 64

/** One worker group: how many workers and where they run. */
struct droce_worker_group {
	uint16_t workers;   /**< Workers in the group, 1..128. */
	bool pinned;        /**< False for "na" or a group without a range. */
	uint16_t cpu_first; /**< First cpu of the range (pinned only). */
	uint16_t cpu_count; /**< Cpus in the range (pinned only). */
};

/** All worker groups, as `worker.thread.groups` and `.cpuset` say. */
struct droce_workers {
	uint16_t nb_groups;  /**< Number of groups, 1..128. */
	uint32_t nb_workers; /**< Sum of the workers of all groups. */
	struct droce_worker_group group[DROCE_MAX_GROUPS]; /**< The groups. */
};

/**
 * Parse worker groups and their cpu ranges with hcom's rules.
 *
 * @param w
 *   Filled on success; unspecified on failure.
 * @param groups
 *   `worker.thread.groups`: comma-separated worker counts ("1,2,3"); an
 *   empty string means one group of one worker.
 * @param cpuset
 *   `worker.thread.cpuset`: one "start-end" or "na" per group, in group
 *   order ("1-1,2-3,na"); groups without a range are unpinned.
 * @param busy_poll
 *   `worker.poll.enable`: with busy polling a range must name exactly as
 *   many cpus as its group has workers.
 * @param err
 *   Receives a message on failure (what, which element, what is allowed).
 * @param errlen
 *   Size of @p err.
 * @return
 *   0 on success, -EINVAL on a rule violation.
 */
int droce_workers_parse(struct droce_workers *w, const char *groups,
			const char *cpuset, bool busy_poll,
			char *err, size_t errlen);

/**
 * Cpu of worker @p index of group @p group.
 *
 * @return
 *   The cpu (`start + index % count`), or -1 when the group is unpinned.
 */
int droce_workers_cpu(const struct droce_workers *w, uint16_t group,
		      uint16_t index);

/** One configured port (`port.N.*`). */
struct droce_port_conf {
	char device[256];     /**< Ethdev name, or devargs to probe. */
	rte_be32_t addr;      /**< IPv4 address, network order. */
	uint8_t prefix_len;   /**< Prefix length of @p addr, 1..32. */
	rte_be32_t gateway;   /**< Next hop off-link, 0 for none. */
	uint16_t mtu;         /**< IP MTU. */
	uint16_t rx_queues;   /**< RX queues; 0 = one per worker. */
	uint16_t rx_desc;     /**< RX descriptors per queue. */
	uint16_t tx_desc;     /**< TX descriptors per queue. */
	char capture[256];    /**< pcapng file for its RoCEv2 packets, or "". */
	/** MAC to set on the device (unicast); all zero: the device's own. */
	struct rte_ether_addr mac;
	/** Ask the device for multi-segment TX, which lib/rc's zero-copy
	 *  sends need. */
	bool tx_chains;
};

/** Most receiver sections (`rx.N.*`); each may make many streams. */
#define DROCE_MAX_RX_CONF 64

/** One configured receiver section (`rx.N.*`): @p count streams alike. */
struct droce_rx_conf {
	uint16_t port;          /**< droce port index. */
	rte_be32_t peer;        /**< Sensor IPv4 address, network order. */
	uint32_t qp;            /**< QP of the first stream; 0: picked. */
	uint32_t rkey;          /**< rkey; 0: picked. */
	uint32_t frame_size;    /**< Bytes of frame data. */
	uint32_t metadata_offset; /**< 0: round_up(frame_size, 128). */
	uint32_t page_size;     /**< 0: metadata_offset + 128. */
	uint16_t pages;         /**< Pages per stream, 1..4096. */
	/** Device address of page 0 that the sensor was programmed with. */
	uint64_t va;
	uint32_t queue_size;    /**< Frames held for the application. */
	uint8_t placement;      /**< Index in "auto", "copy", "gather". */
	uint8_t icrc;           /**< Index in "on", "fused", "off". */
	uint8_t copy_stores;    /**< Index in "streaming", "cached". */
	uint8_t immediate;      /**< Index in "hsb", "hsb-lite", "opaque". */
	uint16_t count;         /**< Streams, QPs qp .. qp + count - 1. */
	uint32_t remote_qp;     /**< RC requester QP, for ACKs. */
	uint32_t reorder_window; /**< UC packets held behind a PSN gap; 0: off. */
	uint32_t reorder_timeout_us; /**< How long a gap may wait to fill. */
	char gpu[32];           /**< Device for this section; "": the global gpu. */
};

/** Longest key. */
#define DROCE_CONF_KEY_LEN 128
/** Longest value (rte_cfgfile's own limit). */
#define DROCE_CONF_VALUE_LEN 256
/** Longest origin text ("file:line" or "command line"). */
#define DROCE_CONF_ORIGIN_LEN 300
/** Most distinct keys a configuration can hold. */
#define DROCE_CONF_MAX_ENTRIES 512

/** One key as given, with where it came from (for messages, telemetry). */
struct droce_conf_entry {
	char key[DROCE_CONF_KEY_LEN];       /**< Full dotted key. */
	char value[DROCE_CONF_VALUE_LEN];   /**< Value as given. */
	char origin[DROCE_CONF_ORIGIN_LEN]; /**< "file:line" or argument. */
};

/** The whole configuration, typed. */
/** Longest file path a key takes, with its NUL. */
#define DROCE_PATH_LEN 256

struct droce_conf {
	struct droce_workers workers; /**< Worker groups and pinning. */
	bool busy_poll;               /**< worker.poll.enable. */
	bool workers_inline;          /**< worker.inline: the control lcore polls for them. */
	int control_cpu;              /**< control.cpu, -1 = chosen at start. */
	uint32_t stats_period;        /**< stats.period in s, 0 = off. */
	uint16_t udp_echo_port;       /**< udp.echo.port, 0 = off. */
	uint32_t arp_timeout;         /**< arp.timeout: s an entry stays valid. */
	char gpu[32];                 /**< gpu: host, cuda:N or auto. */
	uint16_t rpc_port;            /**< rpc.port: droce's RPC server, 0 = none. */
	bool rpc_tls;                 /**< server.tls.enable for it. */
	uint32_t rpc_heartbeat_idle;  /**< server.heartbeat.idle, s. */
	char rpc_tls_cert[DROCE_PATH_LEN];    /**< rpc.tls.cert: PEM certificate. */
	char rpc_tls_key[DROCE_PATH_LEN];     /**< rpc.tls.key: PEM private key. */
	char rpc_tls_keypass[DROCE_PATH_LEN]; /**< rpc.tls.keypass: a file with its passphrase. */
	char rpc_tls_ca[DROCE_PATH_LEN];      /**< rpc.tls.ca: CAs, ':'-separated. */
	char rpc_tls_crl[DROCE_PATH_LEN];     /**< rpc.tls.crl: a PEM CRL file. */
	uint16_t nb_ports;            /**< Ports configured. */
	struct droce_port_conf port[DROCE_MAX_PORTS]; /**< port.N.*. */
	uint16_t nb_rx;               /**< Receiver sections configured. */
	struct droce_rx_conf rx[DROCE_MAX_RX_CONF]; /**< rx.N.*. */
	uint16_t nb_entries;          /**< Keys given. */
	struct droce_conf_entry entry[DROCE_CONF_MAX_ENTRIES]; /**< As given. */
};

/**
 * Fill @p conf with the defaults (one worker, busy polling, no ports).
 */
void droce_conf_defaults(struct droce_conf *conf);

/**
 * Load a configuration: defaults, then the file, then the overrides.
 *
 * @param conf
 *   Filled on success.
 * @param file
 *   INI file, or NULL for none.
 * @param overrides
 *   `key=value` strings; later ones win over earlier ones and the file.
 * @param nb_overrides
 *   Number of @p overrides.
 * @param err
 *   Receives the message on failure.
 * @param errlen
 *   Size of @p err.
 * @return
 *   0 on success; -ENOENT (file unreadable), -EINVAL (bad syntax, unknown
 *   key, bad value), -E2BIG (too many keys).
 */
int droce_conf_load(struct droce_conf *conf, const char *file,
		    char *const overrides[], int nb_overrides,
		    char *err, size_t errlen);

/**
 * Where @p key was given ("file:line", "command line"), or "default".
 */
const char *droce_conf_origin(const struct droce_conf *conf, const char *key);

/**
 * Print every known key with its meaning and default, for --help.
 */
void droce_conf_print_keys(FILE *out);

/** Role of an lcore. */
enum droce_lcore_role {
	DROCE_LCORE_UNUSED = 0,
	DROCE_LCORE_CONTROL,  /**< The main lcore. */
	DROCE_LCORE_WORKER,   /**< Polls RX queues. */
};

/** What droce runs on each lcore, after the EAL started. */
struct droce_lcore_layout {
	unsigned int control_lcore;  /**< Main lcore id. */
	uint32_t nb_workers;         /**< Worker lcores. */
	/** lcore id of worker i (in group order). */
	uint16_t worker_lcore[RTE_MAX_LCORE];
	/** Group and index in its group of worker i. */
	uint16_t worker_group[RTE_MAX_LCORE];
	uint16_t worker_index[RTE_MAX_LCORE]; /**< Index within its group. */
};

/** Size of the buffer droce_lcores_eal_arg() needs at most. */
#define DROCE_LCORES_ARG_LEN 8192

/**
 * Build the EAL `--lcores` value that puts the control lcore (lcore 0) on
 * control.cpu and each worker on its group's cpu; unpinned workers float
 * over the cpus the process may use.
 *
 * @param conf
 *   Configuration.
 * @param buf
 *   Receives the value, e.g. "0@0,1@1,2@(0-3)".
 * @param len
 *   Size of @p buf.
 * @param err
 *   Receives a message on failure.
 * @param errlen
 *   Size of @p err.
 * @return
 *   0, or -EINVAL (a cpu the process may not use, too many lcores).
 */
int droce_lcores_eal_arg(const struct droce_conf *conf, char *buf, size_t len,
			 char *err, size_t errlen);

/**
 * Find the lcore option (-l, -c, --lcores) among EAL arguments.
 *
 * @return
 *   The option as given ("-l 0-3"), written to @p buf, or NULL if absent.
 */
const char *droce_lcores_find_eal_option(int argc, char *const argv[],
					 char *buf, size_t len);

/** The EAL as an application starts it: see droce_eal_start(). */
struct droce_eal_start {
	char given[256];                  /**< the lcore option the user gave */
	char lcores[DROCE_LCORES_ARG_LEN];/**< the --lcores droce derived */
	const char *lcore_option;         /**< `given`, or NULL when derived */
	char **argv;                      /**< what rte_eal_init() got */
	int argc;
};

/**
 * Start the EAL with an application's EAL arguments (@p argv up to
 * @p argc, the "--" excluded), adding `--lcores` from @p conf when the user
 * gave none of -l, -c, --lcores.
 *
 * @return
 *   0; 2 with the reason in @p err when the configuration cannot give the
 *   lcores; 1 when rte_eal_init() fails (@p err says why).
 */
int droce_eal_start(struct droce_eal_start *st, const struct droce_conf *conf, int argc,
		    char **argv, char *err, size_t errlen);

/** rte_eal_cleanup(), and free what droce_eal_start() allocated. */
void droce_eal_stop(struct droce_eal_start *st);

/**
 * After rte_eal_init(): map workers to lcores and check that the lcores the
 * EAL runs agree with the configuration (count, pinning, control cpu).
 *
 * @param conf
 *   Configuration.
 * @param eal_option
 *   The lcore option the user gave, for the message (NULL: droce built it).
 * @param layout
 *   Filled on success.
 * @param err
 *   Receives a message naming both sides on disagreement.
 * @param errlen
 *   Size of @p err.
 * @return
 *   0, or -EINVAL.
 */
int droce_lcores_layout(const struct droce_conf *conf, const char *eal_option,
			struct droce_lcore_layout *layout,
			char *err, size_t errlen);

/**
 * The layout of a stack run by the calling thread alone, in an EAL that
 * someone else started: the thread is the control lcore (an EAL lcore, or
 * a thread given an lcore id by rte_thread_register()) and polls every
 * worker itself, as worker.inline says; no EAL lcore is taken.
 *
 * @param conf
 *   Configuration; worker.inline must be yes.
 * @param layout
 *   Filled on success: every worker on the calling thread's lcore.
 * @param err
 *   Receives the reason on failure.
 * @param errlen
 *   Size of @p err.
 * @return
 *   0, or -EINVAL (worker.inline off, or the thread has no lcore id).
 */
int droce_lcores_layout_here(const struct droce_conf *conf, struct droce_lcore_layout *layout,
			     char *err, size_t errlen);

/**
 * Append printf-style text to @p buf, at @p *used. Text that does not fit
 * is cut and the buffer then ends in "...", so that a reader sees it was
 * cut; later calls add nothing.
 *
 * @return
 *   0, or -ENOSPC once the text was cut.
 */
int droce_str_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Log type of droce's core library (config, lcores). */
extern int droce_core_logtype;

#ifdef __cplusplus
}
#endif

#endif /* DROCE_CORE_H */
