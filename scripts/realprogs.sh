#!/usr/bin/env bash
# Real programs, stock glibc against libreadmostly-preload.so: RocksDB's
# db_bench and Kyoto Cabinet's kccachetest, unmodified, at 1, 2 and 4
# threads, in REPS rounds; in each round the three variants of a benchmark
# run back to back (stock; preload = the interposer's default, BRAVO;
# prwlock = READMOSTLY_RWLOCK=prwlock), and a ratio is the median over the
# rounds of the ratio within each round.  Writes into OUT (default
# results/runs/<UTC date-time>-realprogs/; scripts/report.sh passes its run's):
#   realprogs.csv        every run: program,benchmark,threads,variant,rep,metric,value
#   realprogs-stats.txt  READMOSTLY_STATS=1 output of one run of each interposer variant
#   realprogs.md         the table with ratios and the checks
#   realprogs-instructions.csv  instructions per operation at 1 thread
#                        (callgrind; skipped without valgrind or with CALLGRIND=0)
#   realprogs-run.txt    the sizes of the runs (for --render)
# Installs rocksdb-tools and kyotocabinet-utils from Debian when missing; a
# program that cannot be installed is skipped with a message.  Every run must
# succeed (exit 0, db_bench finds every key it reads, kccachetest prints "ok"
# and no error line), or the script fails.
#   scripts/realprogs.sh [--quick] | --render DIR
#   --quick       short runs, 1 rep (QUICK=1 does the same)
#   --render DIR  only rewrite DIR's realprogs.md from the CSV files in it
#   PRELOAD=path/to/libreadmostly-preload.so  (default: build it in build/)
#   REPS=7  THREADS="1 2 4"  CALLGRIND=0|1  KNOT=0 (skip Knot DNS)
# Then Knot DNS on stock liburcu against libreadmostly-urcu.so
# (scripts/knot-urcu.sh, its own rounds: knot.csv, knot.md, knot-stats.txt),
# shown at the end of realprogs.md.
set -euo pipefail
# The whole script is read before it runs (the braces close at its end), so
# editing or updating it during a run cannot change what the run does.
{
cd "$(dirname "$0")/.."
ROOT=$PWD
usage() { echo "usage: scripts/realprogs.sh [--quick] | --render DIR  (environment: OUT PRELOAD REPS THREADS CALLGRIND)"; }
QUICK=${QUICK:-0}
RENDER=""
while [ $# -gt 0 ]; do
  case $1 in
  --quick) QUICK=1 ;;
  --render) [ $# -ge 2 ] && [ -n "$2" ] || { echo "realprogs: --render needs a directory" >&2; usage >&2; exit 2; }
            RENDER=$2; shift ;;
  -h|--help) usage; exit 0 ;;
  *) echo "realprogs: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
case $QUICK in 0|1) ;; *) echo "realprogs: QUICK must be 0 or 1, not '$QUICK'" >&2; exit 2 ;; esac
if [ -n "$RENDER" ]; then
  OUT=$RENDER
  [ -f "$OUT/realprogs.csv" ] || { echo "realprogs: $OUT/realprogs.csv not found: nothing to render" >&2; exit 2; }
fi
OUT=${OUT:-results/runs/$(date -u +%Y%m%dT%H%M%SZ)-realprogs}
if [ "$QUICK" = 1 ]; then REPS=${REPS:-1}; DUR=1; KCN=50000; KCW=20000; DBN=20000
else REPS=${REPS:-7}; DUR=3; KCN=300000; KCW=200000; DBN=100000; fi
# wicked at 1 thread runs for about 0.1 s at KCW records, too short to tell
# a few per cent from noise, and its check (>= 0.95) is the tightest: five
# times the records there.
KCW1=$((KCW * 5))
kcw() { if [ "$1" = 1 ]; then echo "$KCW1"; else echo "$KCW"; fi; }
THREADS=${THREADS:-"1 2 4"}
if [ "$QUICK" = 1 ]; then CGN=(5000 15000); else CGN=(20000 60000); fi
CSV=$OUT/realprogs.csv
STATS=$OUT/realprogs-stats.txt
MD=$OUT/realprogs.md
ICSV=$OUT/realprogs-instructions.csv
UNITS=$ROOT/scripts/units.awk
# A rendered run's sizes are its own (a run made before this file existed
# used the full sizes above).
if [ -n "$RENDER" ] && [ -f "$OUT/realprogs-run.txt" ]; then
  # shellcheck disable=SC1091
  . "$OUT/realprogs-run.txt"
fi
if [ -n "$RENDER" ]; then
  REPS=$(awk -F, 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 > r {r = $5} END{print r + 0}' "$CSV")
  THREADS=$(awk -F, 'NR > 1 {print $3}' "$CSV" | sort -un | tr '\n' ' ')
  THREADS=${THREADS% }
fi

if [ -z "$RENDER" ]; then
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
need=()
command -v db_bench >/dev/null || need+=(rocksdb-tools)
command -v kccachetest >/dev/null || need+=(kyotocabinet-utils)
if [ ${#need[@]} -gt 0 ]; then
  echo "realprogs: installing ${need[*]}"
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null; } ||
    echo "realprogs: could not install ${need[*]}"
fi
have_db=0; have_kc=0
command -v db_bench >/dev/null && have_db=1 || echo "realprogs: db_bench unavailable (rocksdb-tools): skipped"
command -v kccachetest >/dev/null && have_kc=1 || echo "realprogs: kccachetest unavailable (kyotocabinet-utils): skipped"

if [ -z "${PRELOAD:-}" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target readmostly-preload >/dev/null
  PRELOAD=$ROOT/build/preload/libreadmostly-preload.so
fi
[ -f "$PRELOAD" ] || { echo "realprogs: $PRELOAD not found" >&2; exit 1; }
mkdir -p "$OUT"
echo "realprogs: writing $OUT"
{ echo "REPS=$REPS DUR=$DUR KCN=$KCN KCW=$KCW KCW1=$KCW1 DBN=$DBN QUICK=$QUICK"
  echo "CGN=(${CGN[*]})"
  echo "DB_VERSION='$(dpkg-query -W -f='${Version}' rocksdb-tools 2>/dev/null || echo '?')'"
  echo "KC_VERSION='$(dpkg-query -W -f='${Version}' kyotocabinet-utils 2>/dev/null || echo '?')'"; } > "$OUT/realprogs-run.txt"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "program,benchmark,threads,variant,rep,metric,value" > "$CSV"
: > "$STATS"

fail() { echo "realprogs: FAILED: $*" >&2; echo "--- output:" >&2; tail -20 "$TMP/out" >&2; exit 1; }

# run_env VARIANT STATSFLAG cmd...: run with or without the interposer.
run_env() {
  local v=$1 st=$2; shift 2
  if [ "$v" != stock ]; then
    # preload: the default (BRAVO); prwlock: READMOSTLY_RWLOCK=prwlock.
    local impl=bravo
    [ "$v" = prwlock ] && impl=prwlock
    env LD_PRELOAD="$PRELOAD" READMOSTLY_RWLOCK="$impl" READMOSTLY_STATS="$st" "$@" > "$TMP/out" 2>&1 ||
      fail "$* (exit $?)"
    # The interposer must really be there: with stats on it reports itself.
    if [ "$st" = 1 ] && ! grep -q '^readmostly-preload: impl=' "$TMP/out"; then
      fail "no statistics line: the interposer was not active"
    fi
  else
    env -u LD_PRELOAD "$@" > "$TMP/out" 2>&1 || fail "$* (exit $?)"
  fi
}

# db_bench: fillseq then readwhilewriting on a fresh database, with the
# paper's options where this version accepts them (cuckoo memtables are
# gone from RocksDB 7: skip_list).
dbbench() { # variant threads rep statsflag
  local v=$1 t=$2 r=$3 st=$4
  rm -rf "$TMP/db"
  run_env "$v" "$st" db_bench --benchmarks=fillseq,readwhilewriting --db="$TMP/db" \
    --threads="$t" --num="$DBN" --duration="$DUR" --memtablerep=skip_list \
    --inplace_update_support=1 --allow_concurrent_memtable_write=0 \
    --inplace_update_num_locks=1 --progress_reports=false --stats_interval=0
  local fs rw found
  fs=$(sed -n 's/^fillseq *:.* \([0-9.]*\) ops\/sec.*/\1/p' "$TMP/out")
  rw=$(sed -n 's/^readwhilewriting *:.* \([0-9.]*\) ops\/sec.*/\1/p' "$TMP/out")
  found=$(sed -n 's/^readwhilewriting .*(\([0-9]*\) of \([0-9]*\) found).*/\1 \2/p' "$TMP/out")
  [ -n "$fs" ] && [ -n "$rw" ] || fail "db_bench printed no throughput"
  [ -n "$found" ] && [ "${found% *}" = "${found#* }" ] && [ "${found% *}" -gt 0 ] ||
    fail "db_bench did not find every key: ${found:-no count}"
  echo "db_bench,fillseq,$t,$v,$r,ops_per_sec,$fs" >> "$CSV"
  echo "db_bench,readwhilewriting,$t,$v,$r,ops_per_sec,$rw" >> "$CSV"
  if [ "$st" = 1 ]; then { echo "## db_bench T=$t $v"; grep '^readmostly-preload:' "$TMP/out"; echo; } >> "$STATS"; fi
}

# kccachetest: records per second over the whole test (T threads each
# handle rnum records).
kctest() { # mode rnum variant threads rep statsflag
  local m=$1 n=$2 v=$3 t=$4 r=$5 st=$6 t0 t1
  t0=$(date +%s.%N)
  run_env "$v" "$st" kccachetest "$m" -th "$t" "$n"
  t1=$(date +%s.%N)
  grep -q '^ok$' "$TMP/out" || fail "kccachetest $m did not print ok"
  ! grep -qi 'error' "$TMP/out" || fail "kccachetest $m printed an error line"
  # The program times its own phases ("time: S" lines); their sum leaves
  # out process start-up and exit.  Wall time if it printed none.
  local secs
  secs=$(awk '/^time: [0-9.]+$/ {s += $2; n++} END{ if (n) printf "%.6f", s }' "$TMP/out")
  [ -n "$secs" ] && awk -v s="$secs" 'BEGIN{exit !(s > 0)}' || secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", b-a}')
  echo "kccachetest,$m,$t,$v,$r,records_per_sec,$(awk -v s="$secs" -v n="$n" -v t="$t" 'BEGIN{printf "%.0f", n*t/s}')" >> "$CSV"
  if [ "$st" = 1 ]; then { echo "## kccachetest $m T=$t $v"; grep '^readmostly-preload:' "$TMP/out"; echo; } >> "$STATS"; fi
}

# The three variants of one benchmark run back to back in each repetition
# (a round), so that they meet the same state of the machine: single runs
# here drift by 20-30 % over tens of seconds, and the ratios below are taken
# within each round (docs/benchmarks.md).
nthreads=$(echo $THREADS | wc -w)
ROUNDS=$((nthreads * REPS))
ROUND=0
T0=$(date +%s)
for t in $THREADS; do
  for r in $(seq 1 "$REPS"); do
    # Rotate which variant goes first, so drift does not favour one.
    case $((r % 3)) in
      1) order="stock preload prwlock" ;;
      2) order="preload prwlock stock" ;;
      *) order="prwlock stock preload" ;;
    esac
    # Time left: the rounds so far tell how long one takes (rounds at more
    # threads run a little longer; the stats runs and callgrind add about
    # a minute, under a minute in quick mode).
    left=""
    if [ $ROUND -gt 0 ]; then
      left=$(( ($(date +%s) - T0) * (ROUNDS - ROUND) / ROUND ))
      left="; about $((left / 60)) min $((left % 60)) s of rounds left"
    fi
    ROUND=$((ROUND + 1))
    echo "realprogs: T=$t round $r of $REPS ($order; $ROUND of $ROUNDS rounds$left)"
    if [ $have_db = 1 ]; then for v in $order; do dbbench "$v" "$t" "$r" 0; done; fi
    if [ $have_kc = 1 ]; then
      for v in $order; do kctest order "$KCN" "$v" "$t" "$r" 0; done
      for v in $order; do kctest wicked "$(kcw "$t")" "$v" "$t" "$r" 0; done
    fi
  done
done
# One run of each with statistics (not part of the medians).
for v in preload prwlock; do
  [ $have_db = 1 ] && dbbench $v 2 stats 1
  [ $have_kc = 1 ] && kctest order "$KCN" $v 2 stats 1
  [ $have_kc = 1 ] && kctest wicked "$KCW" $v 2 stats 1
done
grep -v ',stats,' "$CSV" > "$TMP/csv" && mv "$TMP/csv" "$CSV"

# ---- instructions per operation (callgrind) --------------------------------
# Timings on a shared 2-CPU machine move by 10-20 % from run to run, so a
# 1-thread ratio near 1 cannot be told from noise by timing alone.  The
# instruction count can: each program runs under callgrind at two sizes, and
# the difference over the difference in operations cancels start-up, set-up
# and exit.  Under valgrind threads run one at a time, and membarrier is not
# available, so the prwlock variant runs in fence mode.
CALLGRIND=${CALLGRIND:-1}
rm -f "$ICSV"
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "realprogs: valgrind unavailable: no instruction counts"
  CALLGRIND=0
fi
# cg_ir VARIANT cmd...: total instructions of one run under callgrind.
cg_ir() {
  local v=$1; shift
  local pre ir
  case $v in
    stock) pre=(env -u LD_PRELOAD) ;;
    preload) pre=(env LD_PRELOAD="$PRELOAD" READMOSTLY_RWLOCK=bravo) ;;
    *) pre=(env LD_PRELOAD="$PRELOAD" READMOSTLY_RWLOCK=prwlock) ;;
  esac
  "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" > "$TMP/out" 2>&1 ||
    fail "callgrind: $* (exit $?)"
  ir=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$TMP/out" | tail -1)
  [ -n "$ir" ] || fail "callgrind printed no total: $*"
  echo "$ir"
}
cg_db() { # variant n
  rm -rf "$TMP/cgdb"
  local ir
  # "|| exit 1": errexit does not reach into a command substitution.
  ir=$(cg_ir "$1" db_bench --benchmarks=fillseq --db="$TMP/cgdb" --threads=1 --num="$2" \
    --memtablerep=skip_list --inplace_update_support=1 --allow_concurrent_memtable_write=0 \
    --inplace_update_num_locks=1 --progress_reports=false --stats_interval=0) || exit 1
  grep -q '^fillseq ' "$TMP/out" || fail "db_bench fillseq printed no result under callgrind"
  echo "$ir"
}
cg_kc() { # variant mode n
  local ir
  ir=$(cg_ir "$1" kccachetest "$2" -th 1 "$3") || exit 1
  grep -q '^ok$' "$TMP/out" || fail "kccachetest $2 did not print ok under callgrind"
  ! grep -qi 'error' "$TMP/out" || fail "kccachetest $2 printed an error line under callgrind"
  echo "$ir"
}
if [ "$CALLGRIND" = 1 ]; then
  echo "program,benchmark,variant,instructions_per_op" > "$ICSV"
  for v in stock preload prwlock; do
    echo "realprogs: callgrind $v"
    if [ $have_db = 1 ]; then
      a=$(cg_db "$v" "${CGN[0]}"); b=$(cg_db "$v" "${CGN[1]}")
      echo "db_bench,fillseq,$v,$(awk -v a="$a" -v b="$b" -v n="${CGN[0]}" -v m="${CGN[1]}" 'BEGIN{printf "%.0f", (b-a)/(m-n)}')" >> "$ICSV"
    fi
    if [ $have_kc = 1 ]; then
      # order only: wicked draws its operations at random (clears included),
      # so its count per record moves by several per cent between runs.
      a=$(cg_kc "$v" order "${CGN[0]}"); b=$(cg_kc "$v" order "${CGN[1]}")
      echo "kccachetest,order,$v,$(awk -v a="$a" -v b="$b" -v n="${CGN[0]}" -v m="${CGN[1]}" 'BEGIN{printf "%.0f", (b-a)/(m-n)}')" >> "$ICSV"
    fi
  done
fi


# Knot DNS on stock liburcu against libreadmostly-urcu.so (scripts/knot-urcu.sh:
# its own rounds and sizes; --quick passed on).  A failing run fails this
# script; a Knot that cannot be installed is skipped with a message.
if [ "${KNOT:-1}" = 1 ]; then
  upl=$(dirname "$PRELOAD")/libreadmostly-urcu.so
  [ -f "$upl" ] || upl=""
  if ! command -v knotd >/dev/null || ! command -v dnsperf >/dev/null || ! command -v kdig >/dev/null; then
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq knot knot-dnsutils dnsperf >/dev/null; } ||
      echo "realprogs: could not install knot, knot-dnsutils, dnsperf: Knot skipped"
  fi
  if command -v knotd >/dev/null && command -v dnsperf >/dev/null && command -v kdig >/dev/null; then
    env -u REPS -u DUR OUT="$OUT" QUICK="$QUICK" URCU_PRELOAD="$upl" scripts/knot-urcu.sh ||
      { echo "realprogs: FAILED: the Knot DNS step (scripts/knot-urcu.sh)" >&2; exit 1; }
  fi
fi
fi

# ---- the table -----------------------------------------------------------
med() { # program benchmark threads variant
  awk -F, -v p="$1" -v b="$2" -v t="$3" -v v="$4" '$1==p && $2==b && $3==t && $4==v {print $7}' "$CSV" |
    sort -g | awk '{a[NR]=$1} END{ if (NR==0) print ""; else if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2 }'
}
# pratio program benchmark threads variant: the median over rounds of
# variant / stock within each round (the paired ratio).
pratio() {
  awk -F, -v p="$1" -v b="$2" -v t="$3" -v v="$4" '
    $1==p && $2==b && $3==t && $4=="stock" {s[$5]=$7}
    $1==p && $2==b && $3==t && $4==v {x[$5]=$7}
    END{ for (r in x) if ((r in s) && s[r] > 0) print x[r] / s[r] }' "$CSV" |
    sort -g | awk '{a[NR]=$1} END{ if (NR==0) print "n/a"; else if (NR%2) printf "%.6g\n", a[(NR+1)/2]; else printf "%.6g\n", (a[NR/2]+a[NR/2+1])/2 }'
}
# h KIND VALUE: the value for people (three significant digits and a unit).
h() { if [ "$2" = n/a ] || [ -z "$2" ]; then echo "${2:-–}"; else awk -v H_KIND="$1" -v H_VALUE="$2" -f "$UNITS"; fi; }
check() { # label ratio op target: compared as shown (three significant digits)
  local r
  r=$(awk -v v="$2" -v op="$3" -v t="$4" -v H_KIND= -f "$UNITS" -f /dev/stdin <<'EOF'
BEGIN { if (v == "n/a") print "n/a"
        else { x = sig3(v) + 0
               if ((op == ">=" && x >= t) || (op == ">" && x > t)) print "PASS"; else print "MISS" } }
EOF
)
  # A quick run's rounds are too short and too few to judge a target.
  [ "$QUICK" = 1 ] && [ "$r" != n/a ] && r="n/a (quick)"
  echo "| $1 | $(h ratio "$2") | ${3/>=/≥} ${4}× | $r |"
}
{
  echo "## Real programs under LD_PRELOAD (stock glibc vs libreadmostly-preload.so)"
  echo
  echo "Unmodified Debian binaries: \`db_bench\` (rocksdb-tools ${DB_VERSION:-$(dpkg-query -W -f='${Version}' rocksdb-tools 2>/dev/null || echo '?')})"
  echo "and \`kccachetest\` (kyotocabinet-utils ${KC_VERSION:-$(dpkg-query -W -f='${Version}' kyotocabinet-utils 2>/dev/null || echo '?')})."
  echo "Median of $REPS runs per cell. In each round the three variants of one benchmark run back"
  echo "to back, the first one rotating; a ratio is the median over the rounds of the ratio within"
  echo "each round (single runs drift by 20-30 % over tens of seconds here, and a round's runs share"
  echo "the machine's state; docs/benchmarks.md). Every run succeeded"
  echo "(db_bench found every key it read; kccachetest exited 0, printed ok and no error)."
  echo "db_bench: \`--benchmarks=fillseq,readwhilewriting --num=$DBN --duration=$DUR --memtablerep=skip_list"
  echo "--inplace_update_support=1 --allow_concurrent_memtable_write=0 --inplace_update_num_locks=1\`"
  echo "(operations/s); kccachetest: \`order -th T $KCN\`, \`wicked -th T $KCW\` ($KCW1 at T=1) (records/s: T×rnum over the sum of the phase times the program prints)."
  echo
  echo '`preload` is libreadmostly-preload.so with its default lock (BRAVO over futexrw); `prwlock` the same'
  echo 'library with `READMOSTLY_RWLOCK=prwlock` (passive readers on the FCP consensus, docs/preload.md).'
  echo "Rates and ratios to stock: higher is better."
  echo
  echo "| program | benchmark | T | stock | preload | prwlock | preload / stock | prwlock / stock |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  for pb in db_bench,fillseq db_bench,readwhilewriting kccachetest,order kccachetest,wicked; do
    p=${pb%,*}; b=${pb#*,}
    for t in $THREADS; do
      s=$(med "$p" "$b" "$t" stock); q=$(med "$p" "$b" "$t" preload); w=$(med "$p" "$b" "$t" prwlock)
      [ -n "$s$q$w" ] || continue
      echo "| $p | $b | $t | $(h rate "$s") | $(h rate "$q") | $(h rate "$w") | $(h ratio "$(pratio "$p" "$b" "$t" preload)") | $(h ratio "$(pratio "$p" "$b" "$t" prwlock)") |"
    done
  done
  echo
  echo "| check | measured | target | result |"
  echo "| --- | ---: | --- | --- |"
  for pb in db_bench,fillseq db_bench,readwhilewriting kccachetest,order kccachetest,wicked; do
    p=${pb%,*}; b=${pb#*,}
    x=$(pratio "$p" "$b" 1 preload)
    [ "$x" != n/a ] && check "$p $b T=1: preload / stock" "$x" ">=" 0.95
  done
  x=$(pratio kccachetest order 2 preload)
  [ "$x" != n/a ] && check "kccachetest order T=2: preload / stock" "$x" ">" 1
  echo
  if [ -s "$ICSV" ]; then
    ins() { awk -F, -v p="$1" -v b="$2" -v v="$3" '$1==p && $2==b && $3==v {print $4}' "$ICSV"; }
    echo "### Instructions per operation at 1 thread (callgrind; lower is better)"
    echo
    echo "Timing a 1-thread run here moves by 10-20 % from run to run, so a ratio near 1"
    echo "above is mostly noise. Instruction counts repeat: each program runs under"
    echo "callgrind with ${CGN[0]} and ${CGN[1]} operations (db_bench \`--benchmarks=fillseq\` with"
    echo "the options above; kccachetest \`order -th 1\`), and the difference in instructions"
    echo "over the difference in operations leaves out start-up and exit. Instructions are"
    echo "not time (glibc's read lock and unlock are an atomic read-modify-write each, as"
    echo "the interposer's default read pair is), but they show what the interposer adds"
    echo "per operation. Valgrind runs threads one at a time and has no membarrier: the"
    echo "prwlock variant runs in fence mode here."
    echo
    echo "| program | benchmark | stock | preload | prwlock | preload - stock | prwlock - stock |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    for pb in db_bench,fillseq kccachetest,order; do
      p=${pb%,*}; b=${pb#*,}
      s=$(ins "$p" "$b" stock); q=$(ins "$p" "$b" preload); w=$(ins "$p" "$b" prwlock)
      [ -n "$s" ] && [ -n "$q" ] && [ -n "$w" ] || continue
      echo "| $p | $b | $(h count "$s") | $(h count "$q") | $(h count "$w") | $(h count $((q - s))) | $(h count $((w - s))) |"
    done
    echo
  fi
  echo "READMOSTLY_STATS=1 output of one run of each, both interposer variants (T=2):"
  echo
  echo '```'
  cat "$STATS"
  echo '```'
  if [ -f "$OUT/knot.csv" ]; then
    [ -n "$RENDER" ] && scripts/knot-urcu.sh --render "$OUT" >/dev/null
    [ -f "$OUT/knot.md" ] && { echo; sed 's/^## /### /' "$OUT/knot.md"; }
  fi
} > "$MD"
echo "realprogs: wrote $MD"
grep -E '\| (PASS|MISS|n/a[^|]*) \|$' "$MD" || true
exit 0
}
