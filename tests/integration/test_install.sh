#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libdroce installs with headers and a pkg-config file, and a program
# outside the tree compiles and links against it with pkg-config alone.
set -euo pipefail
build=${1:?build directory}
dest=$(mktemp -d /tmp/droce-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet >/dev/null ||
	fail "meson install"
pc=$(find "$dest" -name libdroce.pc | head -1)
[ -n "$pc" ] || fail "no libdroce.pc installed"
# The staged copy lives under $dest: point its prefix there (only its own;
# libdpdk.pc stays as installed).
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir "$dest/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$dest/pc/libdroce.pc"
export PKG_CONFIG_PATH=$dest/pc
flags=$(pkg-config --cflags --libs libdroce) || fail "pkg-config libdroce"

cat >"$dest/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <droce_core.h>
#include <droce_net.h>

int main(void)
{
	static struct droce_conf conf;
	char err[DROCE_ERR_LEN];
	char *kv[] = { "worker.thread.groups=1,2" };

	if (droce_conf_load(&conf, NULL, kv, 1, err, sizeof(err)) != 0)
		return 1;
	printf("%u workers, %s\n", conf.workers.nb_workers,
	       droce_drop_reason_name(DROCE_DROP_IP_FRAGMENT));
	return 0;
}
C
# DPDK headers want the GNU dialect (ssize_t, cpu_set_t), as DPDK apps use.
cc -std=gnu11 -Wall -Wextra -Werror -o "$dest/app" "$dest/app.c" $flags || fail "compile and link"
out=$("$dest/app") || fail "run"
[ "$out" = "3 workers, ip_fragment" ] || fail "program printed '$out'"
echo PASS
