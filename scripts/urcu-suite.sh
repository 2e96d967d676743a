#!/usr/bin/env bash
# liburcu 0.13.2's own example and test programs, built UNCHANGED against
# readmostly's liburcu compat directory (include/readmostly/urcu-compat:
# -I<compat dir> -I<include> and libreadmostly instead of -lurcu*) and run
# beside the same programs built against liburcu itself.
#
# The programs come from Debian's liburcu 0.13.2 source package (checked
# against the sha256 in its .dsc); nothing of them enters the repository.
#  1. Every doc/examples program (urcu-flavors: memb, mb, signal, bp, qsbr;
#     list, hlist, rculfhash, rculfqueue, lfstack, wfcqueue, wfstack): built
#     with its Makefile's flags (-g -O2 -Wall) plus -Werror for ours, with
#     its LIBS minus liburcu's flavor libraries (the data structures'
#     liburcu-cds and liburcu-common stay: they are liburcu-dev's, not
#     ours); both outputs must be the same, up to the order of the lines
#     the examples label "random order" (the hash seed is the time).
#  2. Its tests for every flavor: rcutorture (memb, mb, signal, bp, qsbr:
#     stress with the global, per-CPU and per-thread call_rcu workers;
#     perf, rperf, uperf), test_urcu_fork, test_urcu (memb, mb, signal),
#     test_urcu_bp, test_urcu_qsbr, test_urcu_gc / _lgc (memb, mb, signal,
#     qsbr), test_urcu_defer, test_urcu_hash (qsbr), test_urcu_lfq,
#     test_urcu_lfs, test_urcu_lfs_rcu, test_urcu_wfq, test_urcu_wfcq.
#     (test_urcu_wfs exits 1 with liburcu itself here, and uses no flavor.)
# The qsbr programs are reported SKIP when this tree has no QSBR flavor
# (include/readmostly/rcu_qsbr.h).  Each test runs DURATION seconds
# (default 2) in both builds; the script prints one line per run and exits
# 1 if a program fails with readmostly (or fails to build, or an example's
# output differs) while it passes with liburcu.  About 13 minutes with
# DURATION=1 on 2 cores shared with other builds.
#   DURATION=2  WORK=build-urcu-suite
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${DURATION:-2}
WORK=${WORK:-$ROOT/build-urcu-suite}
MIRROR=${MIRROR:-http://deb.debian.org/debian/pool/main}

NAME=urcu-suite
# shellcheck source=scripts/urcu-source.sh
. scripts/urcu-source.sh
urcu_source_prepare

cmake -S . -B "$WORK/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADMOSTLY_BUILD_BENCH=OFF >/dev/null
cmake --build "$WORK/build" -j"$(nproc)" --target readmostly_static >/dev/null
LIB=$WORK/build/src/libreadmostly.a
COMPAT=(-I"$ROOT/include/readmostly/urcu-compat" -I"$ROOT/include")
HAVE_QSBR=0
[ -f "$ROOT/include/readmostly/rcu_qsbr.h" ] && HAVE_QSBR=1

T=$URCU_SRC/tests
EX=$URCU_SRC/doc/examples
BIN=$WORK/bin
rm -rf "$BIN"
mkdir -p "$BIN"
failed=0

# liburcu's flavor libraries: what readmostly replaces.
ours_libs() { local l out=(); for l in "$@"; do
  case $l in -lurcu|-lurcu-memb|-lurcu-mb|-lurcu-signal|-lurcu-bp|-lurcu-qsbr) ;; *) out+=("$l") ;; esac
done; echo "${out[@]}"; }

# ---- 1. doc/examples ---------------------------------------------------------
# The lines an example labels "random order": their words sorted.
canon() { awk '/random order/ { n = split($0, w, /[ \t]+/); head = ""; m = 0
    for (i = 1; i <= n; i++) if (w[i] ~ /:$/ || m == 0 && w[i] !~ /^-?[0-9]/) head = head " " w[i]; else v[++m] = w[i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    line = head; for (i = 1; i <= m; i++) line = line " " v[i]; print line; delete v; next } { print }'; }
n_ex=0
for mk in "$EX"/*/Makefile.*; do
  dir=$(dirname "$mk")
  name=$(sed -n 's/^EXAMPLE_NAME *= *//p' "$mk")
  [ -n "$name" ] || continue
  read -r -a libs <<<"$(sed -n 's/^LIBS *= *//p' "$mk")"
  sub=$(basename "$dir")/$name
  if [ "$name" = qsbr ] && [ $HAVE_QSBR = 0 ]; then
    printf '%-42s SKIP (this tree has no QSBR flavor)\n' "example $sub"
    continue
  fi
  out=$BIN/ex-$(basename "$dir")-$name
  if ! (cd "$dir" && cc -g -O2 -Wall "$name.c" -o "$out.urcu" "${libs[@]}" -lpthread) >"$out.build.log" 2>&1; then
    printf '%-42s liburcu does not build (skipped)\n' "example $sub"
    continue
  fi
  # shellcheck disable=SC2046
  if ! (cd "$dir" && cc -g -O2 -Wall -Werror "${COMPAT[@]}" "$name.c" -o "$out.rm" \
          $(ours_libs "${libs[@]}") "$LIB" -lpthread) >"$out.build.log" 2>&1; then
    printf '%-42s BUILD FAILED with readmostly\n' "example $sub"
    sed 's/^/    /' "$out.build.log" | head -20
    failed=1
    continue
  fi
  r_u=pass r_r=pass
  timeout 60 "$out.urcu" >"$out.out.urcu" 2>&1 || r_u="FAIL($?)"
  timeout 60 "$out.rm" >"$out.out.rm" 2>&1 || r_r="FAIL($?)"
  if [ "$r_r" = pass ] && ! diff <(canon <"$out.out.urcu") <(canon <"$out.out.rm") >"$out.diff"; then
    r_r="OUTPUT DIFFERS"
  fi
  printf '%-42s liburcu %-9s readmostly %s\n' "example $sub" "$r_u" "$r_r"
  if [ "$r_r" != pass ]; then
    failed=1
    sed 's/^/    /' "$out.diff" "$out.out.rm" 2>/dev/null | head -20
  fi
  n_ex=$((n_ex + 1))
done

# ---- 2. the tests, per flavor ------------------------------------------------
# What liburcu's configure would find on Debian 12.
CFLAGS=(-O2 -g -D_GNU_SOURCE -DHAVE_GETTID=1 -DHAVE_RAND_R=1 -DHAVE_SCHED_SETAFFINITY=1
        -I"$T/common" -I"$T/utils" -I"$T/../src" -w)
declare -A ok_build
build() { # name "flags" "liburcu libs" source...
  local name=$1 flags=$2 ulibs=$3
  shift 3
  local srcs=("$@" "$T/utils/tap.c")
  [ -f "$T/common/debug-yield.c" ] && srcs+=("$T/common/debug-yield.c")
  # shellcheck disable=SC2086
  if { cc "${CFLAGS[@]}" $flags "${srcs[@]}" -o "$BIN/$name.urcu" $ulibs -lpthread &&
       cc "${CFLAGS[@]}" $flags "${COMPAT[@]}" "${srcs[@]}" -o "$BIN/$name.rm" \
          $(ours_libs $ulibs) "$LIB" -lpthread; } 2>"$BIN/$name.build.log"; then
    ok_build[$name]=1
  else
    echo "BUILD FAILED: $name (see $BIN/$name.build.log)"
    sed 's/^/    /' "$BIN/$name.build.log" | head -10
    failed=1
  fi
}
B=$T/benchmark R=$T/regression
build rcutorture_memb "-DRCU_MEMBARRIER" "-lurcu" "$R/urcutorture.c"
build rcutorture_mb "-DRCU_MB" "-lurcu-mb" "$R/urcutorture.c"
build rcutorture_signal "-DRCU_SIGNAL" "-lurcu-signal" "$R/urcutorture.c"
build rcutorture_bp "-DRCU_BP" "-lurcu-bp" "$R/urcutorture.c"
build fork "-DRCU_MEMBARRIER" "-lurcu" "$R/test_urcu_fork.c"
build test_urcu "" "-lurcu" "$B/test_urcu.c"
build test_urcu_mb "-DRCU_MB" "-lurcu-mb" "$B/test_urcu.c"
build test_urcu_signal "-DRCU_SIGNAL" "-lurcu-signal" "$B/test_urcu.c"
build test_urcu_bp "" "-lurcu-bp" "$B/test_urcu_bp.c"
build test_urcu_gc "" "-lurcu" "$B/test_urcu_gc.c"
build test_urcu_lgc "-DTEST_LOCAL_GC" "-lurcu" "$B/test_urcu_gc.c"
build test_urcu_mb_gc "-DRCU_MB" "-lurcu-mb" "$B/test_urcu_gc.c"
build test_urcu_signal_gc "-DRCU_SIGNAL" "-lurcu-signal" "$B/test_urcu_gc.c"
build test_urcu_defer "" "-lurcu" "$B/test_urcu_defer.c"
build test_urcu_lfq "" "-lurcu -lurcu-cds" "$B/test_urcu_lfq.c"
build test_urcu_lfs "" "-lurcu -lurcu-cds" "$B/test_urcu_lfs.c"
build test_urcu_lfs_rcu "" "-lurcu -lurcu-cds" "$B/test_urcu_lfs_rcu.c"
build test_urcu_wfq "" "-lurcu -lurcu-common" "$B/test_urcu_wfq.c"
build test_urcu_wfcq "" "-lurcu-common" "$B/test_urcu_wfcq.c"
QSBR_TESTS=(rcutorture_qsbr test_urcu_qsbr test_urcu_qsbr_gc test_urcu_qsbr_lgc test_urcu_hash)
if [ $HAVE_QSBR = 1 ]; then
  build rcutorture_qsbr "-DTORTURE_QSBR -DRCU_QSBR" "-lurcu-qsbr" "$R/urcutorture.c"
  build test_urcu_qsbr "" "-lurcu-qsbr" "$B/test_urcu_qsbr.c"
  build test_urcu_qsbr_gc "" "-lurcu-qsbr" "$B/test_urcu_qsbr_gc.c"
  build test_urcu_qsbr_lgc "-DTEST_LOCAL_GC" "-lurcu-qsbr" "$B/test_urcu_qsbr_gc.c"
  build test_urcu_hash "-DRCU_QSBR" "-lurcu-qsbr -lurcu-common -lurcu-cds" \
    "$B/test_urcu_hash.c" "$B/test_urcu_hash_rw.c" "$B/test_urcu_hash_unique.c"
else
  for t in "${QSBR_TESTS[@]}"; do printf '%-22s SKIP (this tree has no QSBR flavor)\n' "$t"; done
fi

n_run=0
run() { # name args...
  local name=$1
  shift
  [ -n "${ok_build[$name]:-}" ] || return 0
  local r_u r_r
  timeout 300 "$BIN/$name.urcu" "$@" >"$BIN/out.urcu" 2>&1 && r_u=pass || r_u="FAIL($?)"
  timeout 300 "$BIN/$name.rm" "$@" >"$BIN/out.rm" 2>&1 && r_r=pass || r_r="FAIL($?)"
  printf '%-22s %-34s liburcu %-9s readmostly %s\n' "$name" "$*" "$r_u" "$r_r"
  n_run=$((n_run + 1))
  if [ "$r_r" != pass ] && [ "$r_u" = pass ]; then
    failed=1
    sed 's/^/    /' "$BIN/out.rm" | tail -20
  fi
}

for f in memb mb signal bp qsbr; do
  for w in callrcu_global callrcu_percpu callrcu_perthread; do run rcutorture_$f 2 stress "$DURATION" $w; done
  run rcutorture_$f 4 stress "$DURATION" callrcu_global
  run rcutorture_$f 2 perf "$DURATION"
  run rcutorture_$f 2 rperf "$DURATION"
  run rcutorture_$f 2 uperf "$DURATION"
done
run fork
for t in test_urcu test_urcu_mb test_urcu_signal test_urcu_bp test_urcu_qsbr; do
  run $t 2 2 "$DURATION" -d 0
  run $t 4 1 "$DURATION" -d 10
done
for t in test_urcu_gc test_urcu_mb_gc test_urcu_signal_gc test_urcu_qsbr_gc; do
  run $t 2 2 "$DURATION" -d 0 -b 1
  run $t 2 2 "$DURATION" -d 0 -b 1024
done
run test_urcu_lgc 2 2 "$DURATION" -d 0 -b 1024
run test_urcu_qsbr_lgc 2 2 "$DURATION" -d 0 -b 1024
run test_urcu_defer 2 2 "$DURATION" -d 0
run test_urcu_hash 2 2 "$DURATION"
run test_urcu_hash 2 2 "$DURATION" -A -s -M 1 -N 1 -O 1
for t in test_urcu_lfq test_urcu_lfs test_urcu_lfs_rcu test_urcu_wfq test_urcu_wfcq; do
  run $t 1 1 "$DURATION"
done

if [ $failed -ne 0 ]; then
  echo "urcu-suite: FAILED"
  exit 1
fi
echo "urcu-suite: $n_ex examples print what they print with liburcu; $n_run test runs pass with readmostly"
