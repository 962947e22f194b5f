/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Port setup for any ethdev: find or probe the device, check what it
 * allows against the configuration, then configure RX queues (RSS where
 * the PMD has it), one TX queue per lcore, the mempool and the event mode.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_power_pmd_mgmt.h>
#include <rte_string_fns.h>

#include "net_private.h"

/* Room for the largest frame the MTU allows: Ethernet, two VLAN tags. */
#define FRAME_OVERHEAD (RTE_ETHER_HDR_LEN + 2 * 4 + RTE_ETHER_CRC_LEN)

/* Why a driver failed, from its negative return. Many return -1 for any
 * failure, which rte_strerror() would read as EPERM, "Operation not
 * permitted": that is no reason at all.
 */
static const char *
driver_reason(int ret)
{
	return ret == -1 ? "the driver gave no reason" : rte_strerror(-ret);
}

static void
list_ethdevs(char *buf, size_t len)
{
	uint16_t pid;
	size_t used = 0;

	buf[0] = '\0';
	RTE_ETH_FOREACH_DEV(pid) {
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(pid, name) == 0)
			droce_str_append(buf, len, &used, "%s%s", used ? ", " : "",
					 name);
	}
	if (used == 0)
		snprintf(buf, len, "none");
}

/* Why rte_dev_probe() failed. Drivers often return a bare -1 and give
 * their reason only in their log. rte_errno is no help there: the vdev
 * bus leaves EEXIST in it whatever the driver did.
 */
static const char *
probe_reason(int ret)
{
	if (ret == 0)
		return "no ethdev of that name appeared";
	if (ret == -1)
		return "the driver gave no reason; see the driver's message above";
	/* rte_devargs_parse(): no bus recognised the name. */
	if (ret == -EFAULT)
		return "no DPDK bus or driver knows that name";
	return rte_strerror(-ret);
}

/* The ethdev that @device names, probing it first when it is devargs. */
static int
find_ethdev(const char *device, const char *origin, uint16_t *port_id,
	    bool *probed, char *err, size_t errlen)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	char known[256];
	size_t name_len = strcspn(device, ",");
	int ret;

	if (rte_eth_dev_get_port_by_name(device, port_id) == 0)
		return 0;
	if (name_len >= sizeof(name)) {
		snprintf(err, errlen,
			 "%s: port device \"%s\": name longer than %zu characters",
			 origin, device, sizeof(name) - 1);
		return -EINVAL;
	}
	memcpy(name, device, name_len);
	name[name_len] = '\0';
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0) {
		NET_LOG(NOTICE, "%s: ethdev %s exists already; its arguments \"%s\" are not applied again",
			origin, name, device + name_len);
		return 0;
	}
	/* The driver says why it fails on stderr: what droce printed before
	 * goes first, so that a log file keeps the order.
	 */
	fflush(stdout);
	ret = rte_dev_probe(device);
	if (ret == 0 && rte_eth_dev_get_port_by_name(name, port_id) == 0) {
		*probed = true;
		return 0;
	}
	list_ethdevs(known, sizeof(known));
	snprintf(err, errlen,
		 "%s: port device \"%s\": no such ethdev and probing it failed (%s); allowed: an ethdev DPDK knows (now: %s), a PCI address bound to a DPDK driver, or vdev devargs such as net_af_packet0,iface=eth1",
		 origin, device, probe_reason(ret), known);
	return -ENODEV;
}

static uint64_t
rss_hash_functions(const struct rte_eth_dev_info *info)
{
	return info->flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
}

/* af_packet opens every qpair's socket at probe time and the kernel fans
 * traffic out over all of them, configured or not: all must be polled.
 */
static bool
rx_queues_fixed_by_pmd(const struct rte_eth_dev_info *info)
{
	return strcmp(info->driver_name, "net_af_packet") == 0;
}

/* memif pairs a side's RX queues with the rings its peer sends on: one
 * peer sending on more rings than there are RX queues never connects,
 * one sending on fewer has its rings read by several queues (each packet
 * twice). Only the user knows the peer.
 */
static bool
rx_queues_paired_with_peer(const struct rte_eth_dev_info *info)
{
	return strcmp(info->driver_name, "net_memif") == 0;
}

/* What a frame adds to the MTU, as ethdev counts it for the device: the
 * difference of its two limits where it states both, else the Ethernet
 * header and CRC.
 */
static uint32_t
frame_overhead_of(const struct rte_eth_dev_info *info)
{
	if (info->max_mtu != UINT16_MAX && info->max_rx_pktlen > info->max_mtu)
		return info->max_rx_pktlen - info->max_mtu;
	return RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
}

/* The largest MTU the device takes: many drivers state only their
 * largest frame (net_memif: 1518 bytes), which rte_eth_dev_configure()
 * checks the MTU against.
 */
static uint32_t
max_mtu_of(const struct rte_eth_dev_info *info)
{
	uint32_t overhead = frame_overhead_of(info);
	uint32_t by_frame = info->max_rx_pktlen > overhead ? info->max_rx_pktlen - overhead : 0;

	return RTE_MIN((uint32_t)info->max_mtu, by_frame);
}

static int
check_limits(struct net_port *p, const struct rte_eth_dev_info *info,
	     char *err, size_t errlen)
{
	const struct droce_conf *conf = &p->stack->conf;
	const struct droce_port_conf *pc = &conf->port[p->index];
	char key[64];

	snprintf(key, sizeof(key), "port.%u.queues", p->index);
	if (rx_queues_fixed_by_pmd(info) && pc->rx_queues != 0 &&
	    pc->rx_queues != info->max_rx_queues) {
		snprintf(err, errlen,
			 "%s: %s = %u: device %s (%s) spreads traffic over all its %u queues; allowed: 0 or %u (set qpairs=N in its devargs to change it)",
			 droce_conf_origin(conf, key), key, pc->rx_queues,
			 p->name, info->driver_name, info->max_rx_queues,
			 info->max_rx_queues);
		return -EINVAL;
	}
	if (pc->rx_queues > info->max_rx_queues) {
		snprintf(err, errlen,
			 "%s: %s = %u: device %s has at most %u RX queue%s; allowed: 0..%u",
			 droce_conf_origin(conf, key), key, pc->rx_queues,
			 p->name, info->max_rx_queues,
			 info->max_rx_queues == 1 ? "" : "s",
			 info->max_rx_queues);
		return -EINVAL;
	}
	if (p->nb_txq > info->max_tx_queues) {
		snprintf(err, errlen,
			 "port.%u.device %s has at most %u TX queue%s but droce needs %u: one per lcore (the control lcore and %u worker%s, worker.thread.groups at %s)%s",
			 p->index, p->name, info->max_tx_queues,
			 info->max_tx_queues == 1 ? "" : "s", p->nb_txq,
			 p->nb_txq - 1, p->nb_txq == 2 ? "" : "s",
			 droce_conf_origin(conf, "worker.thread.groups"),
			 strncmp(info->driver_name, "net_af_packet", 13) == 0
			 ? "; for net_af_packet add qpairs=N to its devargs" : "");
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "port.%u.mtu", p->index);
	if (pc->mtu < info->min_mtu || pc->mtu > max_mtu_of(info)) {
		snprintf(err, errlen,
			 "%s: %s = %u: device %s allows MTU %u..%u (frames of at most %u bytes, %u of them Ethernet's own)",
			 droce_conf_origin(conf, key), key, pc->mtu, p->name,
			 info->min_mtu, max_mtu_of(info), info->max_rx_pktlen,
			 frame_overhead_of(info));
		return -EINVAL;
	}
	return 0;
}

static void
fill_eth_conf(struct net_port *p, const struct rte_eth_dev_info *info,
	      struct rte_eth_conf *ec)
{
	uint64_t rx_cksum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_RX_OFFLOAD_UDP_CKSUM;

	memset(ec, 0, sizeof(*ec));
	ec->rxmode.mtu = p->mtu;
	if (p->nb_rxq > 1 && rss_hash_functions(info) != 0) {
		ec->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		ec->rx_adv_conf.rss_conf.rss_hf = rss_hash_functions(info);
	}
	ec->rxmode.offloads = info->rx_offload_capa & rx_cksum;
	p->ip_cksum_offload = (ec->rxmode.offloads &
			       RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
	p->l4_cksum_offload = (ec->rxmode.offloads &
			       RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0;
	/* Asked for only: with it lib/rc sends large payloads from the
	 * application's memory, chained behind their headers, but some
	 * drivers leave their vector TX path for every packet.
	 */
	if (p->stack->conf.port[p->index].tx_chains)
		ec->txmode.offloads = info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* No RX scatter: the pool's mbufs hold a whole frame of the MTU
	 * (create_pool()), so a frame never needs a second one; a device
	 * whose frames cannot be that long refuses the MTU itself.
	 */
}

/* One attempt at rte_eth_dev_configure; event mode asks for RX interrupts
 * first, and PMDs without them refuse that config.
 */
static int
try_configure(struct net_port *p, const struct rte_eth_dev_info *info)
{
	struct rte_eth_conf ec;
	int ret;

	fill_eth_conf(p, info, &ec);
	if (!p->stack->conf.busy_poll) {
		ec.intr_conf.rxq = 1;
		ret = rte_eth_dev_configure(p->port_id, p->nb_rxq, p->nb_txq, &ec);
		if (ret == 0) {
			p->rx_intr = true;
			return 0;
		}
		ec.intr_conf.rxq = 0;
	}
	ret = rte_eth_dev_configure(p->port_id, p->nb_rxq, p->nb_txq, &ec);
	if (ret == 0 && !p->stack->conf.busy_poll)
		NET_LOG(INFO, "port %u (%s): no RX interrupts; event mode uses rte_power_pmd_mgmt",
			p->index, p->name);
	return ret;
}

static int
configure(struct net_port *p, const struct rte_eth_dev_info *info,
	  bool rxq_given, char *err, size_t errlen)
{
	int ret = try_configure(p, info);

	/* Some PMDs (net_tap) want as many RX as TX queues; then droce polls
	 * them all, since the PMD spreads traffic over every one.
	 */
	if (ret != 0 && !rxq_given && p->nb_rxq < p->nb_txq &&
	    p->nb_txq <= info->max_rx_queues &&
	    p->nb_txq <= DROCE_MAX_PORT_QUEUES) {
		NET_LOG(INFO, "port %u (%s): configuring %u RX queues (as many as TX queues), as the device wants",
			p->index, p->name, p->nb_txq);
		p->nb_rxq = p->nb_txq;
		ret = try_configure(p, info);
	}
	if (ret != 0)
		snprintf(err, errlen,
			 "port.%u.device %s: rte_eth_dev_configure(%u RX, %u TX queues, MTU %u) failed: %s",
			 p->index, p->name, p->nb_rxq, p->nb_txq, p->mtu,
			 driver_reason(ret));
	return ret;
}

static int
create_pool(struct net_port *p, uint16_t rxd, uint16_t txd, char *err,
	    size_t errlen)
{
	const struct droce_stack *s = p->stack;
	unsigned int lcores = s->layout.nb_workers + 1;
	uint32_t data_room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE,
				     (uint32_t)(RTE_PKTMBUF_HEADROOM + p->mtu +
						FRAME_OVERHEAD));
	/* Every descriptor, every cache and ring, held ARP packets, bursts,
	 * and what a worker's services hold for a while (lib/rx: packets
	 * handed over from another worker, or waiting behind a PSN gap).
	 */
	unsigned int n = p->nb_rxq * rxd + p->nb_txq * txd +
			 lcores * (NET_MBUF_CACHE + 2 * NET_BURST) +
			 s->layout.nb_workers * (NET_RING_SIZE + NET_HELD_PER_WORKER) +
			 NET_ARP_ENTRIES * NET_ARP_PENDING;
	char name[RTE_MEMPOOL_NAMESIZE];

	snprintf(name, sizeof(name), "droce%u_p%u", s->instance, p->index);
	p->pool = rte_pktmbuf_pool_create(name, n, NET_MBUF_CACHE, 0,
					  (uint16_t)data_room,
					  rte_eth_dev_socket_id(p->port_id));
	if (p->pool == NULL) {
		snprintf(err, errlen,
			 "port.%u: cannot create a pool of %u mbufs of %u bytes: %s (give the EAL more memory with -m, or fewer descriptors with port.%u.rxd/txd)",
			 p->index, n, data_room, rte_strerror(rte_errno),
			 p->index);
		return -ENOMEM;
	}
	return 0;
}

static int
setup_queues(struct net_port *p, const struct droce_port_conf *pc,
	     char *err, size_t errlen)
{
	uint16_t rxd = pc->rx_desc, txd = pc->tx_desc;
	int socket = rte_eth_dev_socket_id(p->port_id);
	int ret;

	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &rxd, &txd);
	if (ret != 0) {
		snprintf(err, errlen, "port.%u %s: descriptor counts: %s",
			 p->index, p->name, driver_reason(ret));
		return ret;
	}
	ret = create_pool(p, rxd, txd, err, errlen);
	if (ret != 0)
		return ret;
	for (uint16_t q = 0; q < p->nb_rxq; q++) {
		p->rxq[q].queue = q;
		ret = rte_eth_rx_queue_setup(p->port_id, q, rxd, socket, NULL,
					     p->pool);
		if (ret != 0) {
			snprintf(err, errlen,
				 "port.%u %s: RX queue %u (%u descriptors): %s",
				 p->index, p->name, q, rxd, driver_reason(ret));
			return ret;
		}
	}
	for (uint16_t q = 0; q < p->nb_txq; q++) {
		ret = rte_eth_tx_queue_setup(p->port_id, q, txd, socket, NULL);
		if (ret != 0) {
			snprintf(err, errlen,
				 "port.%u %s: TX queue %u (%u descriptors): %s",
				 p->index, p->name, q, txd, driver_reason(ret));
			return ret;
		}
	}
	return 0;
}

/* port.N.mac on the device, before it starts: from then on it is the
 * device's own, which p->mac takes and droce uses everywhere. A driver
 * that cannot change its address at all (net_pcap, net_ring: no
 * mac_addr_set) is not refusing this one: droce answers for it in
 * software, with the device in promiscuous mode so that its frames come
 * in (a replayed capture, a sensor programmed with that MAC).
 */
static int
set_configured_mac(struct net_port *p, const struct droce_port_conf *pc,
		   char *err, size_t errlen)
{
	struct rte_ether_addr mac = pc->mac; /* the API takes no const */
	struct rte_eth_dev_info info;
	char key[64];
	int ret;

	ret = rte_eth_dev_default_mac_addr_set(p->port_id, &mac);
	if (ret == 0)
		return rte_eth_macaddr_get(p->port_id, &p->mac);
	if (ret == -ENOTSUP) {
		p->mac = pc->mac;
		p->mac_in_software = true;
		NET_LOG(NOTICE, "port %u (%s): the driver cannot set a MAC address; droce answers for " RTE_ETHER_ADDR_PRT_FMT " itself, the device in promiscuous mode",
			p->index, p->name, RTE_ETHER_ADDR_BYTES(&p->mac));
		return 0;
	}
	snprintf(key, sizeof(key), "port.%u.mac", p->index);
	snprintf(err, errlen,
		 "%s: %s = " RTE_ETHER_ADDR_PRT_FMT ": device %s (%s) refused the address: %s; allowed: an address the driver accepts, or no %s (the device's own address)",
		 droce_conf_origin(&p->stack->conf, key), key,
		 RTE_ETHER_ADDR_BYTES(&pc->mac), p->name,
		 rte_eth_dev_info_get(p->port_id, &info) == 0
		 ? info.driver_name : "driver unknown",
		 driver_reason(ret), key);
	return ret;
}

/* The device's MAC, or port.N.mac. Some vdevs (ring, null) report none:
 * they get a random local one.
 */
static int
port_mac(struct net_port *p, const struct droce_port_conf *pc, char *err,
	 size_t errlen)
{
	int ret;

	if (!rte_is_zero_ether_addr(&pc->mac))
		return set_configured_mac(p, pc, err, errlen);
	ret = rte_eth_macaddr_get(p->port_id, &p->mac);
	if (ret != 0 || !rte_is_zero_ether_addr(&p->mac))
		return ret;
	rte_eth_random_addr(p->mac.addr_bytes);
	ret = rte_eth_dev_default_mac_addr_set(p->port_id, &p->mac);
	if (ret != 0 && ret != -ENOTSUP)
		return ret;
	NET_LOG(NOTICE, "port %u (%s) has no MAC address; using " RTE_ETHER_ADDR_PRT_FMT,
		p->index, p->name, RTE_ETHER_ADDR_BYTES(&p->mac));
	return 0;
}

static int
choose_rx_queues(struct net_port *p, const struct droce_port_conf *pc,
		 const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	if (pc->rx_queues != 0)
		p->nb_rxq = pc->rx_queues;
	else if (rx_queues_fixed_by_pmd(info))
		p->nb_rxq = info->max_rx_queues;
	else
		p->nb_rxq = (uint16_t)RTE_MIN(p->stack->layout.nb_workers,
				(uint32_t)RTE_MIN(info->max_rx_queues,
						  DROCE_MAX_PORT_QUEUES));
	if (p->nb_rxq > DROCE_MAX_PORT_QUEUES) {
		snprintf(err, errlen,
			 "port.%u.device %s has %u RX queues; droce polls at most %u per port",
			 p->index, p->name, p->nb_rxq, DROCE_MAX_PORT_QUEUES);
		return -EINVAL;
	}
	if (rx_queues_paired_with_peer(info) && p->nb_rxq != p->nb_txq)
		NET_LOG(WARNING, "port %u (%s): %u RX queue%s, %u TX: memif reads the rings its peer sends on with the RX queues, so they must be as many (another droce sends on one per lcore: give it and this side port.%u.queues = %u; a peer with one ring, as droce-sensor: 1)",
			p->index, p->name, p->nb_rxq, p->nb_rxq == 1 ? "" : "s", p->nb_txq,
			p->index, p->nb_txq);
	else if (p->nb_rxq > 1 && rss_hash_functions(info) == 0 &&
		 !rx_queues_fixed_by_pmd(info))
		NET_LOG(WARNING, "port %u (%s): %u RX queues but the device has no RSS; queues past 0 get only what the PMD spreads itself",
			p->index, p->name, p->nb_rxq);
	return 0;
}

static bool
ethdev_in_use(const struct droce_stack *s, uint16_t index, uint16_t port_id)
{
	for (uint16_t i = 0; i < index; i++)
		if (s->port[i]->port_id == port_id)
			return true;
	return false;
}

static int
port_create(struct droce_stack *s, uint16_t index, char *err, size_t errlen)
{
	const struct droce_port_conf *pc = &s->conf.port[index];
	char key[64];
	struct rte_eth_dev_info info;
	struct net_port *p;
	bool probed = false;
	uint16_t port_id;
	int ret;

	snprintf(key, sizeof(key), "port.%u.device", index);
	ret = find_ethdev(pc->device, droce_conf_origin(&s->conf, key),
			  &port_id, &probed, err, errlen);
	if (ret != 0)
		return ret;
	if (ethdev_in_use(s, index, port_id)) {
		snprintf(err, errlen,
			 "%s: %s = \"%s\": that ethdev is already an earlier port; allowed: each device once",
			 droce_conf_origin(&s->conf, key), key, pc->device);
		return -EINVAL;
	}
	p = rte_zmalloc_socket("droce_port", sizeof(*p), RTE_CACHE_LINE_SIZE,
			       rte_eth_dev_socket_id(port_id));
	if (p == NULL) {
		snprintf(err, errlen, "port.%u: out of memory", index);
		return -ENOMEM;
	}
	s->port[index] = p;
	p->stack = s;
	p->index = index;
	p->port_id = port_id;
	p->probed = probed;
	s->port_of_ethdev[port_id] = (int16_t)index;
	rte_eth_dev_get_name_by_port(port_id, p->name);
	p->addr = pc->addr;
	p->netmask = rte_cpu_to_be_32(pc->prefix_len == 32 ? UINT32_MAX
				      : ~(UINT32_MAX >> pc->prefix_len));
	/* /31 and /32 have no broadcast address (RFC 3021). */
	p->broadcast = pc->prefix_len >= 31 ? 0 : (p->addr | ~p->netmask);
	p->gateway = pc->gateway;
	p->mtu = pc->mtu;
	p->nb_txq = (uint16_t)(s->layout.nb_workers + 1);

	ret = rte_eth_dev_info_get(port_id, &info);
	if (ret != 0) {
		snprintf(err, errlen, "port.%u %s: rte_eth_dev_info_get: %s",
			 index, p->name, rte_strerror(-ret));
		return ret;
	}
	ret = check_limits(p, &info, err, errlen);
	if (ret != 0)
		return ret;
	ret = choose_rx_queues(p, pc, &info, err, errlen);
	if (ret != 0)
		return ret;
	ret = configure(p, &info, pc->rx_queues != 0, err, errlen);
	if (ret == 0)
		ret = setup_queues(p, pc, err, errlen);
	if (ret == 0)
		ret = port_mac(p, pc, err, errlen);
	if (ret == 0)
		ret = net_arp_init(p);
	if (ret != 0 && err[0] == '\0')
		snprintf(err, errlen, "port.%u %s: %s", index, p->name,
			 rte_strerror(-ret));
	return ret;
}

int
net_port_create(struct droce_stack *s, uint16_t index, char *err,
		size_t errlen)
{
	int ret = port_create(s, index, err, errlen);

	/* The caller reports @err on stderr, after what went to stdout. */
	if (ret != 0)
		fflush(stdout);
	return ret;
}

/* Event mode without RX interrupts: DPDK's power management callbacks. */
static int
enable_power_mgmt(struct net_port *p)
{
	for (uint16_t q = 0; q < p->nb_rxq; q++) {
		unsigned int lcore = p->rxq[q].lcore_id;
		int ret;

		ret = rte_power_ethdev_pmgmt_queue_enable(lcore, p->port_id, q,
						      RTE_POWER_MGMT_TYPE_MONITOR);
		if (ret != 0)
			ret = rte_power_ethdev_pmgmt_queue_enable(lcore, p->port_id,
					q, RTE_POWER_MGMT_TYPE_PAUSE);
		if (ret != 0) {
			NET_LOG_ERR("port %u (%s) queue %u: rte_power_pmd_mgmt on lcore %u: %s",
				p->index, p->name, q, lcore, rte_strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static void
disable_power_mgmt(struct net_port *p)
{
	for (uint16_t q = 0; q < p->nb_rxq; q++)
		rte_power_ethdev_pmgmt_queue_disable(p->rxq[q].lcore_id,
						 p->port_id, q);
}

/* Some PMDs (net_af_packet) accept intr_conf.rxq but have no interrupt to
 * give; only a started port tells. ethdev logs an error for such a queue;
 * droce says next what it makes of it (the log level is ethdev's, shared
 * with every thread, so it is not turned down meanwhile).
 */
static bool
rx_intr_usable(const struct net_port *p)
{
	for (uint16_t q = 0; q < p->nb_rxq; q++)
		if (rte_eth_dev_rx_intr_ctl_q_get_fd(p->port_id, q) < 0)
			return false;
	return true;
}

static int
start_device(struct net_port *p)
{
	bool power_mgmt = !p->stack->conf.busy_poll && !p->rx_intr;
	int ret;

	if (power_mgmt) {
		ret = enable_power_mgmt(p);
		if (ret != 0)
			return ret;
	}
	ret = rte_eth_dev_start(p->port_id);
	if (ret != 0) {
		NET_LOG_ERR("port %u (%s): rte_eth_dev_start: %s", p->index,
			p->name, driver_reason(ret));
		if (power_mgmt)
			disable_power_mgmt(p);
		return ret;
	}
	p->started = true;
	if (p->mac_in_software) {
		ret = rte_eth_promiscuous_enable(p->port_id);
		if (ret != 0 && ret != -ENOTSUP)
			NET_LOG(WARNING, "port %u (%s): promiscuous mode for port.%u.mac: %s; frames to that MAC may not come in",
				p->index, p->name, p->index, driver_reason(ret));
	}
	return 0;
}

int
net_port_start(struct net_port *p)
{
	int ret = start_device(p);

	if (ret == 0 && p->rx_intr && !rx_intr_usable(p)) {
		NET_LOG(INFO, "port %u (%s): no usable RX interrupts (the error above is ethdev's answer to the question); rte_power_pmd_mgmt paces the workers instead",
			p->index, p->name);
		ret = net_port_use_power_mgmt(p);
	}
	if (ret != 0)
		return ret;
	NET_LOG(INFO, "port %u (%s): " RTE_ETHER_ADDR_PRT_FMT ", %u RX / %u TX queues, MTU %u, %s",
		p->index, p->name, RTE_ETHER_ADDR_BYTES(&p->mac), p->nb_rxq,
		p->nb_txq, p->mtu,
		p->stack->conf.busy_poll ? "busy polling"
		: p->rx_intr ? "RX interrupts" : "rte_power_pmd_mgmt");
	return 0;
}

int
net_port_use_power_mgmt(struct net_port *p)
{
	bool was_started = p->started;

	if (!p->rx_intr)
		return 0;
	if (was_started) {
		rte_eth_dev_stop(p->port_id);
		p->started = false;
	}
	p->rx_intr = false;
	return was_started ? start_device(p) : 0;
}

void
net_port_stop(struct net_port *p)
{
	if (!p->started)
		return;
	rte_eth_dev_stop(p->port_id);
	if (!p->stack->conf.busy_poll && !p->rx_intr)
		disable_power_mgmt(p);
	p->started = false;
}

void
net_port_free(struct net_port *p)
{
	if (p == NULL)
		return;
	net_port_stop(p);
	net_arp_free(p);
	/* A device the user brought (--vdev, PCI) stays for the user. */
	if (p->probed) {
		struct rte_eth_dev_info info;
		int ret = rte_eth_dev_info_get(p->port_id, &info);

		rte_eth_dev_close(p->port_id);
		if (ret == 0 && info.device != NULL)
			rte_dev_remove(info.device);
	}
	rte_mempool_free(p->pool);
	rte_free(p);
}
