#!/bin/sh
# urcu_abi_check.sh MODE LIB PROGRAM [ARGS...]: run PROGRAM (a test built
# against liburcu) and check what libreadmostly-urcu.so LIB did.
#   liburcu   no preload: the test itself must pass
#   preload   LD_PRELOAD=LIB: passes, the library served the calls, and its
#             statistics line shows grace periods and callbacks
#   refusal   LD_PRELOAD=LIB on a program built with _LGPL_SOURCE: passes,
#             one line names the program, every call went to liburcu
mode=$1 lib=$2 prog=$3
shift 3
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
fail() { echo "urcu_abi_check: $mode: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
case $mode in
liburcu) "$prog" "$@" >"$out" 2>"$err" || fail "exit $?" ;;
preload)
  env LD_PRELOAD="$lib" READMOSTLY_STATS=1 EXPECT_URCU_ABI=1 "$prog" "$@" >"$out" 2>"$err" || fail "exit $?"
  grep -q 'ok (readmostly-urcu' "$out" || fail "the library did not serve the calls"
  grep -Eq '^readmostly-urcu: pid=[0-9]+ impl=fcp-rcu grace_periods=[1-9][0-9]* .* callbacks_run=[1-9]' "$err" ||
    fail "no statistics line with grace periods and callbacks"
  [ "$(grep -c 'inline read side' "$err")" = 0 ] || fail "a refusal line without cause" ;;
refusal)
  env LD_PRELOAD="$lib" READMOSTLY_STATS=1 EXPECT_URCU_ABI=2 "$prog" "$@" >"$out" 2>"$err" || fail "exit $?"
  grep -q 'ok (forwarded to liburcu' "$out" || fail "the calls were not forwarded"
  [ "$(grep -c "^readmostly-urcu: .*$(basename "$prog") uses liburcu's inline read side (urcu_memb_" "$err")" = 1 ] ||
    fail "want exactly one line naming the program"
  grep -q 'forwarded to liburcu (an object inlines' "$err" || fail "no statistics line saying so" ;;
*) fail "unknown mode" ;;
esac
cat "$out"
