/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Lcore layout: lcore 0 is the control lcore (the EAL main lcore), lcores
 * 1..N are the workers in group order. Without an lcore option from the
 * user, droce writes the EAL --lcores value from the configuration; with
 * one, it checks after rte_eal_init() that the EAL's lcores agree.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "core_private.h"

/* "0-3,6" for a cpu set; false when @len is too small ("..." at its end). */
int
droce_eal_start(struct droce_eal_start *st, const struct droce_conf *conf, int argc,
		char **argv, char *err, size_t errlen)
{
	int n = 0;

	st->lcore_option = droce_lcores_find_eal_option(argc, argv, st->given, sizeof(st->given));
	if (st->lcore_option == NULL &&
	    droce_lcores_eal_arg(conf, st->lcores, sizeof(st->lcores), err, errlen) != 0)
		return 2;
	st->argv = calloc((size_t)argc + 3, sizeof(*st->argv));
	if (st->argv == NULL) {
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	for (int i = 0; i < argc; i++)
		st->argv[n++] = argv[i];
	if (st->lcore_option == NULL) {
		st->argv[n++] = (char *)"--lcores";
		st->argv[n++] = st->lcores;
	}
	st->argc = n;
	if (rte_eal_init(st->argc, st->argv) < 0) {
		snprintf(err, errlen, "rte_eal_init failed: %s", rte_strerror(rte_errno));
		free(st->argv);
		st->argv = NULL;
		return 1;
	}
	return 0;
}

void
droce_eal_stop(struct droce_eal_start *st)
{
	rte_eal_cleanup();
	free(st->argv);
	st->argv = NULL;
}

static bool
cpuset_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	int ret = 0;

	buf[0] = '\0';
	for (int cpu = 0; cpu < CPU_SETSIZE && ret == 0; cpu++) {
		int last = cpu;

		if (!CPU_ISSET(cpu, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		ret = last == cpu
			? droce_str_append(buf, len, &used, "%s%d", used ? "," : "", cpu)
			: droce_str_append(buf, len, &used, "%s%d-%d", used ? "," : "",
					   cpu, last);
		cpu = last;
	}
	return ret == 0;
}

static int
check_pinned_cpus(const struct droce_conf *conf, const cpu_set_t *allowed,
		  cpu_set_t *pinned, char *err, size_t errlen)
{
	const struct droce_workers *w = &conf->workers;
	char list[256];

	CPU_ZERO(pinned);
	for (uint16_t g = 0; g < w->nb_groups; g++) {
		const struct droce_worker_group *grp = &w->group[g];

		if (!grp->pinned)
			continue;
		for (uint16_t c = grp->cpu_first;
		     c < grp->cpu_first + grp->cpu_count; c++) {
			if (CPU_ISSET(c, allowed)) {
				CPU_SET(c, pinned);
				continue;
			}
			cpuset_format(allowed, list, sizeof(list));
			snprintf(err, errlen,
				 "%s: worker.thread.cpuset pins group %u to cpu %u, which this process may not use; allowed cpus: %s",
				 droce_conf_origin(conf, "worker.thread.cpuset"),
				 g, c, list);
			return -EINVAL;
		}
	}
	return 0;
}

static int
choose_control_cpu(const struct droce_conf *conf, const cpu_set_t *allowed,
		   const cpu_set_t *pinned, char *err, size_t errlen)
{
	char list[256];
	int first_allowed = -1;

	if (conf->control_cpu >= 0) {
		if (CPU_ISSET(conf->control_cpu, allowed))
			return conf->control_cpu;
		cpuset_format(allowed, list, sizeof(list));
		snprintf(err, errlen,
			 "%s: control.cpu = \"%d\": this process may not use that cpu; allowed cpus: %s",
			 droce_conf_origin(conf, "control.cpu"),
			 conf->control_cpu, list);
		return -EINVAL;
	}
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, allowed))
			continue;
		if (first_allowed < 0)
			first_allowed = c;
		if (!CPU_ISSET(c, pinned))
			return c;
	}
	/* Every cpu has a pinned worker: share the first one. */
	return first_allowed;
}

int
droce_lcores_eal_arg(const struct droce_conf *conf, char *buf, size_t len,
		     char *err, size_t errlen)
{
	const struct droce_workers *w = &conf->workers;
	cpu_set_t allowed, pinned, floating;
	char floating_list[1024];
	unsigned int lcore = 1;
	size_t used;
	int control, n;

	if (w->nb_workers + 1 > RTE_MAX_LCORE) {
		snprintf(err, errlen,
			 "%s: worker.thread.groups asks for %u workers; with the control lcore that is more than the %u lcores this DPDK build allows (RTE_MAX_LCORE)",
			 droce_conf_origin(conf, "worker.thread.groups"),
			 w->nb_workers, RTE_MAX_LCORE);
		return -EINVAL;
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		snprintf(err, errlen, "cannot read the process's cpu affinity: %s",
			 strerror(errno));
		return -errno;
	}
	if (check_pinned_cpus(conf, &allowed, &pinned, err, errlen) != 0)
		return -EINVAL;
	control = choose_control_cpu(conf, &allowed, &pinned, err, errlen);
	if (control < 0)
		return -EINVAL;

	/* Unpinned workers float over the cpus that neither a pinned worker
	 * nor the control lcore owns, where any are left.
	 */
	CPU_XOR(&floating, &allowed, &pinned);
	if (CPU_COUNT(&floating) > 1)
		CPU_CLR(control, &floating);
	if (CPU_COUNT(&floating) == 0)
		floating = allowed;
	cpuset_format(&floating, floating_list, sizeof(floating_list));

	n = snprintf(buf, len, "0@%d", control);
	if (n < 0 || (size_t)n >= len)
		goto too_long;
	used = (size_t)n;
	for (uint16_t g = 0; g < w->nb_groups; g++) {
		for (uint16_t j = 0; j < w->group[g].workers; j++, lcore++) {
			int cpu = droce_workers_cpu(w, g, j);

			if (cpu >= 0)
				n = snprintf(buf + used, len - used, ",%u@%d",
					     lcore, cpu);
			else
				n = snprintf(buf + used, len - used, ",%u@(%s)",
					     lcore, floating_list);
			if (n < 0 || (size_t)n >= len - used)
				goto too_long;
			used += (size_t)n;
		}
	}
	return 0;
too_long:
	snprintf(err, errlen, "the EAL --lcores value for %u workers is longer than %zu characters",
		 w->nb_workers, len - 1);
	return -EINVAL;
}

const char *
droce_lcores_find_eal_option(int argc, char *const argv[], char *buf,
			     size_t len)
{
	static const char *const opts[] = { "--lcores", "-l", "-c" };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			break;
		for (unsigned int k = 0; k < RTE_DIM(opts); k++) {
			size_t ol = strlen(opts[k]);

			if (strncmp(a, opts[k], ol) != 0)
				continue;
			if (a[ol] == '\0' && i + 1 < argc) {
				snprintf(buf, len, "%s %s", a, argv[i + 1]);
				return buf;
			}
			/* -l0-3, -cf, --lcores=... */
			if (a[ol] != '\0' && (ol == 2 || a[ol] == '=')) {
				snprintf(buf, len, "%s", a);
				return buf;
			}
		}
	}
	return NULL;
}

static bool
lcore_on_single_cpu(unsigned int lcore, int cpu)
{
	rte_cpuset_t set = rte_lcore_cpuset(lcore);

	return CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set);
}

static void
lcore_cpus(unsigned int lcore, char *buf, size_t len)
{
	rte_cpuset_t set = rte_lcore_cpuset(lcore);

	cpuset_format(&set, buf, len);
}

int
droce_lcores_layout(const struct droce_conf *conf, const char *eal_option,
		    struct droce_lcore_layout *layout,
		    char *err, size_t errlen)
{
	const struct droce_workers *w = &conf->workers;
	const char *given = eal_option != NULL ? eal_option
					       : "--lcores (built by droce)";
	unsigned int lcore, i = 0;
	char cpus[256];

	memset(layout, 0, sizeof(*layout));
	layout->control_lcore = rte_get_main_lcore();
	if (rte_lcore_count() - 1 != w->nb_workers) {
		snprintf(err, errlen,
			 "EAL option '%s' gives %u worker lcore%s, but worker.thread.groups (%s) asks for %u worker%s; give %u lcores in all (one control lcore plus the workers) or leave out the EAL lcore option and droce builds it",
			 given, rte_lcore_count() - 1,
			 rte_lcore_count() == 2 ? "" : "s",
			 droce_conf_origin(conf, "worker.thread.groups"),
			 w->nb_workers, w->nb_workers == 1 ? "" : "s",
			 w->nb_workers + 1);
		return -EINVAL;
	}
	if (conf->control_cpu >= 0 &&
	    !lcore_on_single_cpu(layout->control_lcore, conf->control_cpu)) {
		lcore_cpus(layout->control_lcore, cpus, sizeof(cpus));
		snprintf(err, errlen,
			 "EAL option '%s' runs the main (control) lcore %u on cpus %s, but control.cpu = %d (%s)",
			 given, layout->control_lcore, cpus, conf->control_cpu,
			 droce_conf_origin(conf, "control.cpu"));
		return -EINVAL;
	}

	/* Workers in lcore id order, as RTE_LCORE_FOREACH_WORKER walks them. */
	lcore = (unsigned int)-1;
	for (uint16_t g = 0; g < w->nb_groups; g++) {
		for (uint16_t j = 0; j < w->group[g].workers; j++, i++) {
			int cpu = droce_workers_cpu(w, g, j);

			lcore = rte_get_next_lcore(lcore, 1, 0);
			layout->worker_lcore[i] = (uint16_t)lcore;
			layout->worker_group[i] = g;
			layout->worker_index[i] = j;
			if (cpu < 0 || lcore_on_single_cpu(lcore, cpu))
				continue;
			lcore_cpus(lcore, cpus, sizeof(cpus));
			snprintf(err, errlen,
				 "EAL option '%s' runs worker lcore %u on cpus %s, but worker.thread.cpuset (%s) pins worker %u of group %u to cpu %d",
				 given, lcore, cpus,
				 droce_conf_origin(conf, "worker.thread.cpuset"),
				 j, g, cpu);
			return -EINVAL;
		}
	}
	layout->nb_workers = w->nb_workers;
	return 0;
}

int
droce_lcores_layout_here(const struct droce_conf *conf, struct droce_lcore_layout *layout,
			 char *err, size_t errlen)
{
	const struct droce_workers *w = &conf->workers;
	unsigned int here = rte_lcore_id();
	uint32_t i = 0;

	memset(layout, 0, sizeof(*layout));
	if (!conf->workers_inline) {
		snprintf(err, errlen,
			 "a stack on one thread needs worker.inline = yes (%s)",
			 droce_conf_origin(conf, "worker.inline"));
		return -EINVAL;
	}
	if (here >= RTE_MAX_LCORE) {
		snprintf(err, errlen,
			 "this thread has no lcore id: run it on an EAL lcore or call rte_thread_register() first");
		return -EINVAL;
	}
	layout->control_lcore = here;
	for (uint16_t g = 0; g < w->nb_groups; g++)
		for (uint16_t j = 0; j < w->group[g].workers; j++, i++) {
			layout->worker_lcore[i] = (uint16_t)here;
			layout->worker_group[i] = g;
			layout->worker_index[i] = j;
		}
	layout->nb_workers = w->nb_workers;
	return 0;
}
