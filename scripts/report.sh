#!/usr/bin/env bash
# The main job: build readmostly (Release) into build/, run the benchmark
# suite (about 10 minutes on 2 cores), and write into results/latest/:
#   results.csv      every measurement (machine description in '#' lines)
#   medians.csv      median per experiment, implementation, threads, param
#   instructions.csv callgrind instructions per lock+unlock pair
#   *.png            one plot per figure, shaped like the paper's
#   realprogs.*      db_bench and kccachetest, stock vs libreadmostly-preload.so
#   REPORT.md        tables with ratios, the acceptance checks, the machine
# Installs what it needs from Debian when missing (cmake, gcc, libck-dev,
# liburcu-dev, gnuplot-nox, valgrind, rocksdb-tools, kyotocabinet-utils); a part whose tool cannot be installed
# is skipped with a message.
#   QUICK=1 scripts/report.sh     a 1-minute pass (short runs, 1 rep) to try it
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-results/latest}
QUICK=${QUICK:-0}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
apt_updated=0
install_pkgs() {
  [ $# -gt 0 ] || return 0
  echo "report: installing $*"
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq || true; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null || {
    echo "report: could not install $* (continuing without)"; return 1; }
}
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
[ -f /usr/include/ck_rwlock.h ] || need+=(libck-dev)
[ -n "$(ls /usr/include/*/urcu/urcu-memb.h /usr/include/urcu/urcu-memb.h 2>/dev/null)" ] || need+=(liburcu-dev)
command -v gnuplot >/dev/null || need+=(gnuplot-nox)
command -v valgrind >/dev/null || need+=(valgrind)
if [ ${#need[@]} -gt 0 ]; then install_pkgs "${need[@]}" || true; fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DREADMOSTLY_BUILD_BENCH=ON >/dev/null
cmake --build build -j"$(nproc)" --target readmostly-bench readmostly-preload >/dev/null
B=$ROOT/build/bench/readmostly-bench
mkdir -p "$OUT"
rm -f "$OUT"/*.csv "$OUT"/*.png "$OUT"/*.dat "$OUT"/*.txt "$OUT"/REPORT.md "$OUT"/realprogs.md

if [ "$QUICK" = 1 ]; then D=0.1; R=1; DL=0.05; else D=0.5; R=3; DL=0.3; fi
avail=$($B list | sed -n 's/^implementations: //p')
has() { case " $avail " in *" $1 "*) return 0;; esac; return 1; }
pick() { local out=() i; for i in "$@"; do has "$i" && out+=("$i"); done; (IFS=,; echo "${out[*]}"); }
ALL=$(pick ba bravo-ba pft bravo-pft pthread bravo-pthread futex bravo-futex percpu cohort prwlock ck-rwlock ck-pflock ck-brlock)
LAT=$(pick ba bravo-ba pft bravo-pft pthread bravo-pthread futex bravo-futex percpu cohort prwlock ck-rwlock ck-pflock ck-brlock urcu-memb)
RW=$(pick ba bravo-ba pthread bravo-pthread futex bravo-futex percpu cohort prwlock)
CSE=$(pick prwlock pthread ck-brlock bravo-ba)
WF=$(pick prwlock ck-brlock bravo-ba pthread urcu-memb)
SLP=$(pick prwlock pthread ck-brlock bravo-futex)
has ck-rwlock || echo "report: Concurrency Kit peers unavailable (libck-dev missing): left out"

run() { # experiment args...
  local e=$1; shift
  echo "report: $e $*"
  "$B" "$e" "$@" --csv "$OUT/$e.csv" >/dev/null
}
t0=$(date +%s)
run latency --impl "$LAT" --duration "$DL" --reps "$R"
run readers --impl "$LAT" --threads 1,2,4 --duration "$D" --reps "$R"
run alternator --impl "$LAT" --threads 1,2,4 --duration "$D" --reps "$R"
run interference --threads 2,4 --duration "$D" --reps "$R" --param locks=1,4,16,64,256,1024,4096,8192
run test_rwlock --impl "$ALL" --threads 1,2,4 --duration "$D" --reps "$R"
run rwbench --impl "$RW" --threads 1,2,4 --duration "$(awk "BEGIN{print $D*0.8}")" --reps "$R"
# The checked cells (2 threads; P = 9/10, 1/2, 1/10000) swing from run to
# run (blocking locks at 2 threads are bimodal): more repetitions there, so
# their medians (in the tables and the checks) are of 2R+1 runs.
"$B" rwbench --impl "$RW" --threads 2 --duration "$(awk "BEGIN{print $D*0.8}")" --reps "$((R + 1))" \
  --param P=9/10,1/2,1/10000 --csv "$OUT/rwbench-more.csv" >/dev/null
awk -F, -v OFS=, -v r="$R" '!/^#/ && $1 != "experiment" { $5 += r; print }' \
  "$OUT/rwbench-more.csv" >> "$OUT/rwbench.csv"
rm -f "$OUT/rwbench-more.csv"
run hashtable --impl "$ALL" --threads 1,2,4 --duration "$D" --reps "$R"
run cs_efficiency --impl "$CSE" --duration "$D" --reps "$R" --param readers=0,1,2,4
run writer_freq --impl "$WF" --threads 1,2 --duration "$D" --reps "$R" --param delay_us=1,10,100,1000
# How prwlock's writers reached consensus (counters on: a separate run).
READMOSTLY_STATS=1 "$B" writer_freq --impl prwlock --threads 1 --duration "$D" --reps 1 \
  --param delay_us=10 > "$OUT/writer_freq_stats.txt" 2>&1 || true
run sleepers --impl "$SLP" --threads 2,4 --duration "$D" --reps "$R" --param sleepy=0,1,2,4
run wakeup --reps "$R" --param readers=1,2,4,8,16,32
echo "report: suite took $(( $(date +%s) - t0 )) s"
# Unmodified programs under the preload library (installs rocksdb-tools and
# kyotocabinet-utils).  A failing program is reported, not hidden.
t0=$(date +%s)
if ! OUT="$OUT" QUICK="$QUICK" PRELOAD="$ROOT/build/preload/libreadmostly-preload.so" scripts/realprogs.sh; then
  { echo "## Real programs under LD_PRELOAD"; echo
    echo "| check | measured | target | result |"; echo "| --- | ---: | --- | --- |"
    echo "| real programs succeed under the preload library | failed | success | FAIL |"
    echo; echo "scripts/realprogs.sh failed; run it alone to see the failing command."; } > "$OUT/realprogs.md"
fi
echo "report: real programs took $(( $(date +%s) - t0 )) s"

# All rows in one file, the machine description once.
{ grep '^#' "$OUT/latency.csv"; echo "experiment,impl,threads,param,rep,metric,value,unit";
  for f in latency readers alternator interference test_rwlock rwbench hashtable cs_efficiency writer_freq sleepers wakeup; do
    grep -v -e '^#' -e '^experiment,' "$OUT/$f.csv"; done; } > "$OUT/results.csv"
awk -f scripts/medians.awk "$OUT/results.csv" > "$OUT/medians.csv"

# Instructions per pair under callgrind: run N1 and N2 pairs, take the
# difference, so start-up and set-up cancel out.
if command -v valgrind >/dev/null; then
  echo "impl,op,instructions_per_pair" > "$OUT/instructions.csv"
  N1=20000; N2=120000
  count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B" latency --impl "$1" \
              --iterations "$2" --param op="$3" --reps 1 2>&1 >/dev/null |
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
  for i in ${LAT//,/ }; do
    for op in read write; do
      [ "$i" = urcu-memb ] && [ "$op" = write ] && continue
      a=$(count "$i" $N1 $op); b=$(count "$i" $N2 $op)
      [ -n "$a" ] && [ -n "$b" ] && echo "$i,$op,$(awk "BEGIN{printf \"%.1f\", ($b-$a)/($N2-$N1)}")" >> "$OUT/instructions.csv"
    done
  done
else
  echo "report: valgrind unavailable: no instruction counts"
fi

# ---- plots --------------------------------------------------------------
M=$OUT/medians.csv
# dat FILE EXP METRIC PARAM IMPL: "threads value" lines
dat() { awk -F, -v e="$1" -v m="$2" -v p="$3" -v i="$4" \
          '$1==e && $5==m && $4==p && $2==i {print $3, $6}' "$M" | sort -n; }
plot_threads() { # exp metric param title ylabel file impls
  local e=$1 m=$2 p=$3 title=$4 yl=$5 png=$6 impls=$7 cmd="" i
  for i in ${impls//,/ }; do
    dat "$e" "$m" "$p" "$i" > "$OUT/$e-$i${p:+-${p//[\/=]/_}}.dat"
    [ -s "$OUT/$e-$i${p:+-${p//[\/=]/_}}.dat" ] || continue
    cmd+="${cmd:+, }'$OUT/$e-$i${p:+-${p//[\/=]/_}}.dat' using 1:2 with linespoints title '$i'"
  done
  [ -n "$cmd" ] || return 0
  gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output '$png'
set title "$title"
set xlabel 'threads'
set ylabel '$yl'
set key outside right
set grid
set logscale x 2
plot $cmd
EOF
}
if command -v gnuplot >/dev/null && gnuplot -e "set terminal pngcairo" 2>/dev/null; then
  plot_threads readers ops_per_sec "" "readers: T threads read-locking one lock (median of $R)" "read acquisitions/s" "$OUT/readers.png" "$LAT"
  plot_threads alternator ns_per_handoff "" "alternator (BRAVO paper Fig. 2): ring of T threads" "ns per hand-off (lower is better)" "$OUT/alternator.png" "$LAT"
  plot_threads test_rwlock ops_per_sec "" "test_rwlock (Fig. 3): 1 writer + T readers" "iterations/s" "$OUT/test_rwlock.png" "$ALL"
  plot_threads hashtable ops_per_ms "" "hash table (Fig. 6): eraser + inserter + T readers" "operations/ms" "$OUT/hashtable.png" "$ALL"
  for p in 9/10 1/2 1/10 1/100 1/1000 1/10000; do
    plot_threads rwbench ops_per_sec "P=$p" "RWBench (Fig. 4): write probability $p" "operations/s" "$OUT/rwbench-${p//\//_}.png" "$RW"
  done
  # FCP experiments: x is the parameter, not threads.
  plot_param() { # exp metric threads title xlabel ylabel file impls key logx
    local e=$1 m=$2 t=$3 title=$4 xl=$5 yl=$6 png=$7 impls=$8 key=$9 lx=${10} cmd="" i f
    for i in ${impls//,/ }; do
      f="$OUT/$e-$i-$m.dat"
      awk -F, -v e="$e" -v m="$m" -v t="$t" -v i="$i" -v k="$key" \
        '$1==e && $5==m && $2==i && (t=="" || $3==t) {v=$4; sub(k"=","",v); print v, $6}' "$M" | sort -n > "$f"
      [ -s "$f" ] || continue
      cmd+="${cmd:+, }'$f' using 1:2 with linespoints title '$i'"
    done
    [ -n "$cmd" ] || return 0
    { echo "set terminal pngcairo size 900,600 noenhanced"
      echo "set output '$png'"
      echo "set title \"$title\""
      echo "set xlabel '$xl'"
      echo "set ylabel '$yl'"
      echo "set key outside right"
      echo "set grid"
      [ "$lx" = 1 ] && echo "set logscale x 10"
      echo "set logscale y 10"
      echo "plot $cmd"; } | gnuplot
  }
  plot_param writer_freq writer_ops_per_sec 1 "writer_freq (FCP Fig. 21): 1 writer + 1 reader, writes/s" "writer delay (us)" "writes/s" "$OUT/writer_freq-writes.png" "no-lock,$WF" delay_us 1
  plot_param writer_freq reader_ops_per_sec 1 "writer_freq (FCP Fig. 21): 1 writer + 1 reader, reads/s" "writer delay (us)" "reads/s" "$OUT/writer_freq-reads.png" "$WF" delay_us 1
  plot_param sleepers reader_ops_per_sec 4 "sleepers (FCP Fig. 20): 4 readers, K yield inside sections, + 1 writer" "sleepy readers K" "reads/s" "$OUT/sleepers.png" "$SLP" sleepy 0
  plot_param wakeup wake_us_last "" "wakeup (FCP Fig. 19): K parked readers, until the last runs" "readers K" "us" "$OUT/wakeup.png" "prwlock-parallel,prwlock-broadcast" readers 0
  for t in 2 4; do
    awk -F, -v t=$t '$1=="interference" && $5=="ratio" && $3==t {sub("locks=","",$4); print $4, $6}' "$M" | sort -n > "$OUT/interference-$t.dat"
  done
  gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output '$OUT/interference.png'
set title "Inter-lock interference (Fig. 1): BRAVO-BA shared table / private table per lock"
set xlabel 'locks in the pool'
set ylabel 'throughput ratio'
set logscale x 2
set yrange [0:1.3]
set grid
plot '$OUT/interference-2.dat' using 1:2 with linespoints title '2 threads', \
     '$OUT/interference-4.dat' using 1:2 with linespoints title '4 threads', 0.85 with lines dt 2 title 'acceptance 0.85'
EOF
  awk -F, '$1=="latency" && $5=="ns_per_read_pair" {print $2, $6}' "$M" > "$OUT/latency-read.dat"
  awk -F, '$1=="latency" && $5=="ns_per_write_pair" {print $2, $6}' "$M" > "$OUT/latency-write.dat"
  # Locks without a write side (urcu-memb) have no bias-off row: plot 0.
  awk -F, '$1=="latency" && $5=="ns_per_read_pair" {print $2}' "$M" | while read -r i; do
    echo "$i $(awk -F, -v i="$i" '$1=="latency" && $2==i && $5=="ns_per_read_pair_bias_off" {v=$6} END{print v+0}' "$M")"
  done > "$OUT/latency-off.dat"
  gnuplot <<EOF
set terminal pngcairo size 1000,600 noenhanced
set output '$OUT/latency.png'
set title "Single-thread latency: lock+unlock pair (median of $R)"
set ylabel 'ns per pair'
set style data histograms
set style fill solid 0.8 border -1
set xtics rotate by -45
set grid y
plot '$OUT/latency-read.dat' using 2:xtic(1) title 'read pair', '$OUT/latency-write.dat' using 2 title 'write pair', \
     '$OUT/latency-off.dat' using 2 title 'read pair, writes keep the bias off'
EOF
else
  echo "report: gnuplot (pngcairo) unavailable: no plots"
fi
rm -f "$OUT"/*.dat

# ---- REPORT.md ----------------------------------------------------------
med() { awk -F, -v e="$1" -v i="$2" -v t="$3" -v p="$4" -v m="$5" \
          '$1==e && $2==i && $3==t && $4==p && $5==m {print $6; exit}' "$M"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a=="" || b=="" || b==0) print "n/a"; else printf "%.2f", a/b }'; }
check() { # label value op target
  local r
  r=$(awk -v v="$2" -v op="$3" -v t="$4" 'BEGIN{ if (v=="n/a") print "n/a"; else if ((op==">=" && v>=t) || (op=="<=" && v<=t)) print "PASS"; else print "MISS" }')
  echo "| $1 | $2 | $3 $4 | $r |"
}
table_threads() { # exp metric param impls threads...
  local e=$1 m=$2 p=$3 impls=$4; shift 4
  local hdr="| impl |" sep="| --- |" i t
  for t in "$@"; do hdr+=" T=$t |"; sep+=" ---: |"; done
  echo "$hdr"; echo "$sep"
  for i in ${impls//,/ }; do
    local row="| $i |"
    for t in "$@"; do row+=" $(med "$e" "$i" "$t" "$p" "$m") |"; done
    echo "$row"
  done
}
bravo_ratios() { # exp metric param threads
  local e=$1 m=$2 p=$3 t=$4 x
  echo "| BRAVO-X / X at T=$t | ratio |"; echo "| --- | ---: |"
  for x in ba pft pthread futex; do
    has "bravo-$x" || continue
    local a b; a=$(med "$e" "bravo-$x" "$t" "$p" "$m"); b=$(med "$e" "$x" "$t" "$p" "$m")
    [ -n "$a" ] && [ -n "$b" ] && echo "| bravo-$x / $x | $(ratio "$a" "$b") |"
  done
}
img() { [ -f "$OUT/$1" ] && echo "![$2]($1)"; echo; }
{
echo "# readmostly benchmark report"
echo
echo "Generated by \`scripts/report.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Medians of $R runs"
echo "($((2 * R + 1)) for rwbench at 2 threads with P = 9/10, 1/2 and 1/10000, the checked cells),"
echo "all implementations measured side by side in one run (repetitions interleaved)."
echo "Absolute numbers drift between runs and machines; read the ratios."
echo
echo "## Machine"
echo
grep '^#' "$OUT/results.csv" | sed 's/^# */- /'
echo "- runs with more threads than CPUs are oversubscribed (preemption and blocking paths)"
echo
echo "## Acceptance checks (ratios within this run)"
echo
echo "| check | measured | target | result |"
echo "| --- | ---: | --- | --- |"
check "readers T=2: bravo-ba / ba" "$(ratio "$(med readers bravo-ba 2 '' ops_per_sec)" "$(med readers ba 2 '' ops_per_sec)")" ">=" 3
check "readers T=2: bravo-pthread / pthread" "$(ratio "$(med readers bravo-pthread 2 '' ops_per_sec)" "$(med readers pthread 2 '' ops_per_sec)")" ">=" 3
check "alternator T=2: bravo-ba / ba (ns per hand-off)" "$(ratio "$(med alternator bravo-ba 2 '' ns_per_handoff)" "$(med alternator ba 2 '' ns_per_handoff)")" "<=" 0.8
check "latency: bravo-ba / ba read pair" "$(ratio "$(med latency bravo-ba 1 '' ns_per_read_pair)" "$(med latency ba 1 '' ns_per_read_pair)")" "<=" 0.8
check "latency: bravo-ba / ba write pair (bias revoked)" "$(ratio "$(med latency bravo-ba 1 '' ns_per_write_pair)" "$(med latency ba 1 '' ns_per_write_pair)")" "<=" 1.2
check "latency: bravo-ba / ba read pair (writes keep the bias off)" "$(ratio "$(med latency bravo-ba 1 '' ns_per_read_pair_bias_off)" "$(med latency ba 1 '' ns_per_read_pair_bias_off)")" "<=" 1.2
for p in 9/10 1/2; do for x in ba pthread futex; do
  check "rwbench T=2 P=$p: bravo-$x / $x" "$(ratio "$(med rwbench bravo-$x 2 "P=$p" ops_per_sec)" "$(med rwbench $x 2 "P=$p" ops_per_sec)")" ">=" 0.9
done; done
check "rwbench T=2 P=1/10000: bravo-ba / ba" "$(ratio "$(med rwbench bravo-ba 2 'P=1/10000' ops_per_sec)" "$(med rwbench ba 2 'P=1/10000' ops_per_sec)")" ">=" 1.5
check "latency: prwlock read pair (ns)" "$(med latency prwlock 1 '' ns_per_read_pair)" "<=" 2
check "latency: prwlock / pthread read pair" "$(ratio "$(med latency prwlock 1 '' ns_per_read_pair)" "$(med latency pthread 1 '' ns_per_read_pair)")" "<=" 0.3
check "readers T=2: prwlock / ck-brlock" "$(ratio "$(med readers prwlock 2 '' ops_per_sec)" "$(med readers ck-brlock 2 '' ops_per_sec)")" ">=" 2
check "cs_efficiency: prwlock writer, 0 readers (ns)" "$(med cs_efficiency prwlock 0 readers=0 writer_ns)" "<=" 5000
check "writer_freq 1 reader, 10 us: prwlock writes/s" "$(med writer_freq prwlock 1 delay_us=10 writer_ops_per_sec)" ">=" 90000
check "writer_freq 1 reader, 10 us: prwlock / ck-brlock reads" "$(ratio "$(med writer_freq prwlock 1 delay_us=10 reader_ops_per_sec)" "$(med writer_freq ck-brlock 1 delay_us=10 reader_ops_per_sec)")" ">=" 1
worst=$(awk -F, '$1=="interference" && $5=="ratio" {if (w=="" || $6<w) w=$6} END{print (w==""?"n/a":w)}' "$M")
check "interference: worst median ratio over N and T" "$worst" ">=" 0.85
echo
# What 2 CPUs allow: two threads do at most twice the work of one.
bb1=$(med rwbench bravo-ba 1 'P=1/10000' ops_per_sec); ba2=$(med rwbench ba 2 'P=1/10000' ops_per_sec)
bb2=$(med rwbench bravo-ba 2 'P=1/10000' ops_per_sec)
if [ -n "$bb1" ] && [ -n "$ba2" ] && [ -n "$bb2" ]; then
  twice=$(awk -v x="$bb1" 'BEGIN{print 2*x}')
  echo "rwbench P=1/10000 at 2 threads: BRAVO-BA reaches $(ratio "$bb2" "$twice") of twice its"
  echo "1-thread rate, so on 2 CPUs BRAVO-BA / BA can be at most $(ratio "$twice" "$ba2") here"
  echo "(2 × BRAVO-BA at 1 thread over BA at 2 threads)."
  echo
fi
# What the machine allows writer_freq: the same threads with no lock at all.
wfc=$(med writer_freq no-lock 1 delay_us=10 writer_ops_per_sec)
wfp=$(med writer_freq prwlock 1 delay_us=10 writer_ops_per_sec)
if [ -n "$wfc" ] && [ -n "$wfp" ]; then
  echo "writer_freq at 10 us with no lock at all (the writer only delays, the other thread spins):"
  printf '%.0f writes/s in this run, the most this machine allows; prwlock reaches %s of it\n' "$wfc" "$(ratio "$wfp" "$wfc")"
  echo "(its writer waits for the reader's report, two to three cache-line round trips each way)."
  echo
fi
echo "## Latency (one thread, ns per lock+unlock pair)"
echo
echo "| impl | read pair ns | write pair ns | read pair, bias off ns | read instr. | write instr. |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for i in ${LAT//,/ }; do
  ri=""; wi=""
  if [ -f "$OUT/instructions.csv" ]; then
    ri=$(awk -F, -v i="$i" '$1==i && $2=="read" {print $3}' "$OUT/instructions.csv")
    wi=$(awk -F, -v i="$i" '$1==i && $2=="write" {print $3}' "$OUT/instructions.csv")
  fi
  echo "| $i | $(med latency "$i" 1 '' ns_per_read_pair) | $(med latency "$i" 1 '' ns_per_write_pair) | $(med latency "$i" 1 '' ns_per_read_pair_bias_off) | $ri | $wi |"
done
echo
echo "Instructions per pair are callgrind counts (difference of two run lengths, so"
echo "set-up cancels); they are repeatable where times are not. BRAVO's write pair is"
echo "measured with the bias revoked (the inhibit window keeps it off). \"Read pair, bias"
echo "off\" takes one write pair every 4096 read pairs with BRAVO's inhibit multiplier"
echo "at 10^6, so every read of a BRAVO lock takes the slow path (A's read lock plus"
echo "the inhibit test); for the other locks it is their read pair again."
echo
img latency.png latency
echo "## Readers: T threads read-locking one lock (read acquisitions/s)"
echo
table_threads readers ops_per_sec "" "$LAT" 1 2 4
echo
bravo_ratios readers ops_per_sec "" 2
echo
img readers.png readers
echo "## Alternator (paper Fig. 2; ns per hand-off, lower is better)"
echo
table_threads alternator ns_per_handoff "" "$LAT" 1 2 4
echo
bravo_ratios alternator ns_per_handoff "" 2
echo
img alternator.png alternator
echo "## Inter-lock interference (paper Fig. 1)"
echo
echo "Throughput of BRAVO-BA on the shared table over BRAVO-BA with a private 4096-slot"
echo "table per lock; T threads read random locks of a pool of N."
echo
echo "| locks N | ratio T=2 | ratio T=4 |"; echo "| ---: | ---: | ---: |"
for n in 1 4 16 64 256 1024 4096 8192; do
  echo "| $n | $(med interference bravo-ba 2 "locks=$n" ratio) | $(med interference bravo-ba 4 "locks=$n" ratio) |"
done
echo
img interference.png interference
echo "## test_rwlock (paper Fig. 3; 1 writer + T readers, iterations/s)"
echo
table_threads test_rwlock ops_per_sec "" "$ALL" 1 2 4
echo
bravo_ratios test_rwlock ops_per_sec "" 2
echo
img test_rwlock.png test_rwlock
echo "## RWBench (paper Fig. 4; operations/s)"
echo
for p in 9/10 1/2 1/10 1/100 1/1000 1/10000; do
  echo "### P = $p"
  echo
  table_threads rwbench ops_per_sec "P=$p" "$RW" 1 2 4
  echo
  bravo_ratios rwbench ops_per_sec "P=$p" 2
  echo
  img "rwbench-${p//\//_}.png" "rwbench P=$p"
done
echo "## Hash table (paper Fig. 6; operations/ms)"
echo
table_threads hashtable ops_per_ms "" "$ALL" 1 2 4
echo
bravo_ratios hashtable ops_per_ms "" 2
echo
img hashtable.png hashtable
echo "## prwlock: critical-section efficiency (FCP Table 3; ns per lock+unlock pair)"
echo
echo "A reader among N readers, a writer with N busy readers (median of $R)."
echo
echo "| impl | reader N=1 | reader N=2 | reader N=4 | writer N=0 | writer N=1 | writer N=2 | writer N=4 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for i in ${CSE//,/ }; do
  echo "| $i | $(med cs_efficiency "$i" 1 readers=1 reader_ns) | $(med cs_efficiency "$i" 2 readers=2 reader_ns) | $(med cs_efficiency "$i" 4 readers=4 reader_ns) | $(med cs_efficiency "$i" 0 readers=0 writer_ns) | $(med cs_efficiency "$i" 1 readers=1 writer_ns) | $(med cs_efficiency "$i" 2 readers=2 writer_ns) | $(med cs_efficiency "$i" 4 readers=4 writer_ns) |"
done
echo
echo "## prwlock: writer frequency (FCP Fig. 21; 1 writer + T readers)"
echo
echo "| impl | T | delay us | writes/s | reads/s |"
echo "| --- | ---: | ---: | ---: | ---: |"
for t in 1 2; do for dl in 1 10 100 1000; do for i in no-lock ${WF//,/ }; do
  echo "| $i | $t | $dl | $(med writer_freq "$i" $t delay_us=$dl writer_ops_per_sec) | $(med writer_freq "$i" $t delay_us=$dl reader_ops_per_sec) |"
done; done; done
echo
st() { awk -F, -v m="$1" '$6==m {printf "%.0f", $7; exit}' "$OUT/writer_freq_stats.txt" 2>/dev/null; }
echo "prwlock's consensus at T=1, delay 10 us (a separate run with READMOSTLY_STATS=1): $(st consensus_fast_per_sec) rounds/s settled by reports alone, $(st consensus_membarrier_per_sec)/s needed a membarrier, $(st writer_parks_per_sec)/s parked on a reader."
echo "urcu-memb waits one grace period per update (batch size 1, as in the paper)."
echo
img writer_freq-writes.png "writer_freq writes"
img writer_freq-reads.png "writer_freq reads"
echo "## prwlock: sleeping readers (FCP Fig. 20; 1 writer every 100 us + T readers, K of them yield inside every section)"
echo
echo "| impl | T | K=0 | K=1 | K=2 | K=4 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for t in 2 4; do for i in ${SLP//,/ }; do
  echo "| $i | $t | $(med sleepers "$i" $t sleepy=0 reader_ops_per_sec) | $(med sleepers "$i" $t sleepy=1 reader_ops_per_sec) | $(med sleepers "$i" $t sleepy=2 reader_ops_per_sec) | $(med sleepers "$i" $t sleepy=4 reader_ops_per_sec) |"
done; done
echo
img sleepers.png sleepers
echo "## prwlock: waking parked readers (FCP Fig. 19; us from the writer's unlock)"
echo
echo "| readers K | parallel: mean | parallel: last | broadcast: mean | broadcast: last |"
echo "| ---: | ---: | ---: | ---: | ---: |"
for k in 1 2 4 8 16 32; do
  echo "| $k | $(med wakeup prwlock-parallel $k readers=$k wake_us_mean) | $(med wakeup prwlock-parallel $k readers=$k wake_us_last) | $(med wakeup prwlock-broadcast $k readers=$k wake_us_mean) | $(med wakeup prwlock-broadcast $k readers=$k wake_us_last) |"
done
echo
echo "On 2 CPUs there are at most 2 wake groups (one per CPU), so parallel wake-up has little to spread."
echo
img wakeup.png wakeup
[ -f "$OUT/realprogs.md" ] && { cat "$OUT/realprogs.md"; echo; }
echo "## Reproduce"
echo
echo '```sh'
echo 'scripts/report.sh                       # this report'
echo 'scripts/realprogs.sh                    # only the real programs section'
echo 'build/bench/readmostly-bench list        # experiments and implementations'
echo '```'
} > "$OUT/REPORT.md"
echo "report: wrote $OUT/REPORT.md"
grep -E '\| (PASS|MISS|FAIL|n/a) \|$' "$OUT/REPORT.md" || true
