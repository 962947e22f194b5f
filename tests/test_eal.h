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

static inline void
droce_test_eal_cleanup(void)
{
	rte_eal_cleanup();
	if (droce_test_rundir[0] != '\0')
		rmdir(droce_test_rundir);
}

#endif /* DROCE_TEST_EAL_H */
