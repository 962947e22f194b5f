/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

#ifndef DROCE_TEST_EAL_H
#define DROCE_TEST_EAL_H

/*
 * The EAL of a test program, leaving nothing behind in /var/run/dpdk: no
 * shared files and no telemetry socket (DROCE_TEST_EAL_QUIET in its
 * arguments), so that its runtime folder stays empty, and the folder
 * removed after rte_eal_cleanup(), which never removes it. (--in-memory
 * would do both, but DPDK 22.11 refuses it with --no-huge.)
 */

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_eal.h>

#define DROCE_TEST_EAL_QUIET "--no-shconf", "--no-telemetry"

static char droce_test_rundir[PATH_MAX];

static inline int
droce_test_eal_init(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);

	if (ret >= 0)
		snprintf(droce_test_rundir, sizeof(droce_test_rundir), "%s",
			 rte_eal_get_runtime_dir());
	return ret;
}

/*
 * The EAL of a test that steps its stacks itself: @p n lcores (a control
 * lcore and workers), all on the first cpu the process may use (no lcore
 * is launched), @p mem MB of memory, a file prefix made of @p name and the
 * pid, quiet.
 */
static inline int
droce_test_eal_init_lcores(char *argv0, const char *name, const char *mem, unsigned int n)
{
	static char prefix[64], lcores[64], mem_arg[16];
	char *eal[] = { argv0, "--no-pci", "--no-huge", "-m", mem_arg, "--file-prefix", prefix,
			DROCE_TEST_EAL_QUIET, "--lcores", lcores, "--log-level", "lib.eal:error",
			NULL };
	cpu_set_t set;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
			cpu++;
	for (unsigned int i = 0, len = 0; i < n && len < sizeof(lcores); i++)
		len += (unsigned int)snprintf(lcores + len, sizeof(lcores) - len, "%s%u@%d",
					      i == 0 ? "" : ",", i, cpu);
	snprintf(prefix, sizeof(prefix), "droce-test-%s-%d", name, getpid());
	snprintf(mem_arg, sizeof(mem_arg), "%s", mem);
	if (droce_test_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0) {
		fprintf(stderr, "test_%s: rte_eal_init failed\n", name);
		return -1;
	}
	return 0;
}

/* The usual: a control lcore and one worker. */
static inline int
droce_test_eal_init_stepped(char *argv0, const char *name, const char *mem)
{
	return droce_test_eal_init_lcores(argv0, name, mem, 2);
}

static inline void
droce_test_eal_cleanup(void)
{
	rte_eal_cleanup();
	if (droce_test_rundir[0] != '\0')
		rmdir(droce_test_rundir);
}

#endif /* DROCE_TEST_EAL_H */
