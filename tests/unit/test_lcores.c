/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* The EAL lcore map droce writes, and its check of the one the user gave. */

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "droce_core.h"
#include "test_eal.h"

static struct droce_conf conf;
static char err[DROCE_ERR_LEN];
static int cpu;          /* the first cpu this process may use */
static cpu_set_t allowed;

static void
load(char *const *kv, int n)
{
	if (droce_conf_load(&conf, NULL, kv, n, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static void
test_find_eal_option(void **state)
{
	char buf[128];
	char *a[] = { "droce", "--no-pci", "-l", "0-3", "--", "-l", "9" };
	char *b[] = { "droce", "-l0-2", "--vdev", "x" };
	char *c[] = { "droce", "--lcores=0@1,1@2" };
	char *d[] = { "droce", "--lcores", "0@1" };
	char *e[] = { "droce", "-c", "0xf" };
	char *f[] = { "droce", "--no-pci", "--log-level", "lib.eal:debug", "--",
		      "-l", "1" };

	(void)state;
	assert_string_equal(droce_lcores_find_eal_option(7, a, buf, sizeof(buf)),
			    "-l 0-3");
	assert_string_equal(droce_lcores_find_eal_option(4, b, buf, sizeof(buf)),
			    "-l0-2");
	assert_string_equal(droce_lcores_find_eal_option(2, c, buf, sizeof(buf)),
			    "--lcores=0@1,1@2");
	assert_string_equal(droce_lcores_find_eal_option(3, d, buf, sizeof(buf)),
			    "--lcores 0@1");
	assert_string_equal(droce_lcores_find_eal_option(3, e, buf, sizeof(buf)),
			    "-c 0xf");
	/* After "--" the arguments are droce's, not the EAL's. */
	assert_null(droce_lcores_find_eal_option(7, f, buf, sizeof(buf)));
}

static void
test_eal_arg_from_groups(void **state)
{
	char kv0[64], kv1[64], expect[256], arg[DROCE_LCORES_ARG_LEN];
	char *kv[] = { "worker.thread.groups=1,2", kv0, kv1,
		       "worker.poll.enable=no" };

	(void)state;
	snprintf(kv0, sizeof(kv0), "worker.thread.cpuset=%d-%d,na", cpu, cpu);
	snprintf(kv1, sizeof(kv1), "control.cpu=%d", cpu);
	load(kv, 4);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, sizeof(arg), err,
					      sizeof(err)), 0);
	/* lcore 0 control, lcore 1 pinned, lcores 2-3 float (not on cpu). */
	snprintf(expect, sizeof(expect), "0@%d,1@%d,2@(", cpu, cpu);
	assert_memory_equal(arg, expect, strlen(expect));
	assert_non_null(strstr(arg, ",3@("));
	if (CPU_COUNT(&allowed) > 1) {
		char pinned[16];

		/* Floating workers avoid the pinned cpu when others exist. */
		snprintf(pinned, sizeof(pinned), "2@(%d)", cpu);
		assert_null(strstr(arg, pinned));
	}
}

static void
test_eal_arg_default_control_cpu(void **state)
{
	char kv0[64], arg[DROCE_LCORES_ARG_LEN], expect[64];
	char *kv[] = { kv0 };
	int other = -1;

	(void)state;
	for (int c = cpu + 1; c < CPU_SETSIZE && other < 0; c++)
		if (CPU_ISSET(c, &allowed))
			other = c;
	if (other < 0)
		skip();
	/* The control lcore takes the first cpu no pinned worker owns. */
	snprintf(kv0, sizeof(kv0), "worker.thread.cpuset=%d-%d", cpu, cpu);
	load(kv, 1);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, sizeof(arg), err,
					      sizeof(err)), 0);
	snprintf(expect, sizeof(expect), "0@%d,1@%d", other, cpu);
	assert_string_equal(arg, expect);
}

static void
test_eal_arg_errors(void **state)
{
	char arg[DROCE_LCORES_ARG_LEN];
	char *pin_missing[] = { "worker.thread.cpuset=1023-1023" };
	char *ctl_missing[] = { "control.cpu=1023" };
	char *too_many[] = { "worker.thread.groups=100,100" };

	(void)state;
	if (CPU_ISSET(1023, &allowed))
		skip();
	load(pin_missing, 1);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, sizeof(arg), err,
					      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "pins group 0 to cpu 1023, which this process may not use; allowed cpus: "));
	load(ctl_missing, 1);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, sizeof(arg), err,
					      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "control.cpu = \"1023\": this process may not use that cpu"));
	load(too_many, 1);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, sizeof(arg), err,
					      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "asks for 200 workers"));
	assert_non_null(strstr(err, "RTE_MAX_LCORE"));
	/* A buffer too small is an error, not a cut-off value. */
	load(NULL, 0);
	assert_int_equal(droce_lcores_eal_arg(&conf, arg, 4, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "longer than 3 characters"));
}

/* The EAL runs lcores 0, 1, 2, all on `cpu` (see main). */
static void
test_layout_agrees(void **state)
{
	struct droce_lcore_layout l;
	char kv0[64], kv1[64];
	char *two[] = { "worker.thread.groups=2" };
	char *pinned[] = { "worker.thread.groups=1,1", kv0, kv1 };

	(void)state;
	load(two, 1);
	assert_int_equal(droce_lcores_layout(&conf, "--lcores x", &l, err,
					     sizeof(err)), 0);
	assert_int_equal(l.control_lcore, 0);
	assert_int_equal(l.nb_workers, 2);
	assert_int_equal(l.worker_lcore[0], 1);
	assert_int_equal(l.worker_lcore[1], 2);
	assert_int_equal(l.worker_group[1], 0);
	assert_int_equal(l.worker_index[1], 1);

	snprintf(kv0, sizeof(kv0), "worker.thread.cpuset=%d-%d,%d-%d", cpu, cpu,
		 cpu, cpu);
	snprintf(kv1, sizeof(kv1), "control.cpu=%d", cpu);
	load(pinned, 3);
	assert_int_equal(droce_lcores_layout(&conf, "--lcores x", &l, err,
					     sizeof(err)), 0);
	assert_int_equal(l.worker_group[1], 1);
	assert_int_equal(l.worker_index[1], 0);
}

static void
test_layout_disagrees(void **state)
{
	struct droce_lcore_layout l;
	char kv0[64], kv1[64];
	char *one[] = { "worker.thread.groups=1" };
	char *three[] = { "worker.thread.groups=3" };
	char *pin[] = { "worker.thread.groups=2", kv0, "worker.poll.enable=no" };
	char *ctl[] = { "worker.thread.groups=2", kv1 };

	(void)state;
	load(one, 1);
	assert_int_equal(droce_lcores_layout(&conf, "-l 0-2", &l, err,
					     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "EAL option '-l 0-2' gives 2 worker lcores, but worker.thread.groups (command line 'worker.thread.groups=1') asks for 1 worker"));
	load(three, 1);
	assert_int_equal(droce_lcores_layout(&conf, "-l 0-2", &l, err,
					     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "asks for 3 workers; give 4 lcores"));

	snprintf(kv0, sizeof(kv0), "worker.thread.cpuset=%d-%d", cpu + 1, cpu + 1);
	load(pin, 3);
	assert_int_equal(droce_lcores_layout(&conf, "-l 0-2", &l, err,
					     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "runs worker lcore 1 on cpus"));
	assert_non_null(strstr(err, "pins worker 0 of group 0 to cpu"));

	snprintf(kv1, sizeof(kv1), "control.cpu=%d", cpu + 1);
	load(ctl, 2);
	assert_int_equal(droce_lcores_layout(&conf, NULL, &l, err,
					     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "runs the main (control) lcore 0 on cpus"));
	assert_non_null(strstr(err, "--lcores (built by droce)"));
}

struct here_result {
	int ret;
	struct droce_lcore_layout layout;
	unsigned int lcore;
};

/* droce_lcores_layout_here() on a thread of the test's own, registered in
 * the EAL first when @p arg says so.
 */
static void *
layout_on_thread(void *arg)
{
	struct here_result *r = arg;
	bool do_register = r->ret;

	if (do_register && rte_thread_register() != 0) {
		r->ret = INT_MIN;
		return NULL;
	}
	r->lcore = rte_lcore_id();
	r->ret = droce_lcores_layout_here(&conf, &r->layout, err, sizeof(err));
	if (do_register)
		rte_thread_unregister();
	return NULL;
}

/* A stack run by one thread in an EAL someone else started: the thread's
 * lcore, registered or not, controls and polls every worker.
 */
static void
test_layout_here(void **state)
{
	char *off[] = { "worker.thread.groups=2" };
	char *inl[] = { "worker.thread.groups=2,1", "worker.inline=yes" };
	struct here_result r = { 0 };
	pthread_t t;

	(void)state;
	load(off, 1);
	assert_int_equal(droce_lcores_layout_here(&conf, &r.layout, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs worker.inline = yes (default)"));

	load(inl, 2);
	assert_int_equal(droce_lcores_layout_here(&conf, &r.layout, err, sizeof(err)), 0);
	assert_int_equal(r.layout.control_lcore, rte_lcore_id());
	assert_int_equal(r.layout.nb_workers, 3);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(r.layout.worker_lcore[i], rte_lcore_id());
	assert_int_equal(r.layout.worker_group[2], 1);
	assert_int_equal(r.layout.worker_index[1], 1);

	/* A thread the EAL does not know has no lcore id to run as. */
	r.ret = 0;
	assert_int_equal(pthread_create(&t, NULL, layout_on_thread, &r), 0);
	pthread_join(t, NULL);
	assert_int_equal(r.ret, -EINVAL);
	assert_non_null(strstr(err, "call rte_thread_register() first"));

	r.ret = 1;
	assert_int_equal(pthread_create(&t, NULL, layout_on_thread, &r), 0);
	pthread_join(t, NULL);
	assert_int_equal(r.ret, 0);
	assert_true(r.lcore >= 3 && r.lcore < RTE_MAX_LCORE);
	assert_int_equal(r.layout.control_lcore, r.lcore);
	assert_int_equal(r.layout.worker_lcore[2], r.lcore);
}

int
main(int argc, char **argv)
{
	char prefix[64], lcores[64];
	char *eal[] = { argv[0], "--no-pci", "--no-huge", "-m", "64",
			"--file-prefix", prefix, DROCE_TEST_EAL_QUIET,
			"--lcores", lcores, "--log-level", "lib.eal:error", NULL };
	/* Before rte_eal_init(), which pins this thread to lcore 0's cpu. */
	const struct CMUnitTest before_eal[] = {
		cmocka_unit_test(test_find_eal_option),
		cmocka_unit_test(test_eal_arg_from_groups),
		cmocka_unit_test(test_eal_arg_default_control_cpu),
		cmocka_unit_test(test_eal_arg_errors),
	};
	const struct CMUnitTest after_eal[] = {
		cmocka_unit_test(test_layout_agrees),
		cmocka_unit_test(test_layout_disagrees),
		cmocka_unit_test(test_layout_here),
	};
	int ret;

	(void)argc;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 1;
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &allowed))
		cpu++;
	snprintf(lcores, sizeof(lcores), "0@%d,1@%d,2@%d", cpu, cpu, cpu);
	snprintf(prefix, sizeof(prefix), "droce-test-lcores-%d", getpid());
	ret = cmocka_run_group_tests(before_eal, NULL, NULL);
	if (droce_test_eal_init(RTE_DIM(eal) - 1, eal) < 0)
		return 1;
	ret |= cmocka_run_group_tests(after_eal, NULL, NULL);
	droce_test_eal_cleanup();
	return ret;
}
