#!/usr/bin/env bash
# Kyoto Cabinet's CacheDB, stock and on RLU: the RLU paper's Figure 12.
#
#   scripts/kyoto-rlu.sh [--quick] [--tests-only] [--threads 1,2,4] [--impls stock,preload,...]
#   scripts/kyoto-rlu.sh --tsan
#
# Downloads Kyoto Cabinet 1.2.79 from Debian (the orig tarball, checked
# against the sha256 in Debian's kyotocabinet_1.2.79-2.dsc; nothing of it
# enters the repository), builds it twice in WORK (default build-kyoto,
# cached): as released ("stock"), and with patches/kyoto-rlu.patch applied,
# in which CacheDB's record operations run as RLU sections with the per-slot
# locks serializing writers instead of the global reader-writer lock
# (docs/rlu.md, "Kyoto Cabinet on RLU").  Kyoto's own test program kccachetest
# (order, queue, wicked, tran) must pass on every build it runs.  Then runs
# bench/kyoto/kcbench.cc (random set, add, remove and get, 2 % and 10 %
# mutations) for each implementation:
#   stock            as released
#   preload          stock under libreadmostly-preload.so (BRAVO)
#   preload-prwlock  the same with READMOSTLY_RWLOCK=prwlock
#   rlu              the RLU build
# and prints the rows on stdout, in readmostly-bench's CSV, header first,
# after '#' lines describing the machine.  --quick: a run of a few minutes
# (after the builds).  --tests-only: the builds and kccachetest (quick
# sizes), no benchmark (CI runs this).  --tsan: the RLU build again with
# ThreadSanitizer (Kyoto and readmostly both instrumented), and kccachetest's
# 9 variants at 2 and 4 threads on it, any report failing the run (the only
# races suppressed are those of kccachetest's own random number generator,
# the globals g_rnd_*, which its threads share unsynchronized).  Exits
# non-zero if a build, a kccachetest or a benchmark run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${WORK:-$ROOT/build-kyoto}
QUICK=0
TESTS_ONLY=0
TSAN=0
THREADS=1,2,4
IMPLS=stock,preload,preload-prwlock,rlu
while [ $# -gt 0 ]; do
  case $1 in
  --quick) QUICK=1 ;;
  --tests-only) TESTS_ONLY=1; QUICK=1 ;;
  --tsan) TSAN=1 ;;
  --threads) THREADS=$2; shift ;;
  --impls) IMPLS=$2; shift ;;
  *) echo "kyoto-rlu.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then RECORDS=100000 DURATION=0.5 REPS=1; else RECORDS=500000 DURATION=2 REPS=3; fi
log() { echo "kyoto-rlu: $*" >&2; }

need=()
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v curl >/dev/null || need+=(curl)
command -v cmake >/dev/null || need+=(cmake)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >&2
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >&2; fi
fi

mkdir -p "$WORK"
SRC_URL=http://deb.debian.org/debian/pool/main/k/kyotocabinet/kyotocabinet_1.2.79.orig.tar.gz
SRC_SHA=67fb1da4ae2a86f15bb9305f26caa1a7c0c27d525464c71fd732660a95ae3e1d
TGZ=$WORK/kyotocabinet_1.2.79.orig.tar.gz
if [ ! -f "$TGZ" ] || ! echo "$SRC_SHA  $TGZ" | sha256sum -c --quiet - 2>/dev/null; then
  log "downloading Kyoto Cabinet 1.2.79"
  curl -fsSL -o "$TGZ" "$SRC_URL"
  echo "$SRC_SHA  $TGZ" | sha256sum -c --quiet - || { log "checksum mismatch for $TGZ"; exit 1; }
fi

# readmostly itself (Release): the preload library and the static library
# the RLU build links.
RM=$WORK/readmostly
cmake -S "$ROOT" -B "$RM" -DCMAKE_BUILD_TYPE=Release -DREADMOSTLY_BUILD_BENCH=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$RM" -j"$(nproc)" --target readmostly-preload readmostly_static >/dev/null
PRELOAD=$RM/preload/libreadmostly-preload.so
SAN_FLAGS=""
if [ "$TSAN" = 1 ]; then
  RM=$WORK/readmostly-tsan
  cmake -S "$ROOT" -B "$RM" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADMOSTLY_SANITIZE=thread \
    -DREADMOSTLY_BUILD_BENCH=OFF -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$RM" -j"$(nproc)" --target readmostly_static >/dev/null
  SAN_FLAGS="-fsanitize=thread -g -O1"
fi

# build VARIANT [PATCH]: Kyoto in $WORK/VARIANT, cached by a stamp that
# names the patch's checksum.
build() {
  local v=$1 patch=${2:-} dir=$WORK/$1 stamp sum=none
  [ -n "$patch" ] && sum=$(sha256sum "$patch" | cut -d' ' -f1)
  # The RLU build links libreadmostly.a into libkyotocabinet.so: a new
  # library is a new build.
  [ -n "$patch" ] && sum=$sum-$(sha256sum "$RM/src/libreadmostly.a" | cut -c1-16)
  stamp="$dir/.built-$sum-$(sha256sum "$ROOT/bench/kyoto/kcbench.cc" | cut -c1-16)"
  if [ -f "$stamp" ]; then echo "$dir/kyotocabinet-1.2.79"; return; fi
  log "building $v"
  rm -rf "$dir"
  mkdir -p "$dir"
  tar xzf "$TGZ" -C "$dir"
  local k=$dir/kyotocabinet-1.2.79 extra_cpp="" extra_libs=""
  if [ -n "$patch" ]; then
    (cd "$k" && patch -p1 --quiet < "$patch") || { log "$patch does not apply to Kyoto Cabinet 1.2.79"; exit 1; }
    extra_cpp="-I$ROOT/include"
    extra_libs="$RM/src/libreadmostly.a -lpthread"
  fi
  (cd "$k" && CPPFLAGS="$extra_cpp" LIBS="$extra_libs" CFLAGS="$SAN_FLAGS" CXXFLAGS="$SAN_FLAGS" \
    LDFLAGS="$SAN_FLAGS" ./configure --disable-lzo --disable-lzma >"$dir/configure.log" 2>&1 &&
    make -j"$(nproc)" libkyotocabinet.so kccachetest >"$dir/make.log" 2>&1) ||
    { log "build of $v failed (see $dir/*.log)"; exit 1; }
  g++ -O2 $SAN_FLAGS -std=c++17 $extra_cpp -I"$k" "$ROOT/bench/kyoto/kcbench.cc" -o "$dir/kcbench" -L"$k" \
    -lkyotocabinet $extra_libs -lz -lpthread -Wl,-rpath,"$k" ||
    { log "kcbench for $v failed to build"; exit 1; }
  touch "$stamp"
  echo "$k"
}

# kctest K V THREADS N: Kyoto's test program on build K (variant V): every
# mode at each thread count in THREADS (more threads than CPUs on purpose),
# N records, sequential and random orders, with compression (not for the
# random queue, whose cursor-heavy run takes half a minute with it, stock or
# RLU) and with a record cap; every run must exit 0.  (tran is not run with
# a cap: it compares against a second database that nothing evicts from,
# and fails on the stock build too.)
kctest() {
  local k=$1 v=$2 ths=$3 n=$4 runs=0 th t
  for th in $ths; do
    for t in "order -th $th $n" "order -th $th -rnd -etc -tran $n" "order -th $th -rnd -etc -capcnt $((n / 4)) $n" \
      "queue -th $th -it 4 $n" "queue -th $th -it 2 -rnd $n" \
      "wicked -th $th -it 4 $n" "wicked -th $th -it 2 -tc -capcnt $((n / 8)) $n" \
      "tran -th $th -it 4 $n" "tran -th $th -it 2 -tc $n"; do
      # shellcheck disable=SC2086
      if ! (cd "$k" && LD_LIBRARY_PATH=$k ./kccachetest $t >"$WORK/kccachetest-$v.log" 2>&1); then
        log "FAILED on $v: kccachetest $t (log: $WORK/kccachetest-$v.log, its end:)"
        tail -n 40 "$WORK/kccachetest-$v.log" >&2
        exit 1
      fi
      runs=$((runs + 1))
    done
  done
  log "kccachetest order, queue, wicked and tran pass on $v ($runs runs, threads ${ths// /, })"
}

if [ "$TSAN" = 1 ]; then
  K=$(build rlu-tsan "$ROOT/patches/kyoto-rlu.patch")
  printf 'race:g_rnd_x\nrace:g_rnd_y\nrace:g_rnd_z\nrace:g_rnd_w\n' > "$WORK/tsan.supp"
  # Any report ends the run with status 66, which kctest reports.
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$WORK/tsan.supp"
  kctest "$K" rlu-tsan "2 4" 5000
  exit 0
fi
STOCK=$(build stock)
RLU_PATCH=$ROOT/patches/kyoto-rlu.patch
RLUK=""
case ",$IMPLS," in *,rlu,*)
  if [ -f "$RLU_PATCH" ]; then RLUK=$(build rlu "$RLU_PATCH")
  else log "no $RLU_PATCH: the rlu rows are left out"; fi ;;
esac
N=10000
[ "$QUICK" = 1 ] || N=50000
kctest "$STOCK" stock "1 2 4 8" "$N"
[ -n "$RLUK" ] && kctest "$RLUK" rlu "1 2 4 8" "$N"
[ "$TESTS_ONLY" = 1 ] && exit 0

echo "# kyoto-rlu.sh: Kyoto Cabinet 1.2.79 CacheDB, RLU paper Fig. 12 workload"
echo "# machine: $(uname -srm), $(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
echo "# records $RECORDS (keys from $((2 * RECORDS))), duration ${DURATION}s, reps $REPS, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "experiment,impl,threads,param,rep,metric,value,unit"
# One repetition of every implementation, then the next: a drift of the
# machine during the run falls on all of them alike.
for rep in $(seq 1 "$REPS"); do
  for impl in ${IMPLS//,/ }; do
    args=(--impl "$impl" --threads "$THREADS" --mutations 2,10 --records "$RECORDS" --duration "$DURATION"
      --reps 1 --first-rep "$rep")
    case $impl in
    stock) "$WORK/stock/kcbench" "${args[@]}" ;;
    preload) LD_PRELOAD=$PRELOAD "$WORK/stock/kcbench" "${args[@]}" ;;
    preload-prwlock) LD_PRELOAD=$PRELOAD READMOSTLY_RWLOCK=prwlock "$WORK/stock/kcbench" "${args[@]}" ;;
    rlu) if [ -n "$RLUK" ]; then "$WORK/rlu/kcbench" "${args[@]}"; fi ;;
    *) log "unknown implementation $impl"; exit 2 ;;
    esac
  done
done
