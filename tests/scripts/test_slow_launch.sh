#!/usr/bin/env bash
# test_slow_launch.sh - a machine where mpiexec is slow to start says so at once: where the
# host name does not resolve, every mpiexec waits seconds and the suite would run for
# hours; scripts/test.sh times one start first and stops with the reason, before building.
# And a script test that runs into ctest's time limit (which kills it with SIGKILL) says
# beforehand what it was doing.
. "$(dirname "$0")/lib.sh"
sx_normal_build_only "the launcher check of test.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)

# Stand-ins: a launcher that takes 2 s, or none; the host name; dpkg-query (every package
# installed: setup.sh installs nothing); cmake, which must not be reached when the start
# is slow.
f="$TMP/fake"
mkdir -p "$f"
printf '#!/bin/sh\nsleep 2\n' >"$f/slow-mpiexec"
printf '#!/bin/sh\nexit 0\n' >"$f/quick-mpiexec"
printf '#!/bin/sh\necho "$SX_FAKE_HOST"\n' >"$f/hostname"
printf '#!/bin/sh\necho "install ok installed"\n' >"$f/dpkg-query"
printf '#!/bin/sh\ntouch "%s/cmake.ran"\nexit 99\n' "$TMP" >"$f/cmake"
chmod +x "$f"/*

# run_test_sh LAUNCHER HOST: scripts/test.sh with the stand-ins, at most 30 s
run_test_sh() {
    rm -f "$TMP/cmake.ran"
    local t0=$SECONDS
    PATH="$f:$PATH" SX_MPIEXEC="$f/$1" SX_FAKE_HOST=$2 SX_LAUNCH_LIMIT=1 BUILD_DIR="$TMP/build" \
        timeout -k 5 30 bash "$top/scripts/test.sh" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    took=$((SECONDS - t0))
}

run_test_sh slow-mpiexec sx-no-such-host.invalid
[ "$rc" = 1 ] && [ ! -e "$TMP/cmake.ran" ] && [ "$took" -lt 20 ] &&
    grep -q "slow-mpiexec takes 2\.[0-9] s to start: the host name 'sx-no-such-host.invalid' does not resolve; add it to /etc/hosts" "$TMP/err" &&
    ok || bad "slow start, unresolvable host: status $rc after $took s, built: $([ -e "$TMP/cmake.ran" ] && echo yes || echo no): $(cat "$TMP/err")"

run_test_sh slow-mpiexec localhost
[ "$rc" = 1 ] && [ ! -e "$TMP/cmake.ran" ] && grep -q "slow-mpiexec takes 2\.[0-9] s to start (over 1 s)" "$TMP/err" &&
    ! grep -q "does not resolve" "$TMP/err" && ok ||
    bad "slow start, host resolves: status $rc, built: $([ -e "$TMP/cmake.ran" ] && echo yes || echo no): $(cat "$TMP/err")"

run_test_sh quick-mpiexec sx-no-such-host.invalid
[ -e "$TMP/cmake.ran" ] && ! grep -q "to start" "$TMP/err" && ok ||
    bad "a quick start does not go on to the build: status $rc: $(cat "$TMP/err")"

# A test killed by the time limit: before it, the watchdog names what runs and where.
cat >"$TMP/stuck.sh" <<EOF2
. "$top/tests/scripts/lib.sh"
ok
sleep 27
echo "not reached"
EOF2
SX_TEST_TIMEOUT=4 timeout -s KILL 4 bash "$TMP/stuck.sh" >"$TMP/stuck.out" 2>"$TMP/stuck.err"
rc=$?
[ "$rc" = 137 ] && grep -q "TIMEOUT SOON: stuck.sh still running after [0-9]* s of its 4 s" "$TMP/stuck.err" &&
    grep -q "sleep 27" "$TMP/stuck.err" && ok ||
    bad "a test killed at its time limit: status $rc, stderr: $(cat "$TMP/stuck.err")"
finish
