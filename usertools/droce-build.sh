#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# droce-build.sh [BUILD_DIR [meson options...]]: configure (once) and build.
# Default: ./build, release. Example for the sanitizers:
#   usertools/droce-build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
case $dir in /*) ;; *) dir=$top/$dir ;; esac
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$top" "$@"
elif [ $# -gt 0 ]; then
	meson configure "$dir" "$@"
fi
ninja -C "$dir"
