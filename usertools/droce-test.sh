#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# The test command: installs what is missing, builds, runs every test
# (unit, integration with kernel peers in network namespaces, independent
# decoders), the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the fuzz targets for a bounded time.
# Run as root: the integration tests create namespaces and veth pairs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/usertools/droce-deps.sh"
"$top/usertools/droce-build.sh" build
"$top/usertools/droce-build.sh" build-asan \
	-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

meson test -C "$top/build" --print-errorlogs
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$top/build-asan" --suite unit --print-errorlogs
# The parsers of untrusted bytes under libFuzzer, for a bounded time.
"$top/usertools/droce-fuzz.sh" "${DROCE_FUZZ_SECONDS:-60}"
echo "droce-test: all tests passed"
