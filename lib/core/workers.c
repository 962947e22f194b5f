/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Worker groups and their cpu ranges, with hcom's rules:
 *   worker.thread.groups = "1,2,3"      three groups of 1, 2 and 3 workers
 *   worker.thread.cpuset = "1-1,2-3,na" group 0 on cpu 1, group 1 on 2-3,
 *                                       group 2 unpinned
 * A range is start-end with start <= end; there are no more ranges than
 * groups; a range never names more cpus than its group has workers; with
 * busy polling it names exactly as many; worker j runs on start + j % count.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "droce_core.h"
#include "core_private.h"

/* One comma-separated element, trimmed. */
struct list_elem {
	const char *start;
	size_t len;
};

/* Split @s at commas into at most @max elements; returns the count, or
 * max + 1 when there are more. Empty elements are kept (and rejected by
 * the callers with their position).
 */
static unsigned int
split_list(const char *s, struct list_elem *elem, unsigned int max)
{
	unsigned int n = 0;

	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end != NULL ? (size_t)(end - s) : strlen(s);

		if (n == max)
			return max + 1;
		elem[n].start = s;
		elem[n].len = len;
		droce_trim_span(&elem[n].start, &elem[n].len);
		n++;
		if (end == NULL)
			return n;
		s = end + 1;
	}
}

/* Decimal number without sign; false on anything else or overflow. */
static bool
parse_decimal(const char *s, size_t len, unsigned long max,
	      unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

static int
parse_groups(struct droce_workers *w, const char *groups,
	     char *err, size_t errlen)
{
	struct list_elem elem[DROCE_MAX_GROUPS + 1];
	unsigned int n;

	memset(w, 0, sizeof(*w));
	if (droce_is_blank(groups)) {
		w->nb_groups = 1;
		w->nb_workers = 1;
		w->group[0].workers = 1;
		return 0;
	}

	n = split_list(groups, elem, DROCE_MAX_GROUPS);
	if (n > DROCE_MAX_GROUPS) {
		snprintf(err, errlen,
			 "more than %u groups; allowed: 1..%u groups",
			 DROCE_MAX_GROUPS, DROCE_MAX_GROUPS);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned long workers;

		if (!parse_decimal(elem[i].start, elem[i].len,
				   DROCE_MAX_GROUP_WORKERS, &workers) ||
		    workers == 0) {
			snprintf(err, errlen,
				 "group %u: \"%.*s\" is not a worker count; allowed: 1..%u workers per group, e.g. \"1,2,3\"",
				 i, (int)elem[i].len, elem[i].start,
				 DROCE_MAX_GROUP_WORKERS);
			return -EINVAL;
		}
		w->group[i].workers = (uint16_t)workers;
		w->nb_workers += (uint32_t)workers;
	}
	w->nb_groups = (uint16_t)n;
	return 0;
}

static int
parse_range(struct droce_worker_group *g, unsigned int i,
	    const struct list_elem *e, bool busy_poll,
	    char *err, size_t errlen)
{
	const char *dash = memchr(e->start, '-', e->len);
	unsigned long first, last, count;
	const char *hint = "a range is \"start-end\" (cpu numbers 0..1023, start <= end) or \"na\"";

	if (e->len == 2 && strncmp(e->start, "na", 2) == 0) {
		g->pinned = false;
		return 0;
	}
	if (dash == NULL ||
	    !parse_decimal(e->start, (size_t)(dash - e->start),
			   CPU_SETSIZE - 1, &first) ||
	    !parse_decimal(dash + 1, e->len - (size_t)(dash - e->start) - 1,
			   CPU_SETSIZE - 1, &last)) {
		snprintf(err, errlen, "range %u \"%.*s\" is not a cpu range; %s",
			 i, (int)e->len, e->start, hint);
		return -EINVAL;
	}
	if (first > last) {
		snprintf(err, errlen, "range %u \"%.*s\": start is after end; %s",
			 i, (int)e->len, e->start, hint);
		return -EINVAL;
	}
	count = last - first + 1;
	if (count > g->workers) {
		snprintf(err, errlen,
			 "range %u \"%.*s\" names %lu cpus but group %u has %u worker%s; a range may not name more cpus than its group has workers",
			 i, (int)e->len, e->start, count, i, g->workers,
			 g->workers == 1 ? "" : "s");
		return -EINVAL;
	}
	if (busy_poll && count != g->workers) {
		snprintf(err, errlen,
			 "range %u \"%.*s\" names %lu cpu%s but group %u has %u workers; with worker.poll.enable=yes every busy-polling worker needs its own cpu, so the counts must be equal",
			 i, (int)e->len, e->start, count, count == 1 ? "" : "s",
			 i, g->workers);
		return -EINVAL;
	}
	g->pinned = true;
	g->cpu_first = (uint16_t)first;
	g->cpu_count = (uint16_t)count;
	return 0;
}

int
droce_workers_parse(struct droce_workers *w, const char *groups,
		    const char *cpuset, bool busy_poll,
		    char *err, size_t errlen)
{
	struct list_elem elem[DROCE_MAX_GROUPS + 1];
	unsigned int n;
	int ret;

	ret = parse_groups(w, groups != NULL ? groups : "", err, errlen);
	if (ret != 0 || cpuset == NULL || droce_is_blank(cpuset))
		return ret;

	n = split_list(cpuset, elem, w->nb_groups);
	if (n > w->nb_groups) {
		/* split_list stops at the limit; count all for the message. */
		unsigned int given = 1;

		for (const char *p = cpuset; *p != '\0'; p++)
			given += *p == ',';
		snprintf(err, errlen,
			 "%u ranges for %u group%s; allowed: at most one range per group",
			 given, w->nb_groups, w->nb_groups == 1 ? "" : "s");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < n; i++) {
		ret = parse_range(&w->group[i], i, &elem[i], busy_poll,
				  err, errlen);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int
droce_workers_cpu(const struct droce_workers *w, uint16_t group,
		  uint16_t index)
{
	const struct droce_worker_group *g;

	if (group >= w->nb_groups)
		return -1;
	g = &w->group[group];
	if (!g->pinned)
		return -1;
	return g->cpu_first + index % g->cpu_count;
}
