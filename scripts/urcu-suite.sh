#!/usr/bin/env bash
# liburcu's own test programs, built unchanged against readmostly's <urcu.h>
# shim (a two-line file that includes <readmostly/urcu.h>) and linked with
# libreadmostly, beside the same programs built against liburcu itself.
#
# The programs come from Debian's liburcu 0.13.2 source package (checked
# against the sha256 in its .dsc); nothing of them enters the repository:
#   regression/urcutorture.c (RCU_MEMBARRIER: the default flavor) in its
#     stress mode with the global, per-CPU and per-thread call_rcu workers,
#     and its perf, rperf and uperf modes
#   regression/test_urcu_fork.c   fork() with call_rcu, in parent and child
#   benchmark/test_urcu.c, test_urcu_gc.c (batched retirement),
#     test_urcu_defer.c (defer_rcu), test_urcu_lfq.c and test_urcu_lfs_rcu.c
#     (liburcu-cds's lock-free queue and stack, through call_rcu)
# Each program runs DURATION seconds (default 2) in both builds; the script
# prints one line per run and exits 1 if a program fails with readmostly (or
# fails to build) while it passes with liburcu.  About 1.5 minutes.
#   DURATION=2  WORK=build-urcu-suite
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${DURATION:-2}
WORK=${WORK:-$ROOT/build-urcu-suite}
MIRROR=${MIRROR:-http://deb.debian.org/debian/pool/main}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v cc >/dev/null || need+=(gcc)
command -v curl >/dev/null || need+=(curl)
command -v bzip2 >/dev/null || need+=(bzip2)
[ -f /usr/include/x86_64-linux-gnu/urcu/arch.h ] || [ -f /usr/include/urcu/arch.h ] || need+=(liburcu-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; fi
fi

mkdir -p "$WORK"
cmake -S . -B "$WORK/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADMOSTLY_BUILD_BENCH=OFF >/dev/null
cmake --build "$WORK/build" -j"$(nproc)" --target readmostly_static >/dev/null
LIB=$WORK/build/src/libreadmostly.a

tarball=$WORK/liburcu_0.13.2.orig.tar.bz2
sum=1213fd9f1b0b74da7de2bb74335b76098db9738fec5d3cdc07c0c524f34fc032
if [ ! -f "$tarball" ] || ! echo "$sum  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
  curl -fsSL -o "$tarball" "$MIRROR/libu/liburcu/liburcu_0.13.2.orig.tar.bz2"
  echo "$sum  $tarball" | sha256sum -c --quiet - || { echo "urcu-suite: checksum mismatch" >&2; exit 1; }
fi
rm -rf "$WORK/userspace-rcu-0.13.2"
tar xjf "$tarball" -C "$WORK"
T=$WORK/userspace-rcu-0.13.2/tests
SHIM=$WORK/shim
mkdir -p "$SHIM" "$WORK/bin"
printf '/* liburcu'"'"'s default flavor, served by readmostly */\n#include <readmostly/urcu.h>\n' >"$SHIM/urcu.h"

# What liburcu's configure would find on Debian 12.
CFLAGS=(-O2 -g -D_GNU_SOURCE -DRCU_MEMBARRIER -DHAVE_GETTID=1 -DHAVE_RAND_R=1 -DHAVE_SCHED_SETAFFINITY=1
        -I"$T/common" -I"$T/utils" -I"$T/../src" -w)
build() { # name source... -- extra libs ; builds name.urcu and name.rm
  local name=$1
  shift
  local srcs=() libs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do srcs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  libs=("$@")
  cc "${CFLAGS[@]}" "${srcs[@]}" -o "$WORK/bin/$name.urcu" "${libs[@]}" -lurcu -lurcu-common -lpthread
  cc "${CFLAGS[@]}" -I"$SHIM" -I"$ROOT/include" "${srcs[@]}" -o "$WORK/bin/$name.rm" \
    "$LIB" "${libs[@]}" -lurcu-common -lpthread
}

failed=0
declare -A ok_build
for p in rcutorture:regression/urcutorture.c fork:regression/test_urcu_fork.c \
         test_urcu:benchmark/test_urcu.c test_urcu_gc:benchmark/test_urcu_gc.c \
         test_urcu_defer:benchmark/test_urcu_defer.c \
         test_urcu_lfq:benchmark/test_urcu_lfq.c:-lurcu-cds \
         test_urcu_lfs_rcu:benchmark/test_urcu_lfs_rcu.c:-lurcu-cds; do
  IFS=: read -r name src extra <<<"$p"
  srcs=("$T/$src" "$T/utils/tap.c")
  [ -f "$T/common/debug-yield.c" ] && srcs+=("$T/common/debug-yield.c")
  if build "$name" "${srcs[@]}" -- $extra 2>"$WORK/bin/$name.build.log"; then
    ok_build[$name]=1
  else
    echo "BUILD FAILED: $name (see $WORK/bin/$name.build.log)"
    failed=1
  fi
done

run() { # name args...
  local name=$1
  shift
  [ -n "${ok_build[$name]:-}" ] || return 0
  local r_u r_r
  timeout 300 "$WORK/bin/$name.urcu" "$@" >"$WORK/bin/out.urcu" 2>&1 && r_u=pass || r_u="FAIL($?)"
  timeout 300 "$WORK/bin/$name.rm" "$@" >"$WORK/bin/out.rm" 2>&1 && r_r=pass || r_r="FAIL($?)"
  printf '%-22s %-34s liburcu %-9s readmostly %s\n' "$name" "$*" "$r_u" "$r_r"
  if [ "$r_r" != pass ] && [ "$r_u" = pass ]; then
    failed=1
    sed 's/^/    /' "$WORK/bin/out.rm" | tail -20
  fi
}

run rcutorture 2 stress "$DURATION" callrcu_global
run rcutorture 2 stress "$DURATION" callrcu_percpu
run rcutorture 2 stress "$DURATION" callrcu_perthread
run rcutorture 4 stress "$DURATION" callrcu_global
run rcutorture 2 perf "$DURATION"
run rcutorture 2 rperf "$DURATION"
run rcutorture 2 uperf "$DURATION"
run fork
run test_urcu 2 2 "$DURATION" -d 0
run test_urcu 4 1 "$DURATION" -d 10
run test_urcu_gc 2 2 "$DURATION" -d 0 -b 1
run test_urcu_gc 2 2 "$DURATION" -d 0 -b 1024
run test_urcu_defer 2 2 "$DURATION" -d 0
run test_urcu_lfq 1 1 "$DURATION"
run test_urcu_lfs_rcu 1 1 "$DURATION"

if [ $failed -ne 0 ]; then
  echo "urcu-suite: FAILED"
  exit 1
fi
echo "urcu-suite: every program passes with readmostly"
