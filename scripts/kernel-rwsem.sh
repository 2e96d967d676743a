#!/usr/bin/env bash
# BRAVO inside the kernel's own rw_semaphore (so that mmap_lock gets it):
# patches/rwsem-bravo.patch on linux-source-6.1.  Builds two kernels with
# one trimmed configuration (tinyconfig and what booting, modules, SMP,
# PREEMPT, the PVH entry, the torture tests and lockdep need): stock, and
# patched with CONFIG_RWSEM_BRAVO=y.  Boots each in qemu (the uncompressed
# vmlinux through its PVH entry, 2 vCPUs; TCG here) with a busybox
# initramfs that runs kernel/rwsem/wis.c (page faults and mmap, in the
# style of will-it-scale) and the kernel's locktorture on rwsem_lock (1
# writer and 0 writers, 1 and 2 readers), with lockdep on.  docs/kernel-locks.md
# ("BRAVO inside rw_semaphore") describes the patch.
#
#   scripts/kernel-rwsem.sh            # both kernels, the runs, the checks
#   scripts/kernel-rwsem.sh --quick    # shorter runs (the builds are the same)
#
# Environment: WORK (default build-kernel/; the trees and builds are cached
# in WORK/rwsem/, so a rerun rebuilds only what changed), WIS_S and
# LOCKTORTURE_S (durations), ONLY (stock or bravo: one kernel), JOBS
# (default 2), NICE (the build's niceness, default 10).
#
# Checks, for each kernel: the init script ran to its end, every wis run
# printed result=PASS, every locktorture run ended in SUCCESS with no
# failed acquisition, lockdep is on and still on at the end (debug_locks:
# 1: it found nothing), and the log holds no BUG, Oops, WARNING, lockdep
# report or panic.  Writes WORK/rwsem/rwsem.csv (the driver's format);
# under TCG its throughput is emulated, not a measurement.  Exits 0 when
# every check passes, 1 otherwise, 2 on a set-up error.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
    *) echo "kernel-rwsem.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
say() { echo "kernel-rwsem.sh: $*"; }
die() { echo "kernel-rwsem.sh: $*" >&2; exit 2; }
work=${WORK:-build-kernel}/rwsem
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-2}
t_start=$(date +%s)
if [ $quick = 1 ]; then wis_s=${WIS_S:-1}; lts=${LOCKTORTURE_S:-3}; else wis_s=${WIS_S:-3}; lts=${LOCKTORTURE_S:-10}; fi
kernels=(stock bravo)
case ${ONLY:-} in stock|bravo) kernels=("$ONLY") ;; '') ;; *) die "ONLY is stock or bravo" ;; esac

# ---- packages ------------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
srcpkg=linux-source-6.1
need=()
for p in "$srcpkg" qemu-system-x86 busybox-static cpio gzip make gcc libc6-dev flex bison bc libelf-dev libssl-dev xz-utils patch; do
  installed "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  { apt-get install -y -qq --no-install-recommends "${need[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; }; } >"$work/apt.log" 2>&1 ||
    { tail -n 20 "$work/apt.log" >&2; die "apt-get install failed"; }
fi

# ---- the trees -------------------------------------------------------------------
# One unpacked source per linux-source version; the patched tree is a copy
# of it by hard links (patch replaces the files it changes, so the stock
# tree keeps its own).  A new version of the patch is applied after the old
# one is taken back: make rebuilds what the difference touches.
srcver=$(dpkg-query -W -f='${Version}' "$srcpkg")
if [ "$(cat "$work/srcver" 2>/dev/null)" != "$srcver" ]; then
  say "unpacking $srcpkg $srcver (about a minute)"
  rm -rf "$work/stock" "$work/bravo" "$work/srcver" "$work/bravo.applied"
  mkdir -p "$work/stock"
  tar -xJf "/usr/src/$srcpkg.tar.xz" -C "$work/stock" --strip-components=1 || die "cannot unpack /usr/src/$srcpkg.tar.xz"
  cp -al "$work/stock" "$work/bravo"
  echo "$srcver" >"$work/srcver"
fi
patchf=$root_dir/patches/rwsem-bravo.patch
if ! cmp -s "$patchf" "$work/bravo.applied" 2>/dev/null; then
  if [ -f "$work/bravo.applied" ]; then
    (cd "$work/bravo" && patch -s -R -p1 <"$work/bravo.applied") || die "cannot take back the patch applied before"
    rm -f "$work/bravo.applied"
  fi
  (cd "$work/bravo" && patch -s -p1 <"$patchf") || die "patches/rwsem-bravo.patch does not apply to $srcpkg $srcver"
  cp "$patchf" "$work/bravo.applied"
fi

# ---- the configuration: tinyconfig and what the runs need -------------------------
opts=(
  64BIT SMP PREEMPT PRINTK BUG TTY SERIAL_8250 SERIAL_8250_CONSOLE       # console on ttyS0
  BLK_DEV_INITRD RD_GZIP BINFMT_ELF BINFMT_SCRIPT DEVTMPFS PROC_FS SYSFS  # the initramfs and busybox
  FUTEX MULTIUSER                                                      # wis's threads
  MODULES MODULE_UNLOAD                                                # locktorture as a module
  HYPERVISOR_GUEST PARAVIRT PVH ACPI X86_MPPARSE                       # the PVH entry, both vCPUs
  DEBUG_KERNEL PROVE_LOCKING DEBUG_ATOMIC_SLEEP KALLSYMS               # lockdep, readable reports
)
configure() { # tree extra-options...
  local t=$1 o
  shift
  local want=$work/$t.config-want
  {
    for o in "${opts[@]}" "$@"; do echo "$o"; done
    echo "lock torture: m"
  } >"$want.new"
  # Only when the list changed (or there is no .config): a new .config
  # makes make check every option again.
  if [ -f "$work/$t/.config" ] && cmp -s "$want.new" "$want"; then rm -f "$want.new"; return 0; fi
  local args=(--disable PREEMPT_NONE --disable PREEMPT_VOLUNTARY --module TORTURE_TEST --module LOCK_TORTURE_TEST)
  for o in "${opts[@]}" "$@"; do args+=(--enable "$o"); done
  (cd "$work/$t" && make -s tinyconfig >/dev/null && scripts/config "${args[@]}" &&
    make -s olddefconfig >/dev/null) || die "configuring the $t tree failed"
  for o in "${opts[@]}" "$@"; do
    grep -q "^CONFIG_$o=y" "$work/$t/.config" || die "the $t configuration did not take CONFIG_$o=y"
  done
  grep -q '^CONFIG_LOCK_TORTURE_TEST=m' "$work/$t/.config" || die "the $t configuration did not take CONFIG_LOCK_TORTURE_TEST=m"
  mv "$want.new" "$want"
}

# ---- wis and the initramfs --------------------------------------------------------
gcc -static -O2 -Wall -Wextra -Werror -pthread -o "$work/wis" kernel/rwsem/wis.c || die "wis.c does not build"
if [ $quick = 1 ]; then tlist="1 2"; rlist="2"; else tlist="1 2"; rlist="1 2"; fi
initramfs() { # tree
  local t=$1 ird=$work/initramfs-$1 w r x
  rm -rf "$ird"
  mkdir -p "$ird"/{bin,dev,proc,sys,m}
  cp /bin/busybox "$ird/bin/busybox"
  cp "$work/wis" "$ird/bin/wis"
  cp "$work/$t/kernel/torture.ko" "$work/$t/kernel/locking/locktorture.ko" "$ird/m/"
  mknod "$ird/dev/console" c 5 1
  mknod "$ird/dev/null" c 1 3
  {
    cat <<'EOS'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "KSH: start $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) bravo=$(cat /sys/module/rwsem/parameters/enabled 2>/dev/null || echo none)"
dl() { grep 'debug_locks:' /proc/lockdep_stats | tr -s ' ' | sed 's/^ *//'; }
echo "KSH: $(dl)"
bravo() { [ -d /sys/module/rwsem/parameters ] && echo "KSH: bravo $1 fast_reads=$(cat /sys/module/rwsem/parameters/fast_reads) revocations=$(cat /sys/module/rwsem/parameters/revocations)"; }
lt() {
  echo "KSH: locktorture begin $1 $2 $3 $4"
  bravo before
  insmod /m/locktorture.ko torture_type=$1 nwriters_stress=$2 nreaders_stress=$3 stat_interval=0 verbose=0
  echo "KSH: insmod locktorture rc=$?"
  sleep $4
  rmmod locktorture
  echo "KSH: rmmod locktorture rc=$?"
  bravo after
  echo "KSH: locktorture end"
}
EOS
    for x in page_fault mmap; do
      for w in $tlist; do
        echo "bravo before; wis $x $w $wis_s; echo \"KSH: wis rc=\$?\"; bravo after"
      done
    done
    echo 'insmod /m/torture.ko; echo "KSH: insmod torture rc=$?"'
    for w in 1 0; do for r in $rlist; do echo "lt rwsem_lock $w $r $lts"; done; done
    cat <<'EOS'
rmmod torture; echo "KSH: rmmod torture rc=$?"
echo "KSH: end $(dl)"
echo "KSH: done"
reboot -f
EOS
  } >"$ird/init"
  chmod +x "$ird/init"
  (cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs-$t.cpio.gz"
}

# ---- build, boot, check, for each kernel -------------------------------------------------
csv=$work/rwsem.csv
bad=0
fail() { echo "kernel-rwsem.sh: FAIL ($1): $2"; bad=1; }
nlt=$(( 2 * $(wc -w <<<"$rlist") ))
nwis=$(( 2 * $(wc -w <<<"$tlist") ))
rows=$work/rows.csv
: >"$rows"
for t in "${kernels[@]}"; do
  if [ "$t" = bravo ]; then configure "$t" RWSEM_BRAVO; else configure "$t"; fi
  t0=$(date +%s)
  say "building the $t kernel (make -j$jobs; about 3 minutes from scratch on 2 quiet CPUs, seconds when nothing changed)"
  (cd "$work/$t" && nice -n "${NICE:-10}" make -s -j"$jobs" vmlinux modules) >"$work/build-$t.log" 2>&1 ||
    { tail -n 30 "$work/build-$t.log" >&2; die "the $t kernel does not build (log: $work/build-$t.log)"; }
  say "$t kernel built in $(( $(date +%s) - t0 )) s"
  initramfs "$t"
  log=$work/serial-$t.log
  timeout_s=$((240 + 2 * $(wc -w <<<"$tlist") * (wis_s + 5) * 3 + nlt * (lts + 10) * 3))
  t0=$(date +%s)
  timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 1G \
    -nographic -no-reboot -kernel "$work/$t/vmlinux" -initrd "$work/initramfs-$t.cpio.gz" \
    -append "console=ttyS0 oops=panic panic=-1 panic_on_warn=1 preempt=full" </dev/null >"$log" 2>&1 || true
  say "$t VM ran $(( $(date +%s) - t0 )) s; serial log $log"
  tr -d '\r' <"$log" >"$log.txt"
  if pat=$(grep -n -E 'BUG:|Oops|WARNING:|Kernel panic|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|bad unlock balance|held lock freed|DEBUG_LOCKS_WARN_ON|lockdep is turned off|suspicious RCU usage|detected stall|blocked for more than|Call Trace' "$log.txt" |
           grep -v -e 'KSH:' | head -n 5) && [ -n "$pat" ]; then
    fail "$t" "the kernel log reports:"; echo "$pat"
  fi
  grep -q '^KSH: start' "$log.txt" || fail "$t" "the VM did not reach init"
  grep -q '^KSH: done' "$log.txt" || fail "$t" "the init script did not finish (timeout $timeout_s s, or a panic)"
  grep -q '^KSH: debug_locks: 1' "$log.txt" || fail "$t" "lockdep is not on at the start"
  grep -q '^KSH: end debug_locks: 1' "$log.txt" || fail "$t" "lockdep turned itself off during the runs (it reported something)"
  if [ "$t" = bravo ]; then grep -q '^KSH: start .* bravo=Y' "$log.txt" || fail "$t" "the patched kernel does not say BRAVO is on"; fi
  while read -r l; do fail "$t" "$l"; done < <(grep -E '^KSH: (insmod|rmmod|wis) .*rc=[1-9]' "$log.txt" || true)
  n=$(grep -c '^wis: .*result=PASS' "$log.txt" || true)
  [ "$n" = "$nwis" ] || fail "$t" "$n wis runs passed of $nwis"
  n=$(grep -c -E -- '-torture:--- End of test: SUCCESS' "$log.txt" || true)
  [ "$n" = "$nlt" ] || fail "$t" "$n locktorture runs ended in SUCCESS of $nlt"
  while read -r l; do fail "$t" "locktorture: ${l#*] }"; done < <(grep -E -- '-torture:--- End of test: [A-Z_]*FAIL|(Writes|Reads ):  Total: .*Fail: [1-9]' "$log.txt" || true)
  # Rows: wis ops/s, locktorture acquisitions/s, BRAVO's fast reads and
  # revocations during each run (differences of the counters).
  awk -v k="$t" -v s="$lts" '
    /^KSH: bravo before/ { for (i = 4; i <= NF; i++) { split($i, a, "="); b[a[1]] = a[2] } }
    /^KSH: bravo after/ { for (i = 4; i <= NF; i++) { split($i, a, "="); d[a[1]] = a[2] - b[a[1]]
                            if (inwis) printf "wis,%s,%s,test=%s,1,%s,%d,count\n", k, wt, wx, a[1], d[a[1]] }
                          have = !inwis; inwis = 0 }
    /^wis: / { delete f; for (i = 2; i <= NF; i++) { split($i, a, "="); f[a[1]] = a[2] }
               printf "wis,%s,%s,test=%s,1,ops_per_s_emulated,%s,ops/s\n", k, f["threads"], f["test"], f["ops_per_s"]
               wt = f["threads"]; wx = f["test"]; inwis = 1 }
    /^KSH: locktorture begin/ { w = $5; r = $6; ok = 0; wt2 = ""; rt = ""; inwis = 0 }
    /Writes:  Total:/ { x = $0; sub(/.*Writes:  Total: /, "", x); split(x, a, " "); wt2 = a[1] }
    /Reads :  Total:/ { x = $0; sub(/.*Reads :  Total: /, "", x); split(x, a, " "); rt = a[1] }
    /-torture:--- End of test: SUCCESS/ { ok = 1 }
    /^KSH: locktorture end/ {
      p = "writers=" w
      printf "rwsem_locktorture,%s,%s,%s,1,result,%d,1=SUCCESS\n", k, r, p, ok
      if (wt2 != "") printf "rwsem_locktorture,%s,%s,%s,1,writes_per_s_emulated,%g,acquisitions/s\n", k, r, p, wt2 / s
      if (rt != "") printf "rwsem_locktorture,%s,%s,%s,1,reads_per_s_emulated,%g,acquisitions/s\n", k, r, p, rt / s
      if (have) { printf "rwsem_locktorture,%s,%s,%s,1,fast_reads,%d,count\n", k, r, p, d["fast_reads"]; printf "rwsem_locktorture,%s,%s,%s,1,revocations,%d,count\n", k, r, p, d["revocations"] }
      have = 0
    }' "$log.txt" >>"$rows"
done
{
  echo "# kernel-rwsem: linux-source-6.1 $srcver, trimmed configuration, stock and patches/rwsem-bravo.patch (CONFIG_RWSEM_BRAVO=y), qemu TCG, 2 vCPUs, 1 GiB, lockdep on"
  echo "# EMULATED: throughput under TCG emulation is not a measurement of any machine (metrics *_emulated)"
  echo "# mode: $([ $quick = 1 ] && echo quick || echo full)"
  echo "experiment,impl,threads,param,rep,metric,value,unit"
  cat "$rows"
} >"$csv"
say "rows (EMULATED: qemu TCG, not a measurement):"
awk -F, '!/^#/ && $1 != "experiment" { printf "  %-18s %-6s T=%s %-15s %-22s %s\n", $1, $2, $3, $4, $6, $7 }' "$csv"
if [ $bad = 0 ]; then
  say "PASS: ${kernels[*]}: every wis run and locktorture run passed, lockdep on and silent; $(( $(date +%s) - t_start )) s in all; CSV $csv"
else
  say "FAIL ($(( $(date +%s) - t_start )) s)"
fi
exit $bad
