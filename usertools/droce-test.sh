#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
#
# The test command: installs what is missing, builds, runs every test
# (unit, integration with kernel peers in network namespaces, independent
# decoders), the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the fuzz targets for a bounded time.
# Run as root: the integration tests create namespaces and veth pairs.
#
# Every stage runs even when an earlier one failed: a failing meson test
# must not hide a sanitizer report or a fuzz crash. Only a stage that
# needs an earlier one's result (the tests need their build) is skipped,
# and says why. The closing lines give each stage's outcome; the exit
# status is 1 when any stage failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# Where DPDK keeps each process's runtime folder (root); tests point it
# elsewhere.
rundir=${DROCE_TEST_RUNDIR:-/var/run/dpdk}

declare -a stages=()
declare -A outcome=()

# stage NAME NEEDED COMMAND...: run COMMAND as stage NAME, unless one of
# the stages in NEEDED (space-separated) did not pass.
stage() {
	local name=$1 needed=$2 n rc=0
	shift 2
	stages+=("$name")
	for n in $needed; do
		case ${outcome[$n]} in
		passed) continue ;;
		FAILED) outcome[$name]="skipped: needs $n, which FAILED" ;;
		*) outcome[$name]="skipped: needs $n, which was skipped" ;;
		esac
		echo "droce-test: $name ${outcome[$name]}"
		return 0
	done
	echo "droce-test: --- $name"
	"$@" || rc=$?
	if [ "$rc" = 0 ]; then
		outcome[$name]=passed
	else
		outcome[$name]=FAILED
		echo "droce-test: $name FAILED (exit status $rc)"
	fi
}

# droce runtime folders that are there now, one a line.
runtime_folders() {
	find "$rundir" -mindepth 1 -maxdepth 1 -name 'droce-*' 2>/dev/null | sort
}

# The tests remove the runtime folders their DPDK processes make; one left
# behind is a test to fix. Only folders that appeared during this run
# count (another run on the machine at the same time would show up too).
no_new_runtime_folders() {
	local left
	left=$(comm -13 "$1" <(runtime_folders))
	[ -z "$left" ] && return 0
	echo "droce-test: the tests left these runtime folders behind:"
	echo "$left" | sed 's/^/  /'
	return 1
}

folders_before=$(mktemp /tmp/droce-test-rundir.XXXXXX)
trap 'rm -f "$folders_before"' EXIT
runtime_folders >"$folders_before"

stage deps "" "$top/usertools/droce-deps.sh"
stage build "" "$top/usertools/droce-build.sh" build
stage build-asan "" "$top/usertools/droce-build.sh" build-asan \
	-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
stage tests build meson test -C "$top/build" --print-errorlogs
stage asan-tests build-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$top/build-asan" --suite unit --print-errorlogs
# Two processes through hcom4db.h over TCP and over RDMA, both sanitized
# (fewer calls: ASan is slow).
stage asan-hcom build-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 HCOM_STRESS_CALLS=20000 \
	HCOM_RDMA_CALLS=1000 HCOM_RDMA_INLINE_CALLS=10000 HCOM_RDMA_TLS_CALLS=2000 HCOM_STRESS_TLS_CALLS=2000 \
	HCOM_RDMA_BIG_CALLS=30 HCOM_RDMA_FAULT_CALLS=100 HCOM_RDMA_FAULT_RNDV_CALLS=30 \
	meson test -C "$top/build-asan" hcom_stress hcom_rdma --print-errorlogs
# The parsers of untrusted bytes under libFuzzer, for a bounded time; the
# seeds come from build's tools.
stage fuzz build "$top/usertools/droce-fuzz.sh" "${DROCE_FUZZ_SECONDS:-60}"
stage runtime-folders "" no_new_runtime_folders "$folders_before"

echo
echo "droce-test: stages"
failed=0
for s in "${stages[@]}"; do
	printf '  %-16s %s\n' "$s" "${outcome[$s]}"
	[ "${outcome[$s]}" != FAILED ] || failed=$((failed + 1))
done
if [ "$failed" -ne 0 ]; then
	echo "droce-test: $failed stage(s) FAILED"
	exit 1
fi
echo "droce-test: all tests passed"
