/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 droce developers
 */

/*
 * Where configuration keys come from: the INI file and the command line.
 *
 * The file's values are read with rte_cfgfile. rte_cfgfile keeps no line
 * numbers and silently cuts long lines, names and values, so a scan of the
 * file comes first: it checks the syntax line by line, rejects what
 * rte_cfgfile would truncate or merge, and remembers the line of each key
 * for the messages later stages print.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cfgfile.h>
#include <rte_string_fns.h>

#include "core_private.h"

#define COMMENT_CHAR '#'
/* rte_cfgfile reads a line into CFG_NAME_LEN + CFG_VALUE_LEN + 4 bytes. */
#define MAX_LINE_LEN (CFG_NAME_LEN + CFG_VALUE_LEN + 2)
/* rte_cfgfile's name for entries before any section. */
#define GLOBAL_SECTION "GLOBAL"

/* Where each key of the file stands, found by the scan. */
struct key_line {
	char key[DROCE_CONF_KEY_LEN];
	unsigned int line;
};

struct file_scan {
	const char *file;
	unsigned int nb_keys;
	struct key_line keys[DROCE_CONF_MAX_ENTRIES];
};

static void
full_key(char *out, size_t len, const char *section, const char *name)
{
	if (section[0] == '\0' || strcmp(section, GLOBAL_SECTION) == 0)
		snprintf(out, len, "%s", name);
	else
		snprintf(out, len, "%s.%s", section, name);
}

static const struct key_line *
scan_find(const struct file_scan *scan, const char *key)
{
	for (unsigned int i = 0; i < scan->nb_keys; i++)
		if (strcmp(scan->keys[i].key, key) == 0)
			return &scan->keys[i];
	return NULL;
}

/* Strip one pair of surrounding double quotes: groups = "1,2,3". */
static void
unquote(const char **value, size_t *len)
{
	if (*len >= 2 && (*value)[0] == '"' && (*value)[*len - 1] == '"') {
		(*value)++;
		*len -= 2;
	}
}

int
conf_entry_index(const struct droce_conf *conf, const char *key)
{
	for (unsigned int i = 0; i < conf->nb_entries; i++)
		if (strcmp(conf->entry[i].key, key) == 0)
			return (int)i;
	return -1;
}

int
conf_entry_set(struct droce_conf *conf, const char *key, const char *value,
	       size_t value_len, const char *origin, char *err, size_t errlen)
{
	int index = conf_entry_index(conf, key);
	struct droce_conf_entry *e = index >= 0 ? &conf->entry[index] : NULL;

	unquote(&value, &value_len);
	if (value_len >= DROCE_CONF_VALUE_LEN) {
		snprintf(err, errlen,
			 "%s: %s: value is %zu characters long; at most %u allowed",
			 origin, key, value_len, DROCE_CONF_VALUE_LEN - 1);
		return -EINVAL;
	}
	if (e == NULL) {
		if (conf->nb_entries == DROCE_CONF_MAX_ENTRIES) {
			snprintf(err, errlen,
				 "%s: %s: more than %u keys; allowed: at most %u distinct keys",
				 origin, key, DROCE_CONF_MAX_ENTRIES,
				 DROCE_CONF_MAX_ENTRIES);
			return -E2BIG;
		}
		e = &conf->entry[conf->nb_entries++];
		rte_strscpy(e->key, key, sizeof(e->key));
	}
	memcpy(e->value, value, value_len);
	e->value[value_len] = '\0';
	rte_strscpy(e->origin, origin, sizeof(e->origin));
	return 0;
}

static int
scan_error(const struct file_scan *scan, unsigned int line, char *err,
	   size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s:%u: %s", scan->file, line, what);
	return -EINVAL;
}

static int
scan_too_long(const struct file_scan *scan, unsigned int line, char *err,
	      size_t errlen, const char *what, size_t len, unsigned int max)
{
	snprintf(err, errlen, "%s:%u: %s is %zu characters long; at most %u allowed",
		 scan->file, line, what, len, max);
	return -EINVAL;
}

static int
scan_section(struct file_scan *scan, unsigned int lineno, const char *text,
	     size_t len, char *section, char *err, size_t errlen)
{
	const char *name = text + 1;
	size_t name_len;

	if (text[len - 1] != ']')
		return scan_error(scan, lineno, err, errlen,
				  "section header without a closing ']'; allowed: [name]");
	name_len = len - 2;
	droce_trim_span(&name, &name_len);
	if (name_len == 0)
		return scan_error(scan, lineno, err, errlen,
				  "empty section name; allowed: [name], e.g. [worker] or [port.0]");
	if (name_len >= CFG_NAME_LEN)
		return scan_too_long(scan, lineno, err, errlen, "section name",
				     name_len, CFG_NAME_LEN - 1);
	memcpy(section, name, name_len);
	section[name_len] = '\0';
	return 0;
}

static int
scan_entry(struct file_scan *scan, unsigned int lineno, const char *text,
	   size_t len, const char *section, char *err, size_t errlen)
{
	const char *eq = memchr(text, '=', len);
	const char *name = text, *value;
	size_t name_len, value_len;
	const struct key_line *seen;
	struct key_line *kl;
	char name_buf[CFG_NAME_LEN];
	char what[DROCE_CONF_KEY_LEN + 96];

	if (eq == NULL)
		return scan_error(scan, lineno, err, errlen,
				  "not a section, key or comment; allowed: [section], key = value, # comment");
	name_len = (size_t)(eq - text);
	droce_trim_span(&name, &name_len);
	value = eq + 1;
	value_len = (size_t)(text + len - value);
	droce_trim_span(&value, &value_len);
	if (name_len == 0)
		return scan_error(scan, lineno, err, errlen,
				  "'=' without a key before it; allowed: key = value");
	if (name_len >= CFG_NAME_LEN)
		return scan_too_long(scan, lineno, err, errlen, "key", name_len,
				     CFG_NAME_LEN - 1);
	if (value_len >= CFG_VALUE_LEN)
		return scan_too_long(scan, lineno, err, errlen, "value",
				     value_len, CFG_VALUE_LEN - 1);
	if (scan->nb_keys == DROCE_CONF_MAX_ENTRIES) {
		snprintf(what, sizeof(what),
			 "more than %u keys; allowed: at most %u distinct keys",
			 DROCE_CONF_MAX_ENTRIES, DROCE_CONF_MAX_ENTRIES);
		return scan_error(scan, lineno, err, errlen, what);
	}

	memcpy(name_buf, name, name_len);
	name_buf[name_len] = '\0';
	kl = &scan->keys[scan->nb_keys];
	full_key(kl->key, sizeof(kl->key), section, name_buf);
	seen = scan_find(scan, kl->key);
	if (seen != NULL) {
		snprintf(what, sizeof(what),
			 "key '%s' given twice (first at line %u); allowed: each key once",
			 kl->key, seen->line);
		return scan_error(scan, lineno, err, errlen, what);
	}
	kl->line = lineno;
	scan->nb_keys++;
	return 0;
}

/* One line: comment, blank, [section] or key = value. */
static int
scan_line(struct file_scan *scan, unsigned int lineno, char *line,
	  size_t len, char *section, char *err, size_t errlen)
{
	const char *text = line;
	const char *comment;

	if (memchr(line, '\0', len) != NULL)
		return scan_error(scan, lineno, err, errlen,
				  "NUL byte in the line; allowed: text");
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len > MAX_LINE_LEN)
		return scan_too_long(scan, lineno, err, errlen, "line", len,
				     MAX_LINE_LEN);
	comment = memchr(line, COMMENT_CHAR, len);
	if (comment != NULL)
		len = (size_t)(comment - line);
	droce_trim_span(&text, &len);
	if (len == 0)
		return 0;
	if (text[0] == '[')
		return scan_section(scan, lineno, text, len, section, err,
				    errlen);
	return scan_entry(scan, lineno, text, len, section, err, errlen);
}

static int
scan_file(struct file_scan *scan, char *err, size_t errlen)
{
	char section[CFG_NAME_LEN] = "";
	unsigned int lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	f = fopen(scan->file, "r");
	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot read the configuration file: %s",
			 scan->file, strerror(errno));
		return -ENOENT;
	}
	while (ret == 0 && (n = getline(&line, &cap, f)) >= 0)
		ret = scan_line(scan, ++lineno, line, (size_t)n, section, err,
				errlen);
	if (ret == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error: %s", scan->file,
			 strerror(errno));
		ret = -EIO;
	}
	free(line);
	fclose(f);
	return ret;
}

/* Copy rte_cfgfile's entries of one section into the configuration. */
static int
copy_section(struct droce_conf *conf, const struct file_scan *scan,
	     struct rte_cfgfile *cfg, int index, char *err, size_t errlen)
{
	struct rte_cfgfile_entry *entries;
	char section[CFG_NAME_LEN];
	int n, ret = 0;

	entries = calloc(DROCE_CONF_MAX_ENTRIES, sizeof(*entries));
	if (entries == NULL) {
		snprintf(err, errlen, "%s: out of memory", scan->file);
		return -ENOMEM;
	}
	n = rte_cfgfile_section_entries_by_index(cfg, index, section, entries,
						 DROCE_CONF_MAX_ENTRIES);
	for (int i = 0; ret == 0 && i < n; i++) {
		char key[DROCE_CONF_KEY_LEN];
		char origin[DROCE_CONF_ORIGIN_LEN];
		const struct key_line *kl;

		full_key(key, sizeof(key), section, entries[i].name);
		kl = scan_find(scan, key);
		if (kl == NULL) {
			snprintf(err, errlen,
				 "%s: rte_cfgfile read key '%s' that the line scan did not see",
				 scan->file, key);
			ret = -EINVAL;
			break;
		}
		snprintf(origin, sizeof(origin), "%s:%u", scan->file, kl->line);
		ret = conf_entry_set(conf, key, entries[i].value,
				     strlen(entries[i].value), origin, err,
				     errlen);
	}
	free(entries);
	return ret;
}

int
conf_read_file(struct droce_conf *conf, const char *file, char *err,
	       size_t errlen)
{
	const struct rte_cfgfile_parameters params = {
		.comment_character = COMMENT_CHAR,
	};
	struct file_scan *scan;
	struct rte_cfgfile *cfg;
	int ret;

	scan = calloc(1, sizeof(*scan));
	if (scan == NULL) {
		snprintf(err, errlen, "%s: out of memory", file);
		return -ENOMEM;
	}
	scan->file = file;
	ret = scan_file(scan, err, errlen);
	if (ret != 0)
		goto out;

	cfg = rte_cfgfile_load_with_params(file,
			CFG_FLAG_GLOBAL_SECTION | CFG_FLAG_EMPTY_VALUES,
			&params);
	if (cfg == NULL) {
		snprintf(err, errlen, "%s: rte_cfgfile could not load the file",
			 file);
		ret = -EINVAL;
		goto out;
	}
	for (int s = 0; ret == 0 && s < rte_cfgfile_num_sections(cfg, NULL, 0);
	     s++)
		ret = copy_section(conf, scan, cfg, s, err, errlen);
	rte_cfgfile_close(cfg);
out:
	free(scan);
	return ret;
}

int
conf_read_override(struct droce_conf *conf, const char *arg, char *err,
		   size_t errlen)
{
	const char *eq = strchr(arg, '=');
	const char *key = arg, *value;
	size_t key_len, value_len;
	char origin[DROCE_CONF_ORIGIN_LEN];
	char key_buf[DROCE_CONF_KEY_LEN];

	snprintf(origin, sizeof(origin), "command line '%s'", arg);
	if (eq == NULL) {
		snprintf(err, errlen,
			 "%s: not a key=value override; allowed: key=value, e.g. worker.poll.enable=no",
			 origin);
		return -EINVAL;
	}
	key_len = (size_t)(eq - arg);
	droce_trim_span(&key, &key_len);
	value = eq + 1;
	value_len = strlen(value);
	droce_trim_span(&value, &value_len);
	if (key_len == 0 || key_len >= sizeof(key_buf)) {
		snprintf(err, errlen,
			 "%s: key must be 1..%zu characters; allowed: key=value",
			 origin, sizeof(key_buf) - 1);
		return -EINVAL;
	}
	memcpy(key_buf, key, key_len);
	key_buf[key_len] = '\0';
	return conf_entry_set(conf, key_buf, value, value_len, origin, err,
			      errlen);
}
