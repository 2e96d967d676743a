#!/usr/bin/env bash
# The report section "BRAVO's future directions" (issue 30): plain BRAVO
# against BRAVO-2D, side by side.
#
#   scripts/report-bravo-future.sh [--build DIR] [--out DIR] [--quick]
#
# Writes into --out (default: results/runs/bravo-future-<UTC time>, ignored
# by git):
#   bravo-future.md    the section: tables of instruction counts and times
#   instructions.csv   callgrind instructions per operation
#   results.csv        readmostly-bench's rows (revocation, readers, scan)
#
# Instructions per operation are the difference of two callgrind runs of
# --iterations 2000 and 1000, divided by 1000 (start-up and warm-up cancel
# out): they do not depend on how busy the machine is.  Times do: the
# section says so and they are for a quiet machine to settle.
# --build DIR uses an existing build (readmostly-bench in DIR/bench);
# otherwise the script builds build-bravo-future/ (Release).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=""
OUT="results/runs/bravo-future-$(date -u +%Y%m%dT%H%M%SZ)"
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--out DIR] [--quick]" >&2; exit 2 ;;
  esac
done
if [ -z "$BUILD" ]; then
  BUILD=build-bravo-future
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target readmostly-bench >/dev/null
fi
BENCH=$BUILD/bench/readmostly-bench
[ -x "$BENCH" ] || { echo "no $BENCH" >&2; exit 1; }
mkdir -p "$OUT"
DUR=1
REPS=3
[ "$QUICK" = 1 ] && { DUR=0.1; REPS=1; }

# ---- instruction counts ------------------------------------------------------
# count EXPERIMENT ITERATIONS ARGS...: callgrind's total instructions.
count() {
  local exp=$1 it=$2
  shift 2
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BENCH" "$exp" --iterations "$it" \
    --reps 1 "$@" 2>&1 >/dev/null | awk '/Collected :/ {print $NF}'
}
# per_op EXPERIMENT ARGS...: instructions per iteration.
per_op() {
  local a b
  a=$(count "$1" 1000 "${@:2}")
  b=$(count "$1" 2000 "${@:2}")
  echo $(( (b - a) / 1000 ))
}
ICSV=$OUT/instructions.csv
echo "what,impl,param,instructions" >"$ICSV"
if command -v valgrind >/dev/null; then
  for impl in bravo-ba bravo2d-ba bravo-pthread bravo2d-pthread; do
    for s in 4096 16384 65536; do
      r=$(per_op revocation --impl "$impl" --param "slots=$s" --param part=revoke)
      b=$(per_op revocation --impl "$impl" --param "slots=$s" --param part=base)
      echo "revoking_iteration,$impl,slots=$s,$r" >>"$ICSV"
      echo "iteration_bias_off,$impl,slots=$s,$b" >>"$ICSV"
      echo "revocation,$impl,slots=$s,$((r - b))" >>"$ICSV"
    done
    echo "read_pair,$impl,,$(per_op latency --impl "$impl" --param op=read)" >>"$ICSV"
  done
  help=$("$BENCH" --help 2>&1 || true)
  if grep -q '^  scan ' <<<"$help"; then
    for m in plain sse2 avx2; do
      for s in 4096 16384 65536; do
        echo "scan_$m,table,slots=$s,$(per_op scan --param "slots=$s" --param "method=$m")" >>"$ICSV"
      done
    done
  fi
else
  echo "# valgrind not installed: no instruction counts" >>"$ICSV"
fi

# ---- times (noisy unless the machine is quiet) ------------------------------------
RCSV=$OUT/results.csv
"$BENCH" revocation --impl bravo-ba,bravo2d-ba,bravo-pthread,bravo2d-pthread \
  --duration "$DUR" --reps "$REPS" --csv "$RCSV" >/dev/null
"$BENCH" readers --impl bravo-ba,bravo2d-ba,bravo-pthread,bravo2d-pthread --threads 1,2,8 \
  --duration "$DUR" --reps "$REPS" --csv "$RCSV.readers" >/dev/null
grep -v '^#' "$RCSV.readers" | tail -n +2 >>"$RCSV"
# Readers' tail while a writer revokes every 100 us (bravo-ba brings its
# Listing 1 form, bravo-ba-listing1, along).
"$BENCH" revoke_tail --impl bravo-ba,bravo2d-ba --threads 1 --duration "$DUR" --reps "$REPS" \
  --csv "$RCSV.tail" >/dev/null
grep -v '^#' "$RCSV.tail" | tail -n +2 >>"$RCSV"
rm -f "$RCSV.tail"
# BRAVO-2D with the second probe, as impl "bravo2d-ba+probe2".
READMOSTLY_BRAVO2D_PROBE2=1 "$BENCH" readers --impl bravo2d-ba --threads 1,2,8 \
  --duration "$DUR" --reps "$REPS" --csv "$RCSV.readers" >/dev/null
grep -v '^#' "$RCSV.readers" | tail -n +2 | sed 's/^readers,bravo2d-ba,/readers,bravo2d-ba+probe2,/' >>"$RCSV"
rm -f "$RCSV.readers"

# ---- the section -------------------------------------------------------------------
med() { # med IMPL THREADS PARAM METRIC: median over repetitions
  awk -F, -v i="$1" -v t="$2" -v p="$3" -v m="$4" \
    '$2 == i && $3 == t && $4 == p && $6 == m {print $7}' "$RCSV" | sort -g |
    awk '{v[NR] = $1} END {if (NR) printf "%.4g", v[int((NR + 1) / 2)]; else printf "-"}'
}
ins() { awk -F, -v w="$1" -v i="$2" -v p="$3" '$1 == w && $2 == i && $3 == p {print $4}' "$ICSV"; }
{
  echo "## BRAVO's future directions"
  echo
  echo "Plain BRAVO (one flat table) against BRAVO-2D (a row per CPU; a writer"
  echo "scans one slot per row).  Instructions from callgrind (difference of"
  echo "2000 and 1000 iterations); times from readmostly-bench on $(nproc) CPUs,"
  echo "noisy unless the machine was quiet.  See docs/bravo-future.md."
  echo
  echo "### Revocation: instructions per revocation (a revoking write minus a non-revoking one)"
  echo
  echo "| slots | bravo-ba | bravo2d-ba | ratio | bravo-pthread | bravo2d-pthread | ratio |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for s in 4096 16384 65536; do
    a=$(ins revocation bravo-ba "slots=$s"); b=$(ins revocation bravo2d-ba "slots=$s")
    c=$(ins revocation bravo-pthread "slots=$s"); d=$(ins revocation bravo2d-pthread "slots=$s")
    ra=$(awk -v x="$a" -v y="$b" 'BEGIN {if (y > 0) printf "%.0fx", x / y; else print "-"}')
    rc=$(awk -v x="$c" -v y="$d" 'BEGIN {if (y > 0) printf "%.0fx", x / y; else print "-"}')
    echo "| $s | $a | $b | $ra | $c | $d | $rc |"
  done
  echo
  echo "### Revocation: ns per revocation and the scan's share (noisy)"
  echo
  echo "| slots | impl | ns_per_revocation | scan_share |"
  echo "| ---: | --- | ---: | ---: |"
  for s in 4096 16384 65536; do
    for i in bravo-ba bravo2d-ba bravo-pthread bravo2d-pthread; do
      echo "| $s | $i | $(med "$i" 1 "slots=$s" ns_per_revocation) | $(med "$i" 1 "slots=$s" scan_share) |"
    done
  done
  echo
  echo "### Readers"
  echo
  echo "| impl | instructions per read pair | ops/s at 1 thread | 2 threads | 8 threads |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for i in bravo-ba bravo2d-ba bravo2d-ba+probe2 bravo-pthread bravo2d-pthread; do
    echo "| $i | $(ins read_pair "$i" "") | $(med "$i" 1 "" ops_per_sec) | $(med "$i" 2 "" ops_per_sec) | $(med "$i" 8 "" ops_per_sec) |"
  done
  echo
  echo "### Readers while a writer revokes every 100 us (1 reader, noisy)"
  echo
  echo "| impl | p99 ns | p99.9 ns | p99.99 ns | max ns |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for i in bravo-ba-listing1 bravo-ba bravo2d-ba; do
    echo "| $i | $(med "$i" 1 period_us=100 read_p99_ns) | $(med "$i" 1 period_us=100 read_p999_ns) | $(med "$i" 1 period_us=100 read_p9999_ns) | $(med "$i" 1 period_us=100 read_max_ns) |"
  done
  if grep -q '^scan_' "$ICSV"; then
    echo
    echo "### The flat table's scan alone: instructions per scan"
    echo
    echo "| slots | plain C | SSE2 | AVX2 |"
    echo "| ---: | ---: | ---: | ---: |"
    for s in 4096 16384 65536; do
      echo "| $s | $(ins scan_plain table "slots=$s") | $(ins scan_sse2 table "slots=$s") | $(ins scan_avx2 table "slots=$s") |"
    done
  fi
} >"$OUT/bravo-future.md"
echo "wrote $OUT/bravo-future.md"
