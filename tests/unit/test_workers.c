/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/* Worker groups and cpusets against every rule of DESIGN.md. */

#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "droce_core.h"

static struct droce_workers w;
static char err[DROCE_ERR_LEN];

static int
parse(const char *groups, const char *cpuset, bool busy)
{
	err[0] = '\0';
	return droce_workers_parse(&w, groups, cpuset, busy, err, sizeof(err));
}

/* The call fails with -EINVAL and the message holds @needle. */
static void
expect_error(const char *groups, const char *cpuset, bool busy,
	     const char *needle)
{
	int ret = parse(groups, cpuset, busy);

	if (ret != -EINVAL || strstr(err, needle) == NULL)
		fail_msg("groups \"%s\" cpuset \"%s\" busy %d: ret %d, message \"%s\", expected \"%s\"",
			 groups, cpuset, busy, ret, err, needle);
}

static void
test_empty_is_one_worker(void **state)
{
	(void)state;
	assert_int_equal(parse("", "", true), 0);
	assert_int_equal(w.nb_groups, 1);
	assert_int_equal(w.nb_workers, 1);
	assert_int_equal(w.group[0].workers, 1);
	assert_false(w.group[0].pinned);
	assert_int_equal(parse("   ", NULL, true), 0);
	assert_int_equal(w.nb_workers, 1);
	assert_int_equal(parse(NULL, NULL, true), 0);
	assert_int_equal(w.nb_groups, 1);
}

static void
test_groups(void **state)
{
	(void)state;
	assert_int_equal(parse("1,2,3", "", true), 0);
	assert_int_equal(w.nb_groups, 3);
	assert_int_equal(w.nb_workers, 6);
	assert_int_equal(w.group[0].workers, 1);
	assert_int_equal(w.group[1].workers, 2);
	assert_int_equal(w.group[2].workers, 3);
	for (int g = 0; g < 3; g++)
		assert_int_equal(droce_workers_cpu(&w, (uint16_t)g, 0), -1);
	assert_int_equal(parse(" 4 , 128 ", "", true), 0);
	assert_int_equal(w.nb_workers, 132);
}

static void
test_group_limits(void **state)
{
	char many[DROCE_MAX_GROUPS * 2 + 8];
	size_t used = 0;

	(void)state;
	for (int i = 0; i < DROCE_MAX_GROUPS; i++)
		used += (size_t)snprintf(many + used, sizeof(many) - used,
					 "%s1", i ? "," : "");
	assert_int_equal(parse(many, "", true), 0);
	assert_int_equal(w.nb_groups, DROCE_MAX_GROUPS);
	snprintf(many + used, sizeof(many) - used, ",1");
	expect_error(many, "", true, "more than 128 groups");

	expect_error("0", "", true, "allowed: 1..128 workers");
	expect_error("129", "", true, "\"129\" is not a worker count");
	expect_error("1,abc", "", true, "group 1: \"abc\"");
	expect_error("1,,2", "", true, "group 1: \"\"");
	expect_error("1,", "", true, "group 1");
	expect_error("-1", "", true, "not a worker count");
	expect_error("+1", "", true, "not a worker count");
	expect_error("99999999999999999999", "", true, "not a worker count");
}

static void
test_cpuset_design_example(void **state)
{
	(void)state;
	/* DESIGN.md: group 0 on cpu 1, group 1 on cpus 2-3, group 2 unpinned. */
	assert_int_equal(parse("1,2,3", "1-1,2-3,na", false), 0);
	assert_true(w.group[0].pinned);
	assert_int_equal(w.group[0].cpu_first, 1);
	assert_int_equal(w.group[0].cpu_count, 1);
	assert_true(w.group[1].pinned);
	assert_int_equal(w.group[1].cpu_first, 2);
	assert_int_equal(w.group[1].cpu_count, 2);
	assert_false(w.group[2].pinned);
	assert_int_equal(droce_workers_cpu(&w, 0, 0), 1);
	assert_int_equal(droce_workers_cpu(&w, 1, 0), 2);
	assert_int_equal(droce_workers_cpu(&w, 1, 1), 3);
	assert_int_equal(droce_workers_cpu(&w, 2, 2), -1);
	assert_int_equal(droce_workers_cpu(&w, 3, 0), -1);
}

static void
test_cpuset_modulo(void **state)
{
	(void)state;
	/* Without busy polling, worker j runs on start + j % count. */
	assert_int_equal(parse("4", "2-3", false), 0);
	assert_int_equal(droce_workers_cpu(&w, 0, 0), 2);
	assert_int_equal(droce_workers_cpu(&w, 0, 1), 3);
	assert_int_equal(droce_workers_cpu(&w, 0, 2), 2);
	assert_int_equal(droce_workers_cpu(&w, 0, 3), 3);
	assert_int_equal(parse("3", "7-7", false), 0);
	for (uint16_t j = 0; j < 3; j++)
		assert_int_equal(droce_workers_cpu(&w, 0, j), 7);
}

static void
test_fewer_ranges_than_groups(void **state)
{
	(void)state;
	assert_int_equal(parse("1,1,1", "5-5", true), 0);
	assert_true(w.group[0].pinned);
	assert_false(w.group[1].pinned);
	assert_false(w.group[2].pinned);
}

static void
test_cpuset_rules(void **state)
{
	(void)state;
	expect_error("2", "3-2", false, "start is after end");
	expect_error("1", "1-1,2-2", false, "2 ranges for 1 group");
	expect_error("1,1", "1-1,2-2,3-3,4-4", false, "4 ranges for 2 groups");
	expect_error("1", "1-2", false,
		     "may not name more cpus than its group has workers");
	expect_error("2", "1-1", true, "counts must be equal");
	assert_int_equal(parse("2", "1-1", false), 0);
	assert_int_equal(parse("2", "1-2", true), 0);
	expect_error("1", "5", false, "range 0 \"5\" is not a cpu range");
	expect_error("1", "1-", false, "is not a cpu range");
	expect_error("1", "-1", false, "is not a cpu range");
	expect_error("1", "a-b", false, "is not a cpu range");
	expect_error("1", "NA", false, "is not a cpu range");
	expect_error("1", "1024-1024", false, "0..1023");
	expect_error("1,1", "1-1,,", false, "ranges for 2 groups");
	expect_error("1,1", "1-1,", false, "range 1 \"\"");
	assert_int_equal(parse("1,1", " na , 3-3 ", true), 0);
	assert_false(w.group[0].pinned);
	assert_int_equal(droce_workers_cpu(&w, 1, 0), 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_one_worker),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_group_limits),
		cmocka_unit_test(test_cpuset_design_example),
		cmocka_unit_test(test_cpuset_modulo),
		cmocka_unit_test(test_fewer_ranges_than_groups),
		cmocka_unit_test(test_cpuset_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
