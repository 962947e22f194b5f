/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Configuration: file, overrides, typed values, and every error path. */

#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "droce_core.h"

static struct droce_conf conf;
static char err[DROCE_ERR_LEN];
static char path[64];

/* Write @text to a fresh temporary file; its name goes to path. */
static const char *
write_file(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/droce-test-conf-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static int
load(const char *text, char *const *overrides, int n)
{
	const char *file = text != NULL ? write_file(text) : NULL;
	int ret;

	err[0] = '\0';
	ret = droce_conf_load(&conf, file, overrides, n, err, sizeof(err));
	if (file != NULL)
		unlink(file);
	return ret;
}

/* Loading fails and the message holds every one of the needles. */
static void
expect_error_v(const char *text, char *const *overrides, int n, int code,
	       const char *const *needles)
{
	int ret = load(text, overrides, n);

	if (ret != code)
		fail_msg("expected %d, got %d (\"%s\") for:\n%s", code, ret,
			 err, text != NULL ? text : "(no file)");
	for (; *needles != NULL; needles++)
		if (strstr(err, *needles) == NULL)
			fail_msg("message \"%s\" lacks \"%s\"", err, *needles);
}

#define EXPECT_ERROR(text, ...) do { \
	const char *const needles_[] = { __VA_ARGS__, NULL }; \
	expect_error_v(text, NULL, 0, -EINVAL, needles_); \
} while (0)

#define EXPECT_OVERRIDE_ERROR(arg, ...) do { \
	char *const args_[] = { (char *)(arg) }; \
	const char *const needles_[] = { __VA_ARGS__, NULL }; \
	expect_error_v(NULL, args_, 1, -EINVAL, needles_); \
} while (0)

static rte_be32_t
ip(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

static void
test_defaults(void **state)
{
	(void)state;
	assert_int_equal(load(NULL, NULL, 0), 0);
	assert_true(conf.busy_poll);
	assert_int_equal(conf.control_cpu, -1);
	assert_int_equal(conf.stats_period, 5);
	assert_int_equal(conf.udp_echo_port, 0);
	assert_int_equal(conf.arp_timeout, 60);
	assert_int_equal(conf.nb_ports, 0);
	assert_int_equal(conf.workers.nb_workers, 1);
	assert_int_equal(conf.port[3].mtu, 1500);
	assert_int_equal(conf.port[0].rx_desc, 1024);
	assert_string_equal(conf.gpu, "auto");
	assert_string_equal(droce_conf_origin(&conf, "port.0.mtu"), "default");
}

static const char full_file[] =
	"# droce test configuration\n"
	"worker.poll.enable = no   # event mode\n"
	"\n"
	"[worker]\n"
	"thread.groups = \"1,2\"\n"
	"thread.cpuset = 0-0,na\n"
	"[control]\n"
	"cpu = 0\n"
	"[stats]\n"
	"period=1\n"
	"[udp.echo]\n"
	"port = 7\n"
	"[port.0]\n"
	"device = net_af_packet0,iface=veth0\n"
	"address = 198.18.0.1/24\n"
	"gateway = 198.18.0.254\n"
	"mtu = 9000\n"
	"queues = 2\n"
	"  [ port.1 ]  \n"
	"  device = net_null0\n"
	"address = 198.18.1.1/30\n"
	"rxd = 512\n";

static void
test_full_file(void **state)
{
	(void)state;
	assert_int_equal(load(full_file, NULL, 0), 0);
	assert_false(conf.busy_poll);
	assert_int_equal(conf.workers.nb_groups, 2);
	assert_int_equal(conf.workers.nb_workers, 3);
	assert_true(conf.workers.group[0].pinned);
	assert_false(conf.workers.group[1].pinned);
	assert_int_equal(conf.control_cpu, 0);
	assert_int_equal(conf.stats_period, 1);
	assert_int_equal(conf.udp_echo_port, 7);
	assert_int_equal(conf.nb_ports, 2);
	assert_string_equal(conf.port[0].device, "net_af_packet0,iface=veth0");
	assert_int_equal(conf.port[0].addr, ip("198.18.0.1"));
	assert_int_equal(conf.port[0].prefix_len, 24);
	assert_int_equal(conf.port[0].gateway, ip("198.18.0.254"));
	assert_int_equal(conf.port[0].mtu, 9000);
	assert_int_equal(conf.port[0].rx_queues, 2);
	assert_string_equal(conf.port[1].device, "net_null0");
	assert_int_equal(conf.port[1].prefix_len, 30);
	assert_int_equal(conf.port[1].rx_desc, 512);
	assert_int_equal(conf.port[1].mtu, 1500);

	/* Origins name file and line. */
	assert_non_null(strstr(droce_conf_origin(&conf, "worker.poll.enable"),
			       ":2"));
	assert_non_null(strstr(droce_conf_origin(&conf, "port.0.mtu"), ":17"));
	assert_non_null(strstr(droce_conf_origin(&conf, "port.1.device"),
			       ":20"));
	assert_non_null(strstr(droce_conf_origin(&conf, "port.1.device"),
			       "/tmp/droce-test-conf-"));
}

static void
test_overrides(void **state)
{
	char *const args[] = {
		"port.0.mtu=1400", "worker.poll.enable = yes",
		"worker.thread.cpuset=", "port.0.mtu=1300",
	};

	(void)state;
	assert_int_equal(load(full_file, args, 4), 0);
	assert_int_equal(conf.port[0].mtu, 1300);
	assert_true(conf.busy_poll);
	assert_false(conf.workers.group[0].pinned);
	assert_non_null(strstr(droce_conf_origin(&conf, "port.0.mtu"),
			       "command line 'port.0.mtu=1300'"));
	/* Overrides alone configure a port. */
	{
		char *const only[] = { "port.0.device=net_null0",
				       "port.0.address=198.18.0.9/24" };

		assert_int_equal(load(NULL, only, 2), 0);
		assert_int_equal(conf.nb_ports, 1);
	}
}

static void
test_file_errors(void **state)
{
	char *long_line, *long_value, *long_key;
	const char *const missing[] = { "/nonexistent/droce.ini",
					"cannot read", NULL };
	char big[700];

	(void)state;
	/* Missing file. */
	err[0] = '\0';
	assert_int_equal(droce_conf_load(&conf, "/nonexistent/droce.ini",
					 NULL, 0, err, sizeof(err)), -ENOENT);
	for (const char *const *n = missing; *n != NULL; n++)
		assert_non_null(strstr(err, *n));

	EXPECT_ERROR("[worker]\nthread.groups\n", ":2: not a section, key or comment",
		     "allowed:");
	EXPECT_ERROR("[worker\n", ":1: section header without a closing ']'");
	EXPECT_ERROR("\n\n[ ]\n", ":3: empty section name");
	EXPECT_ERROR(" = 5\n", ":1: '=' without a key");
	EXPECT_ERROR("[port.0]\ndevice = a\n[port.0]\ndevice = b\n",
		     ":4: key 'port.0.device' given twice (first at line 2)");
	EXPECT_ERROR("worker.poll.enable = yes\n[worker]\npoll.enable = no\n",
		     ":3: key 'worker.poll.enable' given twice (first at line 1)");
	/* Inline workers are polled by the control lcore, which must not sleep. */
	EXPECT_ERROR("[worker]\npoll.enable = no\ninline = yes\n",
		     ":3: worker.inline = yes needs worker.poll.enable = yes");

	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	assert_true(asprintf(&long_line, "a = %s\n", big) > 0);
	EXPECT_ERROR(long_line, ":1: line is", "at most 322 allowed");
	free(long_line);
	assert_true(asprintf(&long_value, "a = %.260s\n", big) > 0);
	EXPECT_ERROR(long_value, ":1: value is 260 characters long; at most 255 allowed");
	free(long_value);
	assert_true(asprintf(&long_key, "%.70s = 1\n", big) > 0);
	EXPECT_ERROR(long_key, ":1: key is 70 characters long; at most 63 allowed");
	free(long_key);
	assert_true(asprintf(&long_key, "[%.70s]\n", big) > 0);
	EXPECT_ERROR(long_key, ":1: section name is 70 characters long");
	free(long_key);

	/* A NUL byte inside a line. */
	{
		const char text[] = "a = 1\nb\0c = 2\n";
		const char *const needles[] = { ":2: NUL byte", NULL };
		int fd;
		int ret;

		snprintf(path, sizeof(path), "/tmp/droce-test-conf-XXXXXX");
		fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, sizeof(text) - 1),
				 (ssize_t)sizeof(text) - 1);
		close(fd);
		ret = droce_conf_load(&conf, path, NULL, 0, err, sizeof(err));
		unlink(path);
		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(err, needles[0]));
	}
}

static void
test_unknown_keys(void **state)
{
	(void)state;
	EXPECT_ERROR("worker.thread.group = 1\n", ":1: unknown key 'worker.thread.group'",
		     "did you mean 'worker.thread.groups'?");
	EXPECT_ERROR("[port.2]\nmut = 1500\n", ":2: unknown key 'port.2.mut'",
		     "did you mean 'port.2.mtu'?");
	EXPECT_ERROR("[workers]\nthread.cpuset = na\n",
		     "did you mean 'worker.thread.cpuset'?");
	EXPECT_ERROR("[port.1]\ndevce = x\n", "did you mean 'port.1.device'?");
	EXPECT_ERROR("zzzzzz = 1\n", "unknown key 'zzzzzz'; 'droce --help' lists the keys");
	EXPECT_ERROR("[port.8]\ndevice = x\n", "port.8.device: port index out of range",
		     "allowed: port.0 .. port.7");
	EXPECT_ERROR("port.99999999999999.device = x\n", "port index out of range");
	EXPECT_ERROR("port.x.device = x\n", "unknown key 'port.x.device'");
	EXPECT_OVERRIDE_ERROR("stats.perod=3", "command line 'stats.perod=3'",
			      "did you mean 'stats.period'?");
}

static void
test_value_errors(void **state)
{
	(void)state;
	EXPECT_ERROR("\n[worker]\npoll.enable = maybe\n",
		     ":3: worker.poll.enable = \"maybe\": not a boolean",
		     "allowed: yes or no");
	EXPECT_ERROR("stats.period = soon\n",
		     "stats.period = \"soon\": not a number", "allowed: a whole number 0..3600");
	EXPECT_ERROR("stats.period = 3601\n", "out of range", "0..3600");
	EXPECT_ERROR("stats.period = -1\n", "not a number");
	EXPECT_ERROR("stats.period = 99999999999\n", "out of range", "0..3600");
	EXPECT_ERROR("stats.period = 99999999999999999999999\n", "out of range");
	EXPECT_ERROR("stats.period = 99999999999999999999999x\n", "not a number");
	EXPECT_ERROR("udp.echo.port = 65536\n", "udp.echo.port = \"65536\": out of range",
		     "0..65535");
	EXPECT_ERROR("arp.timeout = 0\n", "out of range", "1..86400");
	EXPECT_ERROR("control.cpu = 1024\n", "control.cpu = \"1024\": out of range");
	EXPECT_ERROR("[port.0]\ndevice = x\naddress = 198.18.0.1/24\nmtu = 67\n",
		     ":4: port.0.mtu = \"67\": out of range", "68..9600");
	EXPECT_ERROR("[port.0]\ndevice = x\naddress = 198.18.0.1/24\nqueues = 65\n",
		     "port.0.queues = \"65\": out of range", "0..64");
	EXPECT_ERROR("[port.0]\ndevice = x\naddress = 198.18.0.1/24\nrxd = 32\n",
		     "port.0.rxd = \"32\": out of range", "64..16384");
	EXPECT_ERROR("[port.0]\ndevice =\n", "port.0.device = \"\": empty");
	EXPECT_ERROR("gpu = cuda:0123456789012345678901234567890\n", "gpu = \"cuda:0123",
		     "too long; allowed: at most 31 characters");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.1\n", "no prefix length",
		     "allowed: a.b.c.d/len");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.300/24\n", "not an IPv4 address");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.1/33\n", "prefix length out of range");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.1/\n", "prefix length out of range");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.0/24\n", "not a host address");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.255/24\n", "not a host address");
	EXPECT_ERROR("[port.0]\naddress = 224.0.0.1/24\n", "not a host address");
	EXPECT_ERROR("[port.0]\naddress = 0.0.0.0/8\n", "not a host address");
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.1111111111111111/24\n",
		     "not an IPv4 address");
	EXPECT_ERROR("[port.0]\ngateway = 198.18.0\n",
		     "port.0.gateway = \"198.18.0\": not an IPv4 address");
	/* /31 and /32 have no network or broadcast address. */
	assert_int_equal(load("[port.0]\ndevice=x\naddress = 198.18.0.0/31\n",
			      NULL, 0), 0);
	assert_int_equal(load("[port.0]\ndevice=x\naddress = 198.18.0.7/32\n",
			      NULL, 0), 0);
}

static void
test_port_errors(void **state)
{
	(void)state;
	EXPECT_ERROR("[port.0]\naddress = 198.18.0.1/24\n",
		     "port.0 has no port.0.device");
	EXPECT_ERROR("[port.0]\ndevice = net_null0\n",
		     "port.0 has no port.0.address");
	EXPECT_ERROR("[port.0]\ndevice = a\naddress = 198.18.0.1/24\n"
		     "[port.2]\ndevice = b\naddress = 198.18.2.1/24\n",
		     "port.2 is configured but port.1 is not");
	EXPECT_ERROR("[port.0]\ndevice = a\naddress = 198.18.0.1/24\n"
		     "gateway = 198.18.1.1\n",
		     ":4: port.0.gateway = \"198.18.1.1\": outside the prefix");
}

#define PORT0 "[port.0]\ndevice = a\naddress = 198.18.0.1/24\n"

static void
test_port_mac(void **state)
{
	const struct rte_ether_addr none = { .addr_bytes = { 0 } };
	const struct rte_ether_addr want = {
		.addr_bytes = { 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f } };
	char *const args[] = { "port.1.device=b", "port.1.address=198.18.1.1/24",
			       "port.1.mac=0A:1b:2C:3d:4E:5f" };

	(void)state;
	assert_int_equal(load(PORT0, args, 3), 0);
	assert_memory_equal(&conf.port[0].mac, &none, sizeof(none));
	assert_memory_equal(&conf.port[1].mac, &want, sizeof(want));
	assert_int_equal(load(PORT0 "mac = 02:00:00:00:00:01\n", NULL, 0), 0);
	assert_int_equal(conf.port[0].mac.addr_bytes[0], 0x02);
	assert_int_equal(conf.port[0].mac.addr_bytes[5], 0x01);

	EXPECT_ERROR(PORT0 "mac = 01:00:5e:00:00:01\n",
		     ":4: port.0.mac = \"01:00:5e:00:00:01\": a multicast address; allowed: a unicast MAC address xx:xx:xx:xx:xx:xx (first byte even, not all zero)");
	EXPECT_ERROR(PORT0 "mac = ff:ff:ff:ff:ff:ff\n",
		     "port.0.mac = \"ff:ff:ff:ff:ff:ff\": the broadcast address; allowed: a unicast");
	EXPECT_ERROR(PORT0 "mac = 00:00:00:00:00:00\n",
		     "port.0.mac = \"00:00:00:00:00:00\": the zero address; allowed: a unicast");
	EXPECT_OVERRIDE_ERROR("port.0.mac=02:00:00:00:00",
			      "command line 'port.0.mac=02:00:00:00:00'",
			      "port.0.mac = \"02:00:00:00:00\": not a MAC address; allowed: a unicast MAC address xx:xx:xx:xx:xx:xx");
	EXPECT_OVERRIDE_ERROR("port.0.mac=02:00:00:00:00:01:", "not a MAC address");
	EXPECT_OVERRIDE_ERROR("port.0.mac=02-00-00-00-00-01", "not a MAC address");
	EXPECT_OVERRIDE_ERROR("port.0.mac=02:00:00:00:00:0g", "not a MAC address");
	EXPECT_OVERRIDE_ERROR("port.0.mac=2:0:0:0:0:1", "not a MAC address");
	EXPECT_OVERRIDE_ERROR("port.0.mac=", "not a MAC address");
}

static void
test_rx_va(void **state)
{
	(void)state;
	assert_int_equal(load(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\n"
			      "[rx.1]\npeer = 198.18.0.3\nframe.size = 1\n"
			      "va = 0xFFFFffffFFFFffff\n"
			      "[rx.2]\npeer = 198.18.0.4\nframe.size = 1\n"
			      "va = 18446744073709551615\n"
			      "[rx.3]\npeer = 198.18.0.5\nframe.size = 1\n"
			      "va = 0x00000000000000000000000123456789a\n", NULL, 0), 0);
	assert_true(conf.rx[0].va == 0);
	assert_true(conf.rx[1].va == UINT64_MAX);
	assert_true(conf.rx[2].va == UINT64_MAX);
	assert_true(conf.rx[3].va == 0x123456789aull);

	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\n"
		     "va = 18446744073709551616\n",
		     ":7: rx.0.va = \"18446744073709551616\": out of range; allowed: a whole number 0..18446744073709551615 (decimal or 0x hex)");
	EXPECT_OVERRIDE_ERROR("rx.0.va=0x10000000000000000",
			      "rx.0.va = \"0x10000000000000000\": out of range");
	EXPECT_OVERRIDE_ERROR("rx.0.va=99999999999999999999999", "out of range");
	EXPECT_OVERRIDE_ERROR("rx.0.va=12abc",
			      "command line 'rx.0.va=12abc'",
			      "rx.0.va = \"12abc\": not a number; allowed: a whole number 0..18446744073709551615");
	EXPECT_OVERRIDE_ERROR("rx.0.va=0x", "not a number");
	EXPECT_OVERRIDE_ERROR("rx.0.va=-1", "not a number");
	EXPECT_OVERRIDE_ERROR("rx.0.va=99999999999999999999999x", "not a number");
}

static void
test_rx_sections(void **state)
{
	const struct droce_rx_conf *r;

	(void)state;
	assert_int_equal(load(PORT0 "[port.1]\ndevice = b\naddress = 198.18.1.1/24\n"
			      "[rx.0]\npeer = 198.18.0.2\nframe.size = 5000\n"
			      "[rx.1]\nport = 1\npeer = 198.18.1.2\nframe.size = 0x1000\n"
			      "qp = 0x4200\nrkey = 0xDEADbeef\npages = 16\nqueue.size = 8\n"
			      "placement = gather\nicrc = fused\nimmediate = hsb-lite\n"
			      "copy.stores = cached\n"
			      "count = 3\nremote.qp = 17\ngpu = host\n"
			      "metadata.offset = 4096\npage.size = 8192\n", NULL, 0), 0);
	assert_int_equal(conf.nb_rx, 2);
	r = &conf.rx[0];
	assert_int_equal(r->port, 0);
	assert_int_equal(r->peer, ip("198.18.0.2"));
	assert_int_equal(r->frame_size, 5000);
	assert_int_equal(r->pages, 4);
	assert_int_equal(r->queue_size, 4);
	assert_int_equal(r->qp, 0);
	assert_int_equal(r->count, 1);
	assert_int_equal(r->placement, 0);
	assert_int_equal(r->icrc, 0);
	assert_int_equal(r->copy_stores, 0);
	assert_int_equal(r->immediate, 0);
	assert_string_equal(r->gpu, "");
	r = &conf.rx[1];
	assert_int_equal(r->port, 1);
	assert_int_equal(r->frame_size, 4096);
	assert_int_equal(r->qp, 0x4200);
	assert_int_equal(r->rkey, 0xdeadbeef);
	assert_int_equal(r->pages, 16);
	assert_int_equal(r->queue_size, 8);
	assert_int_equal(r->placement, 2);
	assert_int_equal(r->icrc, 1);
	assert_int_equal(r->copy_stores, 1);
	assert_int_equal(r->immediate, 1);
	assert_int_equal(r->count, 3);
	assert_int_equal(r->remote_qp, 17);
	assert_int_equal(r->metadata_offset, 4096);
	assert_int_equal(r->page_size, 8192);
	assert_string_equal(r->gpu, "host");

	EXPECT_ERROR(PORT0 "[rx.0]\nframe.size = 100\n",
		     "rx.0 has no rx.0.peer; allowed: every receiver needs rx.N.peer and rx.N.frame.size");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\n", "rx.0 has no rx.0.frame.size");
	EXPECT_ERROR(PORT0 "[rx.1]\npeer = 198.18.0.2\nframe.size = 1\n",
		     "rx.1 is configured but rx.0 is not");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\nport = 1\n",
		     ":7: rx.0.port = 1: no such port; allowed: 0..0");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\nicrc = maybe\n",
		     "rx.0.icrc = \"maybe\": not a known value; allowed: on, fused, off");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\ncopy.stores = nt\n",
		     "rx.0.copy.stores = \"nt\": not a known value; allowed: streaming, cached");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\nqp = 0xfffffe\ncount = 3\n",
		     "rx.0.qp = 0xfffffe with rx.0.count = 3: allowed: QPs 2..0xffffff");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 1\nqp = 1\n",
		     "allowed: QPs 2..0xffffff");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 0x\n",
		     "rx.0.frame.size = \"0x\": not a number");
	EXPECT_ERROR(PORT0 "[rx.0]\npeer = 198.18.0.2\nframe.size = 0x40000001\n",
		     "out of range; allowed: a whole number 1..1073741824");
	EXPECT_OVERRIDE_ERROR("rx.64.peer=198.18.0.2",
			      "rx.64.peer: rx index out of range; allowed: rx.0 .. rx.63");
	EXPECT_OVERRIDE_ERROR("rx.0.frame_size=100",
			      "unknown key 'rx.0.frame_size' (did you mean 'rx.0.frame.size'?)");
}

static void
test_worker_errors_name_their_key(void **state)
{
	(void)state;
	EXPECT_ERROR("[worker]\nthread.groups = 1,0\n",
		     ":2: worker.thread.groups = \"1,0\": group 1: \"0\" is not a worker count");
	EXPECT_ERROR("[worker]\nthread.groups = 2\nthread.cpuset = 1-1\n",
		     ":3: worker.thread.cpuset = \"1-1\"", "counts must be equal");
	EXPECT_OVERRIDE_ERROR("worker.thread.cpuset=1-1,2-2",
			      "command line 'worker.thread.cpuset=1-1,2-2'",
			      "2 ranges for 1 group");
	/* The same range is fine in event mode. */
	assert_int_equal(load("[worker]\nthread.groups = 2\nthread.cpuset = 1-1\n"
			      "poll.enable = no\n", NULL, 0), 0);
}

static void
test_override_errors(void **state)
{
	(void)state;
	EXPECT_OVERRIDE_ERROR("stats.period", "command line 'stats.period'",
			      "not a key=value override");
	EXPECT_OVERRIDE_ERROR("=5", "key must be 1..127 characters");
	EXPECT_OVERRIDE_ERROR("stats.period=x", "command line 'stats.period=x'",
			      "stats.period = \"x\": not a number");
}

/* config/droce.ini, the commented example, loads as it is shipped. */
static void
test_example_config(void **state)
{
	const char *file = getenv("DROCE_EXAMPLE_CONFIG");

	(void)state;
	if (file == NULL)
		skip();
	if (droce_conf_load(&conf, file, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(conf.nb_ports, 1);
	assert_true(conf.workers.group[0].pinned);
	assert_int_equal(conf.control_cpu, 0);
}

static void
test_print_keys(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	droce_conf_print_keys(f);
	fclose(f);
	assert_non_null(strstr(buf, "worker.thread.groups"));
	assert_non_null(strstr(buf, "port.N.mtu"));
	assert_non_null(strstr(buf, "(68..9600) [1500]"));
	assert_non_null(strstr(buf, "port.N.mac "));
	assert_non_null(strstr(buf, "rx.N.va "));
	assert_non_null(strstr(buf, "(0..2^64-1) [0]"));
	free(buf);
}

static void
test_str_append(void **state)
{
	char buf[12];
	size_t used = 0;

	(void)state;
	assert_int_equal(droce_str_append(buf, sizeof(buf), &used, "%s", "abc"), 0);
	assert_int_equal(droce_str_append(buf, sizeof(buf), &used, ",%d", 42), 0);
	assert_string_equal(buf, "abc,42");
	/* What does not fit is cut, and says so. */
	assert_int_equal(droce_str_append(buf, sizeof(buf), &used, ",%s", "toolong"),
			 -ENOSPC);
	assert_string_equal(buf, "abc,42,t...");
	assert_int_equal(droce_str_append(buf, sizeof(buf), &used, "x"), -ENOSPC);
	assert_string_equal(buf, "abc,42,t...");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_value_errors),
		cmocka_unit_test(test_port_errors),
		cmocka_unit_test(test_worker_errors_name_their_key),
		cmocka_unit_test(test_override_errors),
		cmocka_unit_test(test_example_config),
		cmocka_unit_test(test_print_keys),
		cmocka_unit_test(test_rx_sections),
		cmocka_unit_test(test_port_mac),
		cmocka_unit_test(test_rx_va),
		cmocka_unit_test(test_str_append),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
