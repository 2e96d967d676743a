#!/usr/bin/env bash
# Knot DNS (Debian's knotd, which calls liburcu's memb flavor through its
# functions) on stock liburcu against LD_PRELOAD=libreadmostly-urcu.so.
#
# Each run: a fresh temporary directory with a generated zone (RECORDS A
# records, h<i>.example.test), a config that listens on 127.0.0.1 only, at a
# free high port, and allows dynamic updates from 127.0.0.1; knotd started
# (stock, or preloaded with READMOSTLY_STATS=1), its answers checked with
# kdig; then for DUR seconds dnsperf sends queries for random names of the
# zone while knsupdate sends dynamic updates at a fixed rate, RATE per
# second (Knot commits each with a grace period; each is timed from its
# scheduled send to its answer), then IDLE updates
# alone (without queries: the commit's own cost); afterwards the
# zone's serial must have moved by exactly the number of updates sent, and
# updated names and old ones answer what they should.  knotd is stopped by
# the script whatever happens (trap).  The variants alternate within each of
# REPS rounds (the first one rotating); a ratio is the median over rounds of
# the ratio within a round.  Writes into OUT:
#   knot.csv        variant,rep,metric,value (qps, lost, updates, update_ms,
#                   update_p50_ms, update_p99_ms, update_max_ms,
#                   idle_updates_per_s, idle_update_ms)
#   knot-stats.txt  libreadmostly-urcu.so's statistics line of each preloaded run
#   knot.md         the table
#   scripts/knot-urcu.sh [--quick] | --render DIR
#   URCU_PRELOAD=path/to/libreadmostly-urcu.so (default: built in build/)
#   REPS=5 DUR=10 RECORDS=100000 RATE=20 (--quick: 1, 2, 10000, 20)
set -euo pipefail
{
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=${QUICK:-0}
RENDER=""
while [ $# -gt 0 ]; do
  case $1 in
  --quick) QUICK=1 ;;
  --render) [ $# -ge 2 ] || { echo "knot-urcu: --render needs a directory" >&2; exit 2; }
            RENDER=$2; shift ;;
  *) echo "usage: scripts/knot-urcu.sh [--quick] | --render DIR" >&2; exit 2 ;;
  esac
  shift
done
RATE=${RATE:-20}
export LC_ALL=C
if [ "$QUICK" = 1 ]; then REPS=${REPS:-1}; DUR=${DUR:-2}; RECORDS=${RECORDS:-10000}; IDLE=${IDLE:-50}
else REPS=${REPS:-5}; DUR=${DUR:-10}; RECORDS=${RECORDS:-100000}; IDLE=${IDLE:-300}; fi
if [ -n "$RENDER" ]; then OUT=$RENDER; fi
OUT=${OUT:-results/runs/$(date -u +%Y%m%dT%H%M%SZ)-knot}
CSV=$OUT/knot.csv
STATS=$OUT/knot-stats.txt
MD=$OUT/knot.md
UNITS=$ROOT/scripts/units.awk

if [ -z "$RENDER" ]; then
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
need=()
command -v knotd >/dev/null || need+=(knot)
command -v kdig >/dev/null || command -v knsupdate >/dev/null || need+=(knot-dnsutils)
command -v dnsperf >/dev/null || need+=(dnsperf)
if [ ${#need[@]} -gt 0 ]; then
  echo "knot-urcu: installing ${need[*]}"
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null; } ||
    { echo "knot-urcu: could not install ${need[*]}" >&2; exit 1; }
fi
KNOTD=$(command -v knotd)
# knotd must call liburcu through its functions, else the library would
# (rightly) forward everything to liburcu and there would be nothing to compare.
nm -D "$KNOTD" | grep -q ' U urcu_memb_synchronize_rcu$' ||
  { echo "knot-urcu: $KNOTD does not call urcu_memb_synchronize_rcu" >&2; exit 1; }
if nm -D "$KNOTD" | grep -Eq ' U urcu_memb_(gp|reader)$'; then
  echo "knot-urcu: $KNOTD inlines liburcu's read side" >&2; exit 1
fi
if [ -z "${URCU_PRELOAD:-}" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target readmostly-urcu >/dev/null
  URCU_PRELOAD=$ROOT/build/preload/libreadmostly-urcu.so
fi
[ -f "$URCU_PRELOAD" ] || { echo "knot-urcu: $URCU_PRELOAD not found" >&2; exit 1; }
mkdir -p "$OUT"
echo "REPS=$REPS DUR=$DUR RECORDS=$RECORDS IDLE=$IDLE RATE=$RATE KNOT_VERSION='$(dpkg-query -W -f='${Version}' knot 2>/dev/null || echo '?')' DNSPERF_VERSION='$(dpkg-query -W -f='${Version}' dnsperf 2>/dev/null || echo '?')'" > "$OUT/knot-run.txt"

TMP=$(mktemp -d)
KPID=""
stop_knot() {
  if [ -n "$KPID" ]; then
    kill "$KPID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$KPID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$KPID" 2>/dev/null || true
    wait "$KPID" 2>/dev/null || true
    KPID=""
  fi
}
UPID=""
cleanup() {
  [ -n "$UPID" ] && kill "$UPID" 2>/dev/null
  stop_knot
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "knot-urcu: FAILED: $*" >&2; [ -f "$TMP/knotd.log" ] && tail -5 "$TMP/knotd.log" >&2; exit 1; }

# The zone: h<i> -> 10.(i/65536).(i/256%256).(i%256).
ip_of() { echo "10.$(($1 / 65536 % 256)).$(($1 / 256 % 256)).$(($1 % 256))"; }
awk -v n="$RECORDS" 'BEGIN {
  print "$ORIGIN example.test.\n$TTL 3600"
  print "@ SOA ns.example.test. admin.example.test. 1 3600 900 604800 60\n@ NS ns\nns A 127.0.0.1"
  for (i = 0; i < n; i++) printf "h%d A 10.%d.%d.%d\n", i, int(i / 65536) % 256, int(i / 256) % 256, i % 256 }' > "$TMP/zone.src"
awk -v n="$RECORDS" 'BEGIN { srand(7); for (i = 0; i < 500000; i++) printf "h%d.example.test A\n", int(rand() * n) }' > "$TMP/queries"

free_port() { # a UDP and TCP port nobody listens on, on the loopback
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 40000))
    if command -v ss >/dev/null; then
      [ -z "$(ss -Han "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
    else
      echo "$p"; return
    fi
  done
  echo 53535
}

# dig NAME TYPE: the answer's data (+short), from our knotd.
q() { kdig @127.0.0.1 -p "$PORT" +retry=2 +time=2 "$1" "${2:-A}" +short; }
serial() { q example.test SOA | awk '{print $3}'; }

start_knot() { # variant: three ports tried (another program may take ours meanwhile)
  local i
  for i in 1 2 3; do
    try_start "$1" && return 0
    grep -q 'address already in use' "$TMP/knotd.log" || fail "knotd ($1) exited at start"
    stop_knot
  done
  fail "knotd ($1): no free port"
}
try_start() { # variant
  local v=$1
  rm -rf "$TMP/k" && mkdir -p "$TMP/k/run" "$TMP/k/db"
  cp "$TMP/zone.src" "$TMP/k/example.test.zone"
  PORT=$(free_port)
  cat > "$TMP/k/knot.conf" <<EOF
server:
    rundir: "$TMP/k/run"
    listen: 127.0.0.1@$PORT
    udp-workers: 2
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$TMP/k/db"
control:
    listen: "$TMP/k/run/knot.sock"
log:
  - target: stderr
    any: warning
acl:
  - id: local_update
    address: 127.0.0.1
    action: update
template:
  - id: default
    storage: "$TMP/k"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
  - domain: example.test
    file: "example.test.zone"
    acl: local_update
EOF
  if [ "$v" = stock ]; then
    env -u LD_PRELOAD "$KNOTD" -c "$TMP/k/knot.conf" > "$TMP/knotd.log" 2>&1 &
  else
    env LD_PRELOAD="$URCU_PRELOAD" READMOSTLY_STATS=1 "$KNOTD" -c "$TMP/k/knot.conf" > "$TMP/knotd.log" 2>&1 &
  fi
  KPID=$!
  for _ in $(seq 100); do
    [ "$(serial 2>/dev/null)" = 1 ] && return 0
    kill -0 "$KPID" 2>/dev/null || return 1
    sleep 0.2
  done
  fail "knotd ($v) does not answer on 127.0.0.1:$PORT"
}

check_answers() { # the zone as loaded: 20 names, the apex, a missing name
  local i
  for i in 0 1 255 256 $((RECORDS - 1)) $(awk -v n="$RECORDS" 'BEGIN{srand(); for(k=0;k<15;k++) print int(rand()*n)}'); do
    [ "$(q "h$i.example.test")" = "$(ip_of "$i")" ] || fail "h$i.example.test: '$(q "h$i.example.test")', want $(ip_of "$i")"
  done
  [ "$(q ns.example.test)" = 127.0.0.1 ] || fail "ns.example.test"
  kdig @127.0.0.1 -p "$PORT" nothere.example.test A | grep -q 'status: NXDOMAIN' || fail "nothere.example.test is not NXDOMAIN"
}

# Dynamic updates at a fixed rate (RATE per second, open loop) until
# dnsperf ends: one knsupdate reads them from a FIFO, and each update is
# sent at its scheduled time whether or not the previous one has been
# answered, so a slow commit shows as latency (queueing included) and not
# as fewer updates.  Each name u<k> gets the address of k.  The send time
# of each update and the arrival of each answer (knsupdate answers in
# order, line-buffered) are taken from bash's EPOCHREALTIME, without a
# fork.  The first update is not timed: the schedule starts when it is
# answered (knsupdate's connection is up).  Writes upd.sent and upd.recv
# (one time per line) and prints the number of updates sent.
updates_paced() {
  local fifo=$TMP/upd.fifo k=0 t0 next now line
  rm -f "$fifo" "$TMP/upd.sent" "$TMP/upd.recv"; mkfifo "$fifo"
  ( stdbuf -oL knsupdate -v -t 5 < "$fifo" 2>&1 | while IFS= read -r line; do
      case $line in
      *"opcode: UPDATE; status: NOERROR"*) echo "$EPOCHREALTIME" ;;
      *"status:"* | *"failed"*) echo "ERR $line" ;;
      esac
    done > "$TMP/upd.recv" ) &
  local rpid=$!
  exec 7> "$fifo"
  printf 'server 127.0.0.1 %s\nzone example.test.\n' "$PORT" >&7
  # Update 1 warms the connection up; the schedule starts at its answer.
  k=1
  echo "$EPOCHREALTIME" >> "$TMP/upd.sent"
  printf 'update add u1.example.test. 60 A %s\nsend\nanswer\n' "$(ip_of 1)" >&7
  for _ in $(seq 200); do [ -s "$TMP/upd.recv" ] && break; sleep 0.05; done
  t0=${EPOCHREALTIME/[,.]/}
  while [ ! -f "$TMP/perf.done" ]; do
    k=$((k + 1))
    next=$((t0 + (k - 1) * 1000000 / RATE))
    now=${EPOCHREALTIME/[,.]/}
    [ "$now" -ge "$next" ] || sleep "$(printf '0.%06d' $((next - now)))"
    line=$(printf 'update add u%d.example.test. 60 A %s\nsend\nanswer' "$k" "$(ip_of "$k")")
    echo "$EPOCHREALTIME" >> "$TMP/upd.sent"
    echo "$line" >&7
  done
  exec 7>&-
  wait "$rpid" || true
  echo "$k"
}

measure() { # variant rep
  local v=$1 r=$2 n total qps lost t0 t1 k
  start_knot "$v"
  check_answers
  rm -f "$TMP/perf.done"
  updates_paced > "$TMP/upd.res" &
  UPID=$!
  dnsperf -s 127.0.0.1 -p "$PORT" -d "$TMP/queries" -l "$DUR" -q 200 > "$TMP/perf.out" 2>&1 || fail "dnsperf ($v) exit $?"
  touch "$TMP/perf.done"
  wait "$UPID" || true
  UPID=""
  n=$(cat "$TMP/upd.res")
  [ -n "$n" ] && [ "$n" -gt 0 ] || fail "no update sent ($v)"
  grep -m1 '^ERR' "$TMP/upd.recv" && fail "an update was refused ($v)"
  [ "$(wc -l < "$TMP/upd.recv")" = "$n" ] || fail "$(wc -l < "$TMP/upd.recv") answers to $n updates ($v)"
  # Latency of each update but the first: its answer's time minus its send
  # time (in order).
  paste -d' ' "$TMP/upd.sent" "$TMP/upd.recv" | tail -n +2 | tr ',' '.' |
    awk '{printf "%.3f\n", ($2 - $1) * 1000}' | sort -g > "$TMP/upd.lat"
  lat() { awk -v q="$1" '{a[NR]=$1} END{i=int(q*NR+0.999999); if(i<1)i=1; if(i>NR)i=NR; print a[i]}' "$TMP/upd.lat"; }
  # Then IDLE updates alone, one knsupdate: the cost of a commit itself.
  { echo "server 127.0.0.1 $PORT"; echo "zone example.test."
    for k in $(seq $((n + 1)) $((n + IDLE))); do echo "update add u$k.example.test. 60 A $(ip_of "$k")"; echo send; done
  } > "$TMP/upd"
  t0=$(date +%s%N)
  knsupdate -v -t 5 "$TMP/upd" > "$TMP/upd.out" 2>&1 || fail "knsupdate ($v): $(head -3 "$TMP/upd.out")"
  t1=$(date +%s%N)
  total=$((n + IDLE))
  qps=$(sed -n 's/^ *Queries per second: *\([0-9.]*\).*/\1/p' "$TMP/perf.out")
  lost=$(sed -n 's/^ *Queries lost: *\([0-9]*\).*/\1/p' "$TMP/perf.out")
  [ -n "$qps" ] || fail "dnsperf ($v) printed no rate"
  # Every completed query answered NOERROR (the names all exist).
  grep -Eq 'Response codes: +NOERROR [0-9]+ \(100\.00%\)$' "$TMP/perf.out" || fail "dnsperf ($v): $(grep 'Response codes' "$TMP/perf.out")"
  # Every update committed exactly once, and answers.
  [ "$(serial)" = $((1 + total)) ] || fail "serial $(serial) after $total updates ($v), want $((1 + total))"
  for k in 1 $((total / 2 + 1)) "$total"; do
    [ "$(q "u$k.example.test")" = "$(ip_of "$k")" ] || fail "u$k.example.test after the updates ($v)"
  done
  check_answers
  stop_knot
  if [ "$v" = preload ]; then
    grep -q '^readmostly-urcu: pid=[0-9]* impl=fcp-rcu grace_periods=[1-9]' "$TMP/knotd.log" ||
      fail "no statistics line from libreadmostly-urcu.so: it did not serve knotd"
    grep '^readmostly-urcu:' "$TMP/knotd.log" >> "$STATS"
  fi
  grep -q "inline read side" "$TMP/knotd.log" && fail "the library refused knotd"
  {
    echo "$v,$r,qps,$qps"
    echo "$v,$r,lost,$lost"
    echo "$v,$r,updates,$n"
    echo "$v,$r,update_ms,$(awk '{s+=$1} END{printf "%.3f", s / NR}' "$TMP/upd.lat")"
    echo "$v,$r,update_p50_ms,$(lat 0.5)"
    echo "$v,$r,update_p99_ms,$(lat 0.99)"
    echo "$v,$r,update_max_ms,$(lat 1)"
    echo "$v,$r,idle_updates_per_s,$(awk -v n="$IDLE" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", n / ((b - a) / 1e9)}')"
    echo "$v,$r,idle_update_ms,$(awk -v n="$IDLE" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b - a) / 1e6 / n}')"
  } >> "$CSV"
  echo "knot-urcu: $v rep $r: $qps queries/s (lost $lost), $n updates at $RATE/s: latency p50 $(lat 0.5) ms, p99 $(lat 0.99) ms"
}

echo "variant,rep,metric,value" > "$CSV"
: > "$STATS"
for r in $(seq "$REPS"); do
  if [ $((r % 2)) = 1 ]; then order="stock preload"; else order="preload stock"; fi
  for v in $order; do measure "$v" "$r"; done
done
fi

# ---- the table -------------------------------------------------------------
# shellcheck disable=SC1091
[ -f "$OUT/knot-run.txt" ] && . "$OUT/knot-run.txt"
med() { # variant metric
  awk -F, -v v="$1" -v m="$2" '$1==v && $3==m {print $4}' "$CSV" | sort -g |
    awk '{a[NR]=$1} END{ if (NR==0) print ""; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'
}
pratio() { # metric: median over rounds of preload / stock
  awk -F, -v m="$1" '$3==m && $1=="stock" {s[$2]=$4} $3==m && $1=="preload" {x[$2]=$4}
    END{ for (r in x) if ((r in s) && s[r] > 0) print x[r] / s[r] }' "$CSV" | sort -g |
    awk '{a[NR]=$1} END{ if (NR==0) print "n/a"; else if (NR%2) printf "%.6g\n", a[(NR+1)/2]; else printf "%.6g\n", (a[NR/2]+a[NR/2+1])/2 }'
}
h() { if [ "$2" = n/a ] || [ -z "$2" ]; then echo "${2:-–}"; else awk -v H_KIND="$1" -v H_VALUE="$2" -f "$UNITS"; fi; }
{
  echo "## Knot DNS on FCP-RCU (stock liburcu vs LD_PRELOAD=libreadmostly-urcu.so)"
  echo
  echo "Debian's \`knotd\` (knot ${KNOT_VERSION:-?}), unmodified: it calls \`urcu_memb_read_lock\`,"
  echo "\`urcu_memb_synchronize_rcu\` and \`urcu_memb_call_rcu\` in liburcu.so.8, which the preloaded"
  echo "library serves (its statistics line is checked in every preloaded run). A zone of $RECORDS A"
  echo "records, knotd on 127.0.0.1 (2 UDP workers); for ${DUR} s \`dnsperf -q 200\` (dnsperf ${DNSPERF_VERSION:-?})"
  echo "queries random names of the zone while \`knsupdate\` sends dynamic updates at a fixed rate,"
  echo "${RATE:-20} per second, each at its scheduled time whether or not the previous one was answered"
  echo "(Knot commits each and waits for a grace period before freeing the old zone contents), over"
  echo "TCP; an update's latency runs from its scheduled send to its answer, queueing included. Then"
  echo "$IDLE more updates in a row without queries (what a commit itself costs; mean time per update)."
  echo "Median of $REPS rounds; in each round both variants run, the first one alternating;"
  echo "a ratio is the median over rounds of the ratio within a round. Checked in every run:"
  echo "20 names, the apex NS address and an NXDOMAIN before and after; every query answered"
  echo "NOERROR; the zone's serial moved by exactly the number of updates; updated names answer."
  echo "Command: \`scripts/knot-urcu.sh\` (or the real-programs step of \`scripts/realprogs.sh\`)."
  echo
  echo "| metric | better | stock liburcu | libreadmostly-urcu | preload / stock |"
  echo "| --- | --- | ---: | ---: | ---: |"
  echo "| queries/s | higher | $(h rate "$(med stock qps)") | $(h rate "$(med preload qps)") | $(h ratio "$(pratio qps)") |"
  echo "| queries lost | lower | $(med stock lost) | $(med preload lost) | |"
  echo "| updates sent during queries (${RATE:-20}/s) | – | $(med stock updates) | $(med preload updates) | |"
  echo "| update latency during queries, p50 (ms) | lower | $(med stock update_p50_ms) | $(med preload update_p50_ms) | $(h ratio "$(pratio update_p50_ms)") |"
  echo "| update latency during queries, p99 (ms) | lower | $(med stock update_p99_ms) | $(med preload update_p99_ms) | $(h ratio "$(pratio update_p99_ms)") |"
  echo "| update latency during queries, mean (ms) | lower | $(med stock update_ms) | $(med preload update_ms) | $(h ratio "$(pratio update_ms)") |"
  echo "| updates/s (alone, $IDLE in a row) | higher | $(h rate "$(med stock idle_updates_per_s)") | $(h rate "$(med preload idle_updates_per_s)") | $(h ratio "$(pratio idle_updates_per_s)") |"
  echo "| update latency (ms, mean, alone) | lower | $(med stock idle_update_ms) | $(med preload idle_update_ms) | $(h ratio "$(pratio idle_update_ms)") |"
  echo
  echo "libreadmostly-urcu.so's statistics (READMOSTLY_STATS=1), one line per preloaded run:"
  echo
  echo '```'
  cat "$STATS"
  echo '```'
} > "$MD"
echo "knot-urcu: wrote $MD"
exit 0
}
