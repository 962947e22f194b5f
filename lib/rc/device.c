/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * The device (one port of a stack), protection domains and memory
 * regions. A region's lkey and rkey are one key: a random byte, its slot
 * in the device's table and a generation byte, so that a key names at most
 * one live region, a stale key names none, and a peer cannot guess the key
 * of a region it was not told of from the keys it was told of.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_random.h>

#include "droce_gpu.h"
#include "droce_net.h"
#include "rc_private.h"

RTE_LOG_REGISTER(droce_rc_logtype, droce.rc, INFO);

struct droce_rc_device *
droce_rc_open(struct droce_stack *stack, uint16_t port, char *err, size_t errlen)
{
	return droce_rc_open_conf(stack, port, NULL, err, errlen);
}

/* Drivers that copy each frame with the CPU in their TX burst: any
 * memory will do for them. Other vdevs (bonding, failsafe, netvsc) hand
 * frames to devices that read by DMA.
 */
static const char *const cpu_copy_drivers[] = {
	"net_memif", "net_af_packet", "net_pcap", "net_ring", "net_null", "net_tap",
};

/* Whether the port was set up to take chained packets (port.N.tx.chains),
 * and whether its driver reads them with the CPU.
 */
static void
tx_chains_probe(struct droce_rc_device *dev)
{
	uint16_t port_id = droce_port_ethdev(dev->stack, dev->port);
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;

	if (rte_eth_dev_conf_get(port_id, &conf) != 0 || rte_eth_dev_info_get(port_id, &info) != 0)
		return;
	dev->tx_chains = (conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
	for (unsigned int i = 0; i < RTE_DIM(cpu_copy_drivers); i++)
		dev->tx_by_cpu |= info.driver_name != NULL &&
				  strcmp(info.driver_name, cpu_copy_drivers[i]) == 0;
	atomic_store_explicit(&dev->zero_copy, dev->tx_chains, memory_order_relaxed);
}

int
droce_rc_set_zero_copy(struct droce_rc_device *dev, bool on)
{
	if (on && !dev->tx_chains)
		return RC_REFUSE(ENOTSUP, "zero copy: port %u does not take chained packets (RTE_ETH_TX_OFFLOAD_MULTI_SEGS)",
				 dev->port);
	atomic_store_explicit(&dev->zero_copy, on, memory_order_relaxed);
	return 0;
}

bool
droce_rc_zero_copy(const struct droce_rc_device *dev)
{
	return atomic_load_explicit(&dev->zero_copy, memory_order_relaxed);
}

struct droce_rc_device *
droce_rc_open_conf(struct droce_stack *stack, uint16_t port, const struct droce_rc_conf *conf,
		   char *err, size_t errlen)
{
	static const struct droce_rc_conf defaults = { .owners = DROCE_RC_OWNERS_CONTROL };
	struct droce_rc_device *dev;

	if (conf == NULL)
		conf = &defaults;
	if (stack == NULL || port >= droce_stack_nb_ports(stack)) {
		snprintf(err, errlen, "RC device: no port %u (the stack has %u)", port,
			 stack == NULL ? 0 : droce_stack_nb_ports(stack));
		return NULL;
	}
	if (conf->owners != DROCE_RC_OWNERS_CONTROL && conf->owners != DROCE_RC_OWNERS_WORKERS) {
		snprintf(err, errlen, "RC device: owners %d; allowed: DROCE_RC_OWNERS_CONTROL, DROCE_RC_OWNERS_WORKERS",
			 (int)conf->owners);
		return NULL;
	}
	if (conf->owners == DROCE_RC_OWNERS_WORKERS && !droce_stack_busy_poll(stack)) {
		snprintf(err, errlen, "RC device: QPs on the workers need busy-polling workers (worker.poll.enable=yes): a sleeping worker would not see the work posted to it");
		return NULL;
	}
	dev = rte_zmalloc("droce_rc_device", sizeof(*dev), 0);
	if (dev != NULL) {
		dev->mr = rte_calloc("droce_rc_mr", RC_MAX_MR, sizeof(*dev->mr), 0);
		dev->mr_gen = rte_calloc("droce_rc_mr_gen", RC_MAX_MR, 1, 0);
		dev->qp = rte_calloc("droce_rc_qp", RC_MAX_QP, sizeof(*dev->qp), 0);
		dev->qp_gen = rte_calloc("droce_rc_qp_gen", RC_MAX_QP, 1, 0);
	}
	if (dev == NULL || dev->mr == NULL || dev->mr_gen == NULL || dev->qp == NULL ||
	    dev->qp_gen == NULL) {
		snprintf(err, errlen, "RC device: out of memory (give the EAL more with -m)");
		if (dev != NULL) {
			rte_free(dev->mr);
			rte_free(dev->mr_gen);
			rte_free(dev->qp);
			rte_free(dev->qp_gen);
		}
		rte_free(dev);
		return NULL;
	}
	/* QP numbers start somewhere new in each process: a peer's CM keeps
	 * the last connection of a QP number in timewait for a while, and
	 * would refuse a restarted process's first QP as stale (REJ 10).
	 */
	for (uint32_t slot = 0; slot < RC_MAX_QP; slot++)
		dev->qp_gen[slot] = (uint8_t)rte_rand();
	dev->qp_hint = 1 + (uint32_t)rte_rand_max(RC_MAX_QP - 1);
	dev->stack = stack;
	dev->port = port;
	dev->owners = conf->owners;
	dev->ip = droce_port_addr(stack, port);
	dev->ip_mtu = droce_port_mtu(stack, port);
	tx_chains_probe(dev);
	if (rc_wire_open(dev, err, errlen) != 0) {
		rc_wire_close(dev);
		rte_free(dev->mr);
		rte_free(dev->mr_gen);
		rte_free(dev->qp);
		rte_free(dev->qp_gen);
		rte_free(dev);
		return NULL;
	}
	dev->attr = (struct droce_rc_device_attr){
		.max_qp = RC_MAX_QP - 1, .max_qp_wr = RC_MAX_QP_WR, .max_sge = RC_MAX_SGE,
		.max_cqe = RC_MAX_CQE, .max_mr = RC_MAX_MR - 1, .max_mr_size = RC_MAX_MR_SIZE,
		.max_msg_size = RC_MAX_MSG_SIZE, .max_inline_data = RC_MAX_INLINE,
		.max_qp_rd_atom = RC_MAX_RD_ATOMIC, .max_qp_init_rd_atom = RC_MAX_RD_ATOMIC,
	};
	return dev;
}

int
droce_rc_close(struct droce_rc_device *dev)
{
	if (dev == NULL)
		return 0;
	if (droce_stack_started(dev->stack))
		return RC_REFUSE(EBUSY, "close: the stack still runs; stop it first (droce_stack_stop): its lcores run the device");
	if (dev->nb_qp != 0 || dev->nb_cq != 0 || dev->nb_mr != 0 || dev->nb_pd != 0)
		return RC_REFUSE(EBUSY, "close: the device still has %u QPs, %u CQs, %u MRs, %u PDs",
				 dev->nb_qp, dev->nb_cq, dev->nb_mr, dev->nb_pd);
	rc_wire_close(dev);
	rte_free(dev->mr);
	rte_free(dev->mr_gen);
	rte_free(dev->qp);
	rte_free(dev->qp_gen);
	rte_free(dev);
	return 0;
}

/* Each owner's counters added up: read while their lcores write them, so
 * a snapshot, each counter whole (aligned 64-bit loads).
 */
void
droce_rc_query_stats(const struct droce_rc_device *dev, struct droce_rc_stats *stats)
{
	enum { N = sizeof(*stats) / sizeof(uint64_t) };
	uint64_t *sum = (uint64_t *)stats;

	RTE_BUILD_BUG_ON(sizeof(*stats) % sizeof(uint64_t) != 0);
	memset(stats, 0, sizeof(*stats));
	for (uint32_t o = 0; o < dev->nb_owners; o++) {
		const uint64_t *c = (const uint64_t *)&dev->owner[o].stats;

		for (unsigned int i = 0; i < N; i++)
			sum[i] += __atomic_load_n(&c[i], __ATOMIC_RELAXED);
	}
	stats->rx_ring_full += __atomic_load_n(&dev->rx_ring_full, __ATOMIC_RELAXED);
	stats->wrong_peer += __atomic_load_n(&dev->rx_wrong_port, __ATOMIC_RELAXED);
}

void
droce_rc_query_objects(const struct droce_rc_device *dev, struct droce_rc_objects *objs)
{
	objs->qps = __atomic_load_n(&dev->nb_qp, __ATOMIC_RELAXED);
	objs->cqs = __atomic_load_n(&dev->nb_cq, __ATOMIC_RELAXED);
	objs->mrs = __atomic_load_n(&dev->nb_mr, __ATOMIC_RELAXED);
	objs->pds = __atomic_load_n(&dev->nb_pd, __ATOMIC_RELAXED);
}

void
droce_rc_query_device(const struct droce_rc_device *dev, struct droce_rc_device_attr *attr)
{
	*attr = dev->attr;
}

void
droce_gid_from_ipv4(uint32_t ip4, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &ip4, 4);
}

int
droce_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip4)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)) != 0)
		return -EINVAL;
	memcpy(ip4, gid + 12, 4);
	return 0;
}

void
droce_rc_query_gid(const struct droce_rc_device *dev, uint8_t gid[16])
{
	droce_gid_from_ipv4(dev->ip, gid);
}

/* ---- protection domains ---------------------------------------------------- */

struct droce_pd *
droce_alloc_pd(struct droce_rc_device *dev)
{
	struct droce_pd *pd = rte_zmalloc("droce_pd", sizeof(*pd), 0);

	if (pd == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	pd->dev = dev;
	dev->nb_pd++;
	return pd;
}

int
droce_dealloc_pd(struct droce_pd *pd)
{
	if (pd->users != 0)
		return RC_REFUSE(EBUSY, "dealloc_pd: %u MRs and QPs still use the PD",
				 pd->users);
	pd->dev->nb_pd--;
	rte_free(pd);
	return 0;
}

/* ---- memory regions -------------------------------------------------------- */

#define MR_ACCESS_ALL (DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | \
		       DROCE_ACCESS_REMOTE_READ | DROCE_ACCESS_REMOTE_ATOMIC | \
		       DROCE_ACCESS_ZERO_BASED)

_Static_assert(RC_MAX_MR == 1u << RC_MR_SLOT_BITS && RC_MR_SLOT_BITS + RC_MR_GEN_BITS <= 24,
	       "a key is a random byte, the slot and the generation");

static uint32_t
mr_key(uint32_t slot, uint8_t gen)
{
	return (uint32_t)rte_rand() << 24 | slot << RC_MR_GEN_BITS | gen;
}

static uint32_t
mr_slot(uint32_t key)
{
	return key >> RC_MR_GEN_BITS & (RC_MAX_MR - 1);
}

struct droce_mr *
rc_mr_of_key(const struct droce_rc_device *dev, uint32_t key)
{
	struct droce_mr *mr = __atomic_load_n(&dev->mr[mr_slot(key)], __ATOMIC_ACQUIRE);

	return mr != NULL && mr->lkey == key ? mr : NULL;
}

struct droce_mr *
rc_mr_check(const struct droce_pd *pd, uint32_t key, uint64_t addr, uint64_t len,
	    int access)
{
	struct droce_mr *mr = rc_mr_of_key(pd->dev, key);

	if (mr == NULL || mr->pd != pd || (mr->access & access) != access)
		return NULL;
	/* Inside [iova, iova + length), without wrapping. */
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return NULL;
	return mr;
}

static int
mr_args_check(const struct droce_pd *pd, const void *addr, size_t length, int access)
{
	if (addr == NULL)
		return RC_REFUSE(EINVAL, "reg_mr: no address");
	if (length == 0 || length > pd->dev->attr.max_mr_size)
		return RC_REFUSE(EINVAL, "reg_mr: length %zu; allowed: 1..%" PRIu64, length,
				 pd->dev->attr.max_mr_size);
	if (access & ~MR_ACCESS_ALL)
		return RC_REFUSE(EINVAL, "reg_mr: unknown access bits 0x%x", access & ~MR_ACCESS_ALL);
	/* As ibverbs: a region others write into, this side writes too. */
	if ((access & (DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & DROCE_ACCESS_LOCAL_WRITE))
		return RC_REFUSE(EINVAL, "reg_mr: remote write or atomic access needs local write too");
	return 0;
}

/* The mbuf library calls this when a count reaches 0, which a region's
 * count does not (RC_MR_TX_BASE): deregistration frees the region.
 */
static void
mr_tx_done(void *addr __rte_unused, void *opaque __rte_unused)
{
}

/* Whether the port can send payloads straight from host memory at
 * @p addr: a driver that copies with the CPU reads any; a device that
 * reads by DMA needs memory DPDK knows, at IOVAs equal to its addresses.
 */
static bool
mr_tx_from(const struct droce_rc_device *dev, const void *addr, size_t length)
{
	const struct rte_memseg_list *msl = rte_mem_virt2memseg_list(addr);

	if (!dev->tx_chains)
		return false;
	if (dev->tx_by_cpu)
		return true;
	/* External memory (rte_extmem_register) may not be mapped for DMA. */
	return rte_eal_iova_mode() == RTE_IOVA_VA && msl != NULL && !msl->external &&
	       rte_mem_virt2memseg_list((const uint8_t *)addr + length - 1) == msl;
}

static struct droce_mr *
mr_add(struct droce_pd *pd, void *addr, size_t length, uint64_t iova, int access, bool host)
{
	struct droce_rc_device *dev = pd->dev;
	struct rc_mr *rmr;
	struct droce_mr *mr;
	uint32_t slot;
	int ret = mr_args_check(pd, addr, length, access);

	if (ret == 0 && (access & DROCE_ACCESS_ZERO_BASED))
		iova = 0;
	if (ret == 0 && iova + length < iova)
		ret = RC_REFUSE(EINVAL, "reg_mr: iova 0x%" PRIx64 " + length %zu wraps", iova,
				length);
	if (ret == 0 && dev->nb_mr == dev->attr.max_mr)
		ret = RC_REFUSE(ENOMEM, "reg_mr: the device holds its %u regions already",
				dev->attr.max_mr);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	rmr = rte_zmalloc("droce_mr", sizeof(*rmr), 0);
	if (rmr == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	mr = &rmr->mr;
	rmr->tx_shinfo.free_cb = mr_tx_done;
	rte_mbuf_ext_refcnt_set(&rmr->tx_shinfo, RC_MR_TX_BASE);
	rmr->tx_from = host && mr_tx_from(dev, addr, length);
	/* Slot 0 is never used: no key is 0..255. */
	for (slot = dev->mr_hint; dev->mr[slot] != NULL || slot == 0;)
		slot = (slot + 1) % RC_MAX_MR;
	dev->mr_hint = (slot + 1) % RC_MAX_MR;
	if (++dev->mr_gen[slot] == 0)
		dev->mr_gen[slot] = 1;
	*mr = (struct droce_mr){
		.dev = dev, .pd = pd, .addr = addr, .length = length, .iova = iova,
		.lkey = mr_key(slot, dev->mr_gen[slot]), .access = access,
	};
	mr->rkey = mr->lkey;
	dev->mr[slot] = mr;
	dev->nb_mr++;
	pd->users++;
	return mr;
}

struct droce_mr *
droce_reg_mr(struct droce_pd *pd, void *addr, size_t length, int access)
{
	return mr_add(pd, addr, length, (uint64_t)(uintptr_t)addr, access, true);
}

struct droce_mr *
droce_reg_mr_iova(struct droce_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return mr_add(pd, addr, length, iova, access, true);
}

struct droce_mr *
droce_reg_mr_gpu(struct droce_pd *pd, const struct droce_gpu_buf *buf, size_t offset,
		 size_t length, int access)
{
	if (buf->cpu == NULL) {
		RC_LOG(ERR, "reg_mr_gpu: GPU device %d gives this buffer no CPU mapping (the cuda driver needs GDRCopy)",
		       buf->dev_id);
		rte_errno = ENOTSUP;
		return NULL;
	}
	if (offset > buf->size || length > buf->size - offset) {
		RC_LOG(ERR, "reg_mr_gpu: %zu bytes at offset %zu are not inside the buffer's %zu",
		       length, offset, buf->size);
		rte_errno = ERANGE;
		return NULL;
	}
	return mr_add(pd, (uint8_t *)buf->cpu + offset, length,
		      (uint64_t)(uintptr_t)buf->gpu + offset, access, false);
}

/* How long deregistration waits, off the stack's lcores, for packets
 * sent from a region.
 */
#define MR_TX_WAIT_MS 1000

/* Mbufs that still send from @p rmr: 0 when none. */
static uint16_t
mr_sending(const struct rc_mr *rmr)
{
	return rte_mbuf_ext_refcnt_read(&rmr->tx_shinfo) - RC_MR_TX_BASE;
}

/* The owner that runs on the calling lcore, or NULL. */
static struct rc_owner *
owner_here(struct droce_rc_device *dev)
{
	for (uint32_t o = 0; o < dev->nb_owners; o++)
		if (dev->owner[o].lcore_id == rte_lcore_id() && dev->owner[o].ctx != NULL)
			return &dev->owner[o];
	return NULL;
}

int
droce_dereg_mr(struct droce_mr *mr)
{
	struct droce_rc_device *dev = mr->dev;
	struct rc_mr *rmr = rc_mr_of(mr);
	struct rc_owner *here;
	uint64_t deadline;

	if (!rmr->unpublished) {
		__atomic_store_n(&dev->mr[mr_slot(mr->lkey)], NULL, __ATOMIC_RELEASE);
		rmr->unpublished = true;
		/* An owner may have found the region just before and be
		 * copying into it: once its round is over, no one touches the
		 * region or this but the packets it sends from.
		 */
		droce_stack_quiesce(dev->stack);
	}
	/* Sent packets hold the region until the port lets go of them: a
	 * vdev in its TX burst, a NIC when its queue's lcore has it free
	 * them. Each owner is asked (an owner calling frees its own now); a
	 * thread of no lcore waits a while, an lcore does not: its round
	 * must go on.
	 */
	here = owner_here(dev);
	if (here != NULL)
		droce_tx_reclaim(here->ctx);
	if (mr_sending(rmr) != 0) {
		atomic_fetch_add_explicit(&dev->tx_reclaim, 1, memory_order_relaxed);
		deadline = rte_lcore_id() != LCORE_ID_ANY ? 0
			   : rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * MR_TX_WAIT_MS;
		while (mr_sending(rmr) != 0 && rte_get_timer_cycles() < deadline)
			rte_delay_us_sleep(100);
	}
	if (mr_sending(rmr) != 0) {
		/* Once a region: a caller that tries again until it lets go
		 * would fill the log.
		 */
		if (!rmr->busy_told)
			RC_LOG(ERR, "dereg_mr: port %u still holds %u mbufs sent from the region of lkey 0x%x at %p (its driver has not freed them); its keys are gone, call again later",
			       dev->port, mr_sending(rmr), mr->lkey, mr->addr);
		rmr->busy_told = true;
		return -EBUSY;
	}
	/* The freeing thread's decrement (acquire-release) before the
	 * caller's reuse of the memory.
	 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	dev->nb_mr--;
	mr->pd->users--;
	rte_free(rmr);
	return 0;
}
