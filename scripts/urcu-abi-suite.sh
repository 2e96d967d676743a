#!/usr/bin/env bash
# liburcu's own test programs, built against liburcu itself WITHOUT
# _LGPL_SOURCE (so that every urcu_memb_* name is a call into liburcu.so),
# run on liburcu and then, unchanged, with LD_PRELOAD=libreadmostly-urcu.so.
#
# The programs come from Debian's liburcu 0.13.2 source package (sha256
# checked, as scripts/urcu-suite.sh fetches it); nothing of them enters the
# repository.  They are built as liburcu's own "dynamic link" variants
# (-DDYNAMIC_LINK_TEST, which leaves _LGPL_SOURCE undefined); urcutorture.c
# defines _LGPL_SOURCE unconditionally, so its copy here has that one line
# removed.  Each binary is checked with nm: no reference to urcu_memb_gp or
# urcu_memb_reader (it calls the functions).  Under the preload every run
# must pass and print the library's statistics line (READMOSTLY_STATS=1:
# the library served the calls; grace periods or callbacks counted where
# the program makes them).
#
# The refusal path: test_urcu and urcutorture built WITH _LGPL_SOURCE (as
# liburcu's Makefile builds them by default) under the preload: exactly one
# line naming the program, the run passes (through liburcu), and the
# statistics line says the calls were forwarded.
#
#   DURATION=2  WORK=build-urcu-abi  URCU_PRELOAD=path/to/libreadmostly-urcu.so
# About 2 minutes at DURATION=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${DURATION:-2}
WORK=${WORK:-$ROOT/build-urcu-abi}
MIRROR=${MIRROR:-http://deb.debian.org/debian/pool/main}

NAME=urcu-abi-suite
# shellcheck source=scripts/urcu-source.sh
. scripts/urcu-source.sh
urcu_source_prepare

if [ -z "${URCU_PRELOAD:-}" ]; then
  cmake -S . -B "$WORK/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADMOSTLY_BUILD_BENCH=OFF >/dev/null
  cmake --build "$WORK/build" -j"$(nproc)" --target readmostly-urcu >/dev/null
  URCU_PRELOAD=$WORK/build/preload/libreadmostly-urcu.so
fi
[ -f "$URCU_PRELOAD" ] || { echo "urcu-abi-suite: $URCU_PRELOAD not found" >&2; exit 1; }

T=$URCU_SRC/tests
BIN=$WORK/bin
mkdir -p "$BIN"
# urcutorture.c without its "#define _LGPL_SOURCE" (the only change).
grep -q '^#define _LGPL_SOURCE$' "$T/regression/urcutorture.c"
sed '/^#define _LGPL_SOURCE$/d' "$T/regression/urcutorture.c" > "$T/regression/urcutorture_dyn.c"

# What liburcu's configure would find on Debian 12.
CFLAGS=(-O2 -g -D_GNU_SOURCE -DRCU_MEMBARRIER -DHAVE_GETTID=1 -DHAVE_RAND_R=1 -DHAVE_SCHED_SETAFFINITY=1
        -I"$T/common" -I"$T/utils" -I"$T/../src" -w)
failed=0
declare -A built
build() { # name dyn|lgpl source extra-libs...
  local name=$1 kind=$2 src=$3
  shift 3
  local def=()
  [ "$kind" = dyn ] && def=(-DDYNAMIC_LINK_TEST)
  local srcs=("$T/$src" "$T/utils/tap.c")
  [ -f "$T/common/debug-yield.c" ] && srcs+=("$T/common/debug-yield.c")
  if cc "${CFLAGS[@]}" "${def[@]}" "${srcs[@]}" -o "$BIN/$name" "$@" -lurcu -lurcu-common -lpthread \
       2>"$BIN/$name.build.log"; then
    local refs
    refs=$(nm -D "$BIN/$name" | awk '$1 == "U" && ($2 == "urcu_memb_gp" || $2 == "urcu_memb_reader")' | wc -l)
    if [ "$kind" = dyn ] && [ "$refs" != 0 ]; then
      echo "urcu-abi-suite: $name references liburcu's data (built with _LGPL_SOURCE?)"; failed=1; return
    fi
    if [ "$kind" = lgpl ] && [ "$refs" = 0 ]; then
      echo "urcu-abi-suite: $name (with _LGPL_SOURCE) does not reference liburcu's data"; failed=1; return
    fi
    built[$name]=1
  else
    echo "BUILD FAILED: $name (see $BIN/$name.build.log)"
    failed=1
  fi
}
build rcutorture dyn regression/urcutorture_dyn.c
build fork dyn regression/test_urcu_fork.c
build test_urcu dyn benchmark/test_urcu.c
build test_urcu_gc dyn benchmark/test_urcu_gc.c
build test_urcu_defer dyn benchmark/test_urcu_defer.c
build test_urcu_lfq dyn benchmark/test_urcu_lfq.c -lurcu-cds
build test_urcu_lfs_rcu dyn benchmark/test_urcu_lfs_rcu.c -lurcu-cds
build test_urcu_lgpl lgpl benchmark/test_urcu.c
build rcutorture_lgpl lgpl regression/urcutorture.c

# run name what args...: what is "gp" (grace periods must be counted),
# "cb" (callbacks too), "any" (the statistics line only) or "refusal".
run() {
  local name=$1 what=$2
  shift 2
  [ -n "${built[$name]:-}" ] || return 0
  local r_u r_p why="" st=""
  timeout 300 "$BIN/$name" "$@" >"$BIN/out.urcu" 2>&1 && r_u=pass || r_u="FAIL($?)"
  if timeout 300 env LD_PRELOAD="$URCU_PRELOAD" READMOSTLY_STATS=1 "$BIN/$name" "$@" >"$BIN/out.rm" 2>&1; then
    r_p=pass

    st=$(grep '^readmostly-urcu: pid=' "$BIN/out.rm" | tail -1 || true)
    case $what in
    refusal)
      [ "$(grep -c "^readmostly-urcu: .*/$name uses liburcu's inline read side" "$BIN/out.rm")" = 1 ] ||
        why="want exactly one line naming $name"
      grep -q 'forwarded to liburcu (an object inlines' <<<"$st" || why="${why:+$why; }the calls were not forwarded" ;;
    *)
      grep -q 'impl=fcp-rcu' <<<"$st" || why="no statistics line: the library did not serve the calls"
      grep -q "inline read side" "$BIN/out.rm" && why="refused a program that calls the functions"
      if [ "$what" = gp ] || [ "$what" = cb ]; then
        grep -Eq 'grace_periods=[1-9]' <<<"$st" || why="${why:+$why; }no grace period counted"
      fi
      if [ "$what" = cb ]; then
        grep -Eq 'callbacks_run=[1-9]' <<<"$st" || why="${why:+$why; }no callback counted"
      fi ;;
    esac
    [ -z "$why" ] || r_p="FAIL($why)"
  else
    r_p="FAIL($?)"
  fi
  printf '%-18s %-34s liburcu %-9s preloaded %s\n' "$name" "$*" "$r_u" "$r_p"
  [ -n "$st" ] && [ "$what" != refusal ] && echo "    ${st#readmostly-urcu: }"
  if [ "$r_p" != pass ]; then
    failed=1
    sed 's/^/    /' "$BIN/out.rm" | tail -20
  fi
}

run rcutorture cb 2 stress "$DURATION" callrcu_global
run rcutorture cb 2 stress "$DURATION" callrcu_percpu
run rcutorture cb 2 stress "$DURATION" callrcu_perthread
run rcutorture cb 4 stress "$DURATION" callrcu_global
run rcutorture gp 2 perf "$DURATION"
run rcutorture any 2 rperf "$DURATION"
run rcutorture gp 2 uperf "$DURATION"
run fork cb
run test_urcu gp 2 2 "$DURATION" -d 0
run test_urcu gp 4 1 "$DURATION" -d 10
run test_urcu_gc gp 2 2 "$DURATION" -d 0 -b 1
run test_urcu_gc gp 2 2 "$DURATION" -d 0 -b 1024
run test_urcu_defer cb 2 2 "$DURATION" -d 0
run test_urcu_lfq cb 1 1 "$DURATION"
run test_urcu_lfs_rcu cb 1 1 "$DURATION"
run test_urcu_lgpl refusal 2 2 "$DURATION" -d 0
run rcutorture_lgpl refusal 2 stress "$DURATION" callrcu_global

if [ $failed -ne 0 ]; then
  echo "urcu-abi-suite: FAILED"
  exit 1
fi
echo "urcu-abi-suite: every program passes under libreadmostly-urcu.so, and the refusal path holds"
