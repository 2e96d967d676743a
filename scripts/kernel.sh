#!/usr/bin/env bash
# Build the kernel modules in kernel/ (and the kernel's locktorture, from
# linux-source-6.1, with our lock types) against Debian's kernel headers,
# boot that kernel in qemu with a busybox initramfs that loads each module
# with its parameters and unloads it, and check the serial log.
# docs/kernel.md describes the modules and the runs.
#
#   scripts/kernel.sh            # the full run: RLU benchmarks and tortures,
#                                # the store-buffer model, locktorture with 1
#                                # and 0 writers
#   scripts/kernel.sh --quick    # tortures for a few seconds, each benchmark
#                                # for a moment (CI)
#   scripts/kernel.sh --host     # the same runs on the running kernel, as
#                                # root, where its headers are installed:
#                                # hardware numbers (refuses, and says why,
#                                # where it cannot)
#   scripts/kernel.sh --dry-run  # (with or without --host) the checks, the
#                                # packages, the build and the runs it would
#                                # do; exits 0, or 2 where it would refuse
#
# Environment: WORK (default build-kernel/: packages' files, the build, the
# initramfs, the serial log, kernel.csv), TORTURE_MS, BENCH_MS and
# LOCKTORTURE_S (override the durations), SBUF_ROUNDS and SBUF_HOLD_MS
# (the store-buffer model's rounds per run, 5, and each round's hold, 100 ms), TIMEOUT (seconds before the VM is killed; default from
# the plan), RECHECK (1: check and parse the last run's log again, no build
# and no boot), ONLY (rlu, sbuf or locktorture: one part of the plan),
# MUTANT (see below), HANG_RETRY (0: no second boot after a boot that
# stalled with nothing failed; default 1, docs/kernel.md), ACCEL (kvm or tcg; default: kvm when /dev/kvm opens,
# and tcg when the KVM boot does not reach init).
#
# Writes $WORK/kernel.csv (experiment,impl,threads,param,rep,metric,value,
# unit).  The VM runs under TCG emulation: its throughput is printed and
# written as "emulated", never as a measurement of this machine.
#
# Exits 0 when every module loaded and unloaded, every run printed its
# result line with result=PASS, and the log holds no BUG, Oops, WARNING,
# lockdep report, RCU stall or panic; 1 otherwise; 2 on a set-up error.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD

quick=0
host=0
dry=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    --host) host=1 ;;
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
    *) echo "kernel.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

work=${WORK:-build-kernel}
mkdir -p "$work"
work=$(cd "$work" && pwd)
t_start=$(date +%s)
say() { echo "kernel.sh: $*"; }
die() { echo "kernel.sh: $*" >&2; exit 2; }
# What a hung kernel prints, and every report the log check fails on (a
# hang's among them).
hang_re='detected stall|soft lockup|hard LOCKUP|blocked for more than'
report_re="BUG:|Oops|WARNING:|Kernel panic|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|$hang_re|UBSAN|KASAN|Call Trace"
# The logs stay in $WORK, which CI does not keep: print what led up to the
# first report (the last runner lines: which run it was) and the report
# itself (where each CPU was), or, with no report, the log's end.
excerpt() { # log.txt
  local first
  first=$(grep -n -E "$report_re" "$1" | head -n 1 | cut -d: -f1 || true)
  if [ -n "$first" ]; then
    echo "kernel.sh: the last runner lines before the first report, and the report (log lines $((first > 15 ? first - 15 : 1))-$((first + 80))):"
    { grep -n '^KSH:' "$1" || true; } | awk -F: -v f="$first" '$1 < f' | tail -n 4 | sed 's/^/    /'
    sed -n "$((first > 15 ? first - 15 : 1)),$((first + 80))p" "$1" | sed 's/^/    /'
  else
    echo "kernel.sh: the last runner line, and the log's last 40 lines:"
    { grep '^KSH:' "$1" || true; } | tail -n 1 | sed 's/^/    /'
    tail -n 40 "$1" | sed 's/^/    /'
  fi
}
hang_note=""
mods=(rlu/rm_rlu rlu_bench/rm_rlu_bench locks/rm_locks sbuf/rm_sbuf locktorture/torture locktorture/locktorture)
# Checks of the checks, run by hand; each must make the run FAIL:
#   MUTANT=no_wait        RLU's synchronize does not wait (rm_rlu.c)
#   MUTANT=no_ipi         RLU's fence-free writers send no IPI (rm_rlu.c), and
#                         prwlock's writer skips the IPI to a CPU whose passive
#                         mark reads 0 (rm_locks.c): rm_sbuf's store-buffer
#                         model catches both (the tortures, under emulation, do not)
#   MUTANT=no_revoke      BRAVO's writer does not revoke (rm_locks.c)
#   MUTANT=no_consensus   prwlock's writer does not wait for passive readers
kcflags=""
[ -n "${MUTANT:-}" ] && kcflags="-DRM_MUTANT_$(tr a-z A-Z <<<"$MUTANT")"

# ---- the plan --------------------------------------------------------------------
# Thread counts: 1, 2, 4 in the VM (2 vCPUs: 4 is oversubscribed); on the
# host, powers of two up to its CPUs (and their number), as in the papers'
# figures.  locktorture's readers go from 1 to the CPUs (the BRAVO paper).
if [ $host = 1 ]; then
  ncpu=$(nproc)
  tlist=""; rlist=""
  for ((n = 1; n <= ncpu; n *= 2)); do tlist+="$n "; rlist+="$n "; done
  [ $((n / 2)) = "$ncpu" ] || { tlist+="$ncpu "; rlist+="$ncpu "; }
  [ "$ncpu" -ge 4 ] || tlist="1 2 4 "
else
  ncpu=2
  tlist="1 2 4 "
  rlist="1 2 "
fi
# One line per run: the parameters of rm_rlu_bench.
if [ $quick = 1 ]; then
  tms=${TORTURE_MS:-3000}
  bms=${BENCH_MS:-300}
  plan=(
    "test=torture impl=rlu threads=2 duration=$tms rep=1"
    "test=torture impl=rlu-ff threads=2 duration=$tms rep=1"
    "test=torture impl=rlu-defer threads=2 duration=$tms rep=1"
    "test=torture impl=rlu threads=1 duration=$tms rep=1"
  )
  for impl in rcu rlu rlu-ff rlu-defer rlu-coarse; do
    plan+=("test=list impl=$impl threads=2 update=2000 range=256 duration=$bms rep=1")
    plan+=("test=hash impl=$impl threads=2 update=2000 range=2048 buckets=128 duration=$bms rep=1")
    plan+=("test=dlist impl=$impl threads=2 update=100 range=256 duration=$bms rep=1")
  done
else
  tms=${TORTURE_MS:-20000}
  bms=${BENCH_MS:-1000}
  plan=()
  for n in $tlist; do
    for impl in rlu rlu-ff rlu-defer; do
      plan+=("test=torture impl=$impl threads=$n duration=$tms rep=1")
    done
  done
  for upd in 10 100; do
    for impl in rcu rlu rlu-ff rlu-defer rlu-coarse; do
      for n in $tlist; do
        plan+=("test=dlist impl=$impl threads=$n update=$upd range=1000 duration=$bms rep=1")
      done
    done
  done
  for test in list hash; do
    if [ $test = list ]; then sz="range=1000"; else sz="range=20000 buckets=1000"; fi
    for upd in 200 2000 4000; do
      for impl in rcu rlu rlu-ff rlu-defer rlu-coarse; do
        for n in $tlist; do
          plan+=("test=$test impl=$impl threads=$n update=$upd $sz duration=$bms rep=1")
        done
      done
    done
  done
fi
# The store-buffer model (rm_sbuf): the fence-free entries of RLU and
# prwlock, and RLU's fenced entry beside them; 5 rounds of 100 ms each.
sbplan=("impl=rlu-ff rounds=${SBUF_ROUNDS:-5} hold_ms=${SBUF_HOLD_MS:-100} rep=1" "impl=rlu rounds=${SBUF_ROUNDS:-5} hold_ms=${SBUF_HOLD_MS:-100} rep=1" "impl=prwlock rounds=${SBUF_ROUNDS:-5} hold_ms=${SBUF_HOLD_MS:-100} rep=1")
# locktorture: rwsem_lock (the kernel's rw_semaphore), bravo_rwsem and
# prwlock; the BRAVO paper's two figures: 1 writer and 0 writers, readers
# from 1 to the CPUs, and Figure 8 (b): 0 writers with read sections of
# 5 us instead of about 50 ms (read_hold_us, added by
# patches/locktorture-readmostly.patch).  "type writers readers seconds
# read_hold_us" per run (0: locktorture's own delays).
ltplan=()
if [ $quick = 1 ]; then
  lts=${LOCKTORTURE_S:-3}
  for t in rwsem_lock bravo_rwsem prwlock; do ltplan+=("$t 1 2 $lts 0"); done
  for t in rwsem_lock bravo_rwsem prwlock; do ltplan+=("$t 0 2 $lts 5"); done
else
  lts=${LOCKTORTURE_S:-10}
  for wh in "1 0" "0 0" "0 5"; do
    for r in $rlist; do
      for t in rwsem_lock bravo_rwsem prwlock; do ltplan+=("$t ${wh% *} $r $lts ${wh#* }"); done
    done
  done
fi
# ONLY=rlu, sbuf or locktorture keeps one part of the plan.
case ${ONLY:-} in
  rlu) sbplan=(); ltplan=() ;;
  sbuf) plan=(); ltplan=() ;;
  locktorture) plan=(); sbplan=() ;;
  '') ;;
  *) die "ONLY is rlu, sbuf or locktorture" ;;
esac
total_ms=0
for p in "${ltplan[@]}"; do
  read -r _ _ _ sec _ <<<"$p"
  total_ms=$((total_ms + sec * 1000))
done
for p in "${plan[@]}"; do
  d=$(sed -n 's/.*duration=\([0-9]*\).*/\1/p' <<<"$p")
  total_ms=$((total_ms + d))
done
total_ms=$((total_ms + ${#sbplan[@]} * 600))

# ---- which kernel ------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
refuse=()   # --host: why it cannot run here
if [ $host = 1 ]; then
  # The running kernel, its headers (the build directory the modules'
  # vermagic must match), and what loading modules into it needs.
  kver=$(uname -r)
  kdir=/lib/modules/$kver/build
  cfg=$kdir/.config
  [ "$(id -u)" = 0 ] || refuse+=("not root: loading modules needs root")
  if [ ! -f "$kdir/Makefile" ]; then
    have=$(ls -d /usr/src/linux-headers-* 2>/dev/null | sed 's|.*/linux-headers-||' | grep -v -e '-common$' -e '^$' | paste -sd' ' -)
    refuse+=("the running kernel is $kver, and $kdir holds no headers for it (headers installed: ${have:-none}); on Debian, install linux-headers-$kver; a kernel of another vendor needs its own headers package, or run without --host (the VM)")
  else
    for o in CONFIG_MODULES CONFIG_SMP CONFIG_64BIT CONFIG_PREEMPT_NOTIFIERS; do
      grep -q "^$o=y" "$cfg" 2>/dev/null || refuse+=("the running kernel has no $o=y ($cfg); rm_locks needs preempt notifiers, RLU 64-bit counters")
    done
  fi
  if [ "$(cat /proc/sys/kernel/modules_disabled 2>/dev/null || echo 0)" = 1 ]; then
    refuse+=("module loading is disabled (/proc/sys/kernel/modules_disabled is 1)")
  fi
  if [ "$(cat /sys/module/module/parameters/sig_enforce 2>/dev/null || echo N)" = Y ]; then
    refuse+=("the kernel loads signed modules only (module.sig_enforce, or lockdown with Secure Boot); ours are not signed")
  fi
  for m in "${mods[@]}"; do
    [ ! -d "/sys/module/${m##*/}" ] || refuse+=("a module named ${m##*/} is loaded or built in already (/sys/module/${m##*/}): unload it first")
  done
  [ -w /dev/kmsg ] || [ "$(id -u)" != 0 ] || refuse+=("/dev/kmsg is not writable (the run's markers go into the kernel log)")
  command -v dmesg >/dev/null || refuse+=("no dmesg")
else
  # The kernel Debian's linux-image-amd64 points to; its headers must be the
  # same version (the modules' vermagic).
  kver=${KVER:-$(apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n 1)}
  if [ -z "$kver" ] && [ $dry = 0 ] && [ -z "${RECHECK:-}" ]; then
    apt-get update -qq >/dev/null
    kver=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n 1)
  fi
  [ -n "$kver" ] || die "cannot tell which kernel linux-image-amd64 is"
  kdir=/usr/src/linux-headers-$kver
fi
# The kernel's own sources (linux-source-X.Y) give locktorture and the
# torture core, which Debian's kernel does not build.
srcpkg=linux-source-$(cut -d. -f1,2 <<<"$kver")
need=()
if [ $host = 1 ]; then
  pkgs=(make gcc kmod patch xz-utils)
else
  pkgs=(qemu-system-x86 busybox-static cpio gzip make gcc kmod patch xz-utils "linux-headers-$kver")
fi
[ ${#ltplan[@]} = 0 ] || pkgs+=("$srcpkg")
for p in "${pkgs[@]}"; do installed "$p" || need+=("$p"); done
if [ $host = 1 ] && [ ${#ltplan[@]} -gt 0 ] && [[ " ${need[*]} " == *" $srcpkg "* ]] &&
   ! apt-cache policy "$srcpkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  refuse+=("locktorture needs the kernel's sources ($srcpkg), which apt does not offer here; ONLY=rlu or ONLY=sbuf leaves locktorture out")
fi

# ---- the runs, as a script: /init's body in the VM, run as root on the host ----
runner() {
  cat <<'EOS'
# The plan's runs (scripts/kernel.sh).  M: the directory of the .ko files;
# KSH_OUT: where the KSH lines go (the VM: the console; the host: /dev/kmsg,
# into the kernel log between the modules' lines).
M=${M:-/m}
k() { if [ -n "${KSH_OUT:-}" ]; then echo "KSH: $*" >"$KSH_OUT"; else echo "KSH: $*"; fi; }
ld() { insmod "$M/$1.ko" $2; k "insmod $1 rc=$? $2"; }
ul() { rmmod "$1"; k "rmmod $1 rc=$?"; }
lt() {
  k "locktorture begin $1 $2 $3 $4 $5"
  insmod "$M/locktorture.ko" torture_type=$1 nwriters_stress=$2 nreaders_stress=$3 read_hold_us=$5 stat_interval=0 verbose=0
  k "insmod locktorture rc=$? $1"
  sleep $4
  rmmod locktorture
  k "rmmod locktorture rc=$?"
  k "locktorture end"
}
k "start $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
ld rm_rlu ""
EOS
  for p in "${plan[@]}"; do
    printf 'ld rm_rlu_bench "%s"\nul rm_rlu_bench\n' "$p"
  done
  echo 'ld rm_locks ""'
  for p in "${sbplan[@]}"; do
    printf 'ld rm_sbuf "%s"\nul rm_sbuf\n' "$p"
  done
  echo 'ul rm_rlu'
  if [ ${#ltplan[@]} -gt 0 ]; then
    echo 'ld torture ""'
    for p in "${ltplan[@]}"; do echo "lt $p"; done
    echo 'ul torture'
  fi
  echo 'ul rm_locks'
  echo 'k done'
}
timeout_s=${TIMEOUT:-$((180 + total_ms * 3 / 1000 + ${#plan[@]} * 5 + ${#sbplan[@]} * 5 + ${#ltplan[@]} * 10))}
cmdline="console=ttyS0 oops=panic panic=-1 panic_on_warn=1 preempt=full"

# ---- --dry-run: what it would do --------------------------------------------
if [ $dry = 1 ]; then
  echo "kernel.sh --dry-run$([ $host = 1 ] && echo " --host")$([ $quick = 1 ] && echo " --quick"): nothing is installed, built, loaded or booted"
  if [ $host = 1 ]; then
    echo "where: the running kernel $kver, $ncpu CPUs; headers $kdir"
    if [ ${#refuse[@]} = 0 ]; then echo "checks: all pass: it would run"
    else for r in "${refuse[@]}"; do echo "REFUSE: $r"; done; fi
  else
    echo "where: Linux $kver (linux-image-amd64) in qemu, 2 vCPUs, 1 GiB; KVM when /dev/kvm works, else TCG (emulated numbers)"
  fi
  echo "packages to install: ${need[*]:-none}"
  echo "build: make -j2 -C $kdir M=$work/src KCFLAGS=\"$kcflags\" modules  (kernel/ and locktorture.c, torture.c from $srcpkg with patches/locktorture-readmostly.patch)"
  if [ $host = 1 ]; then
    echo "run: M=$work/m KSH_OUT=/dev/kmsg sh $work/run.sh (as root; the kernel log is read with dmesg; on exit, whatever happens, every module of ours still loaded is unloaded)"
  else
    echo "run: qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 1G -kernel vmlinuz-$kver -initrd (busybox, the .ko files, /init running run.sh) -append \"$cmdline\"  (killed after $timeout_s s)"
  fi
  echo "runs: ${#plan[@]} RLU benchmark and torture runs, ${#sbplan[@]} store-buffer model runs, ${#ltplan[@]} locktorture runs; about $((total_ms / 1000)) s of runs"
  echo "then: the log checks, $work/kernel.csv"
  echo "--- run.sh:"
  runner
  [ ${#refuse[@]} = 0 ] && exit 0 || exit 2
fi
if [ ${#refuse[@]} -gt 0 ]; then
  for r in "${refuse[@]}"; do echo "kernel.sh --host: cannot run here: $r" >&2; done
  exit 2
fi

# RECHECK=1: no build and no run; check and parse the log of the last run
# in $WORK again (with the same plan options).
if [ -z "${RECHECK:-}" ]; then
# ---- packages ---------------------------------------------------------------
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  { apt-get install -y -qq --no-install-recommends "${need[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; }; } >"$work/apt.log" 2>&1 ||
    { tail -n 20 "$work/apt.log" >&2; die "apt-get install failed"; }
fi
if [ $host = 0 ]; then
  # The kernel image, unpacked (apt-get download + dpkg-deb -x: no initramfs
  # triggers, nothing installed into /boot).
  vmlinuz=$work/image/boot/vmlinuz-$kver
  if [ ! -f "$vmlinuz" ]; then
    mkdir -p "$work/debs" "$work/image"
    say "downloading linux-image-$kver"
    (cd "$work/debs" && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$kver") >"$work/apt.log" 2>&1 ||
      { apt-get update -qq >/dev/null && (cd "$work/debs" && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$kver"); } ||
      die "apt-get download linux-image-$kver failed"
    dpkg-deb -x "$(ls "$work"/debs/linux-image-"$kver"_*.deb | tail -n 1)" "$work/image"
  fi
  [ -f "$vmlinuz" ] || die "no $vmlinuz"
fi
[ -d "$kdir" ] || die "no $kdir"
# The three files of the kernel's sources that locktorture needs, unpacked
# once per source version (reading the 140 MB tarball takes half a minute).
ksrc=""
if [ ${#ltplan[@]} -gt 0 ]; then
  srcver=$(dpkg-query -W -f='${Version}' "$srcpkg")
  ksrc=$work/linux-src/$srcver
  if [ ! -f "$ksrc/kernel/locking/locktorture.c" ]; then
    rm -rf "$work/linux-src"
    mkdir -p "$ksrc"
    tar -xJf "/usr/src/$srcpkg.tar.xz" -C "$ksrc" --strip-components=1 \
      "$srcpkg/kernel/locking/locktorture.c" "$srcpkg/kernel/torture.c" "$srcpkg/kernel/rcu/rcu.h" ||
      die "cannot unpack locktorture from /usr/src/$srcpkg.tar.xz"
  fi
  if [ $host = 0 ]; then
    imgver=$(dpkg-deb -f "$(ls "$work"/debs/linux-image-"$kver"_*.deb | tail -n 1)" Version)
    [ "$imgver" = "$srcver" ] || say "note: $srcpkg is $srcver, the image $imgver"
  fi
fi

# ---- modules -----------------------------------------------------------------
# Built from a copy, so that Kbuild's objects stay out of the source tree.
rm -rf "$work/src"
mkdir -p "$work/src"
cp -r kernel/. "$work/src/"
bmods=("${mods[@]}")
if [ -n "$ksrc" ]; then
  cp "$ksrc/kernel/locking/locktorture.c" "$ksrc/kernel/torture.c" "$work/src/locktorture/"
  mkdir -p "$work/src/locktorture/rcu"
  cp "$ksrc/kernel/rcu/rcu.h" "$work/src/locktorture/rcu/"
  (cd "$work/src/locktorture" && patch -s -p3 <"$root_dir/patches/locktorture-readmostly.patch") ||
    die "patches/locktorture-readmostly.patch does not apply to $srcpkg $srcver"
else
  bmods=("${mods[@]:0:4}")
fi
t0=$(date +%s)
nice make -s -j2 -C "$kdir" M="$work/src" KCFLAGS="$kcflags" modules >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; die "module build failed"; }
if grep -q 'warning:' "$work/build.log"; then
  grep 'warning:' "$work/build.log" >&2
  die "module build has warnings"
fi
rm -rf "$work/m"
mkdir -p "$work/m"
for m in "${bmods[@]}"; do
  vm=$(modinfo -F vermagic "$work/src/$m.ko" | cut -d' ' -f1)
  [ "$vm" = "$kver" ] || die "$m.ko built for $vm, the kernel is $kver"
  cp "$work/src/$m.ko" "$work/m/"
done
say "modules built against $kver in $(( $(date +%s) - t0 )) s"
runner >"$work/run.sh"

if [ $host = 1 ]; then
# ---- run on the host -----------------------------------------------------------------
# The kernel log from here on: dmesg follows it into a file (line-buffered,
# so that nothing is lost when it is stopped); a marker with a nonce opens
# this run's part.  Whatever happens, every module of ours still loaded is
# unloaded on exit (none was loaded before: checked above).
log=$work/host.log
dm_pid=""
host_cleanup() {
  local m
  for m in locktorture torture rm_sbuf rm_rlu_bench rm_locks rm_rlu; do
    if [ -d "/sys/module/$m" ]; then
      if rmmod "$m"; then say "unloaded $m (left loaded by a failed run)"; else say "could not unload $m"; fi
    fi
  done
  if [ -n "$dm_pid" ]; then kill "$dm_pid" 2>/dev/null || true; wait "$dm_pid" 2>/dev/null || true; dm_pid=""; fi
}
trap host_cleanup EXIT
trap 'exit 130' INT TERM
nonce=$(date +%s%N)
stdbuf -oL dmesg -w -t >"$work/dmesg.txt" 2>/dev/null &
dm_pid=$!
sleep 0.5
echo "KSH: host run $nonce" >/dev/kmsg
t0=$(date +%s)
say "running ${#plan[@]} + ${#sbplan[@]} + ${#ltplan[@]} runs on the running kernel $kver (about $((total_ms / 1000)) s)"
M=$work/m KSH_OUT=/dev/kmsg sh "$work/run.sh" >"$work/run.out" 2>&1 || true
sleep 1
host_cleanup
sed -n "/^KSH: host run $nonce\$/,\$p" "$work/dmesg.txt" >"$log"
tvm=$(( $(date +%s) - t0 ))
accel=host
echo "$accel" >"$work/accel"
say "ran on the host in $tvm s; kernel log $log"
else
# ---- initramfs ---------------------------------------------------------------------
ird=$work/initramfs
rm -rf "$ird"
mkdir -p "$ird"/{bin,dev,proc,sys,m}
cp /bin/busybox "$ird/bin/busybox"
cp "$work"/m/*.ko "$ird/m/"
mknod "$ird/dev/console" c 5 1
mknod "$ird/dev/null" c 1 3
cp "$work/run.sh" "$ird/run.sh"
cat >"$ird/init" <<'EOS'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
. /run.sh
poweroff -f
EOS
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

# ---- boot ------------------------------------------------------------------------------
log=$work/serial.log
boot() { # accel
  local acc=$1 cpu=max
  [ "$acc" = kvm ] && cpu=host
  [ "$acc" = tcg ] && acc=tcg,thread=multi
  timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel "$acc" -cpu "$cpu" -smp 2 -m 1G \
    -nographic -no-reboot -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
    -append "$cmdline" </dev/null >"$log" 2>&1 &
  local q=$! stalled=0
  # A stalled kernel never finishes: once the log shows a stall, give the
  # kernel 25 s to print its reports (the stalled CPU's stack, the other
  # CPU's NMI backtrace) and stop the VM instead of waiting for the timeout.
  while kill -0 "$q" 2>/dev/null; do
    if [ $stalled = 0 ] && grep -q -E "$hang_re" "$log" 2>/dev/null; then
      stalled=$(date +%s)
    elif [ $stalled != 0 ] && [ $(( $(date +%s) - stalled )) -ge 25 ]; then
      say "the kernel reported a stall or lockup: VM stopped 25 s later"
      kill "$q" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  wait "$q" 2>/dev/null || true
}
hung() { # log: the VM stopped before the end, with a stall and no failed result
  ! grep -q '^KSH: done' "$1" && grep -q -E "$hang_re" "$1" &&
    ! grep -q -E 'result=FAIL|rm_ksbuf: round |End of test: [A-Z_]*FAIL|BUG:|Oops|WARNING:|lockdep|possible (circular|recursive) locking' "$1"
}
rm -f "$work/serial.hung.log" "$work/serial.hung.log.txt"
accel=${ACCEL:-}
if [ -z "$accel" ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  t0=$(date +%s)
  boot kvm
  if grep -q '^KSH: start' "$log"; then
    accel=kvm
  else
    say "KVM did not reach init ($(( $(date +%s) - t0 )) s): falling back to TCG"
  fi
fi
if [ "$accel" != kvm ]; then
  accel=tcg
  t0=$(date +%s)
  boot tcg
  # One hang of the emulator, and only a hang, is booted again (docs/kernel.md,
  # "A stalled VM"): the first log is kept and its report printed, and the
  # second boot decides.  Any failed result, bad lock state or warning in the
  # first log fails the run as it is.
  if [ "${HANG_RETRY:-1}" = 1 ] && hung "$log"; then
    cp "$log" "$work/serial.hung.log"
    tr -d '\r' <"$log" >"$work/serial.hung.log.txt"
    say "note: the first boot stalled before its runs ended (no run had failed); its report:"
    excerpt "$work/serial.hung.log.txt"
    say "note: booting once more; the first log is $work/serial.hung.log"
    hang_note="the first boot stalled and was booted again (kernel.sh printed its report)"
    boot tcg
  fi
fi
tvm=$(( $(date +%s) - t0 ))
echo "$accel" >"$work/accel"
say "VM ($accel, ${#plan[@]} + ${#sbplan[@]} + ${#ltplan[@]} runs) ran $tvm s; serial log $log"
fi # host
else
  [ -f "$work/accel" ] || die "RECHECK: no log of a run in $work"
  accel=$(cat "$work/accel")
  if [ "$accel" = host ]; then log=$work/host.log; else log=$work/serial.log; fi
  [ -f "$log" ] || die "RECHECK: no $log"
fi # RECHECK

# ---- check -------------------------------------------------------------------------------
tr -d '\r' <"$log" >"$log.txt"
bad=0
fails=()
fail() { echo "kernel.sh: FAIL: $*"; bad=1; fails+=("$*"); }
if pat=$(grep -n -E "$report_re" "$log.txt" | head -n 5) &&
   [ -n "$pat" ]; then
  fail "the kernel log reports:"
  echo "$pat"
  excerpt "$log.txt"
fi
if [ "$accel" = host ]; then
  grep -q '^KSH: start' "$log.txt" || fail "the run's start is not in the kernel log"
  grep -q '^KSH: done' "$log.txt" || fail "the runs did not finish (see $work/run.out)"
else
  grep -q '^KSH: start' "$log.txt" || fail "the VM did not reach init"
  if ! grep -q '^KSH: done' "$log.txt"; then
    fail "the init script did not finish (timeout ${timeout_s} s, or a panic)"
    [ -n "${pat:-}" ] || excerpt "$log.txt"
  fi
fi
while read -r l; do fail "$l"; done < <(grep -E '^KSH: (insmod|rmmod) .*rc=[1-9]' "$log.txt" || true)
nres=$(grep -c -E 'rm_(kbench|ktorture): experiment=' "$log.txt" || true)
[ "$nres" = "${#plan[@]}" ] || fail "$nres result lines for ${#plan[@]} runs"
while read -r l; do fail "${l#*] }"; done < <(grep -E 'rm_(kbench|ktorture): experiment=.*result=FAIL' "$log.txt" || true)
# The store-buffer model: a result line per run, no violation (a SKIP, with
# one CPU online, is said, not failed).
nsb=$(grep -c -E 'rm_ksbuf: experiment=' "$log.txt" || true)
[ "$nsb" = "${#sbplan[@]}" ] || fail "$nsb store-buffer model result lines for ${#sbplan[@]} runs"
while read -r l; do fail "${l#*] }"; done < <(grep -E 'rm_ksbuf: experiment=.*result=FAIL' "$log.txt" || true)
nv=$(grep -c -E 'rm_ksbuf: round ' "$log.txt" || true)
[ "$nv" = 0 ] || fail "store-buffer model: $nv rounds in which a writer went on while the reader was inside its section"
while read -r l; do say "note: ${l#*] }"; done < <(grep -E 'rm_ksbuf: experiment=.*result=SKIP' "$log.txt" || true)
# locktorture: one "End of test: SUCCESS" per run, no FAILURE, no failed
# acquisition ("Fail: 1").
nlt=$(grep -c -E -- '-torture:--- End of test: SUCCESS' "$log.txt" || true)
[ "$nlt" = "${#ltplan[@]}" ] || fail "$nlt locktorture runs ended in SUCCESS of ${#ltplan[@]}"
while read -r l; do fail "locktorture: ${l#*] }"; done < <(grep -E -- '-torture:--- End of test: [A-Z_]*FAIL|(Writes|Reads ):  Total: .*Fail: [1-9]' "$log.txt" || true)

# ---- CSV and summary -----------------------------------------------------------------
csv=$work/kernel.csv
{
  if [ "$accel" = host ]; then
    echo "# kernel: Linux $kver on the host ($(grep -c ^processor /proc/cpuinfo) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)); modules from kernel/; run ended $(date -u -r "$log" '+%Y-%m-%d %H:%M:%S') UTC"
  else
    echo "# kernel: Linux $kver in qemu ($accel), 2 vCPUs, 1 GiB; modules from kernel/; VM run ended $(date -u -r "$log" '+%Y-%m-%d %H:%M:%S') UTC"
  fi
  [ "$accel" = tcg ] && echo "# EMULATED: throughput under TCG emulation is not a measurement of any machine (metrics *_emulated)"
  echo "# mode: $([ $quick = 1 ] && echo quick || echo full)${MUTANT:+ MUTANT=$MUTANT}${ONLY:+ ONLY=$ONLY}"
  echo "experiment,impl,threads,param,rep,metric,value,unit"
  sfx=""
  [ "$accel" = tcg ] && sfx=_emulated
  { grep -o -E 'rm_(kbench|ktorture): experiment=.*' "$log.txt" || true; } | awk -v sfx="$sfx" '
    {
      delete f
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      if (f["experiment"] == "kernel_torture") {
        p = "fake_writers=" f["fake_writers"]
        printf "%s,%s,%s,%s,%s,errors,%s,count\n", f["experiment"], f["impl"], f["readers"], p, f["rep"], f["errors"]
        printf "%s,%s,%s,%s,%s,updates_per_s%s,%d,updates/s\n", f["experiment"], f["impl"], f["readers"], p, f["rep"], sfx, (f["ms"] > 0 ? f["updates"] * 1000 / f["ms"] : 0)
        printf "%s,%s,%s,%s,%s,reads_per_s%s,%d,reads/s\n", f["experiment"], f["impl"], f["readers"], p, f["rep"], sfx, (f["ms"] > 0 ? f["reads"] * 1000 / f["ms"] : 0)
      } else {
        p = sprintf("update=%g%%", f["update"] / 100)
        printf "%s,%s,%s,%s,%s,ops_per_s%s,%s,ops/s\n", f["experiment"], f["impl"], f["threads"], p, f["rep"], sfx, f["ops_per_s"]
        printf "%s,%s,%s,%s,%s,errors,%s,count\n", f["experiment"], f["impl"], f["threads"], p, f["rep"], f["errors"]
      }
    }'
  { grep -o -E 'rm_ksbuf: experiment=.*' "$log.txt" || true; } | awk '
    {
      delete f
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      if (f["result"] == "SKIP") next
      p = "hold_ms=" f["hold_ms"]
      printf "%s,%s,1,%s,%s,violations,%s,count\n", f["experiment"], f["impl"], p, f["rep"], f["violations"]
      printf "%s,%s,1,%s,%s,ipi_drains,%s,count\n", f["experiment"], f["impl"], p, f["rep"], f["ipi_drains"]
      printf "%s,%s,1,%s,%s,rounds,%s,count\n", f["experiment"], f["impl"], p, f["rep"], f["rounds"]
    }'
  awk -v sfx="$sfx" '
    /^KSH: locktorture begin/ { t = $4; w = $5; r = $6; s = $7; h = $8 + 0; wt = ""; rt = ""; ok = 0; next }
    /Writes:  Total:/ { sub(/.*Writes:  Total: /, ""); wt = $1 }
    /Reads :  Total:/ { sub(/.*Reads :  Total: /, ""); rt = $1 }
    /-torture:--- End of test: SUCCESS/ { ok = 1 }
    /rm_locks: (bravo_rwsem|prwlock) bravo / { st = $0; sub(/.* bravo /, "", st) }
    /^KSH: locktorture end/ {
      p = "writers=" w (h > 0 ? ";read_hold_us=" h : "")
      printf "locktorture,%s,%s,%s,1,result,%d,1=SUCCESS\n", t, r, p, ok
      n = split(st, kv, / +/)
      for (i = 1; i <= n; i++) if (split(kv[i], a, "=") == 2) printf "locktorture,%s,%s,%s,1,%s,%s,count\n", t, r, p, a[1], a[2]
      st = ""
      if (wt != "") printf "locktorture,%s,%s,%s,1,writes_per_s%s,%g,acquisitions/s\n", t, r, p, sfx, wt / s
      if (rt != "") printf "locktorture,%s,%s,%s,1,reads_per_s%s,%g,acquisitions/s\n", t, r, p, sfx, rt / s
    }' "$log.txt"
} >"$csv"
tag=""
[ "$accel" = tcg ] && tag=" (emulated)"
{ grep -o -E 'rm_(kbench|ktorture): experiment=.*' "$log.txt" || true; } | awk -v tag="$tag" '
  {
    delete f
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    if (f["experiment"] == "kernel_torture")
      printf "  %-14s %-10s readers=%s fake_writers=%s: %s, errors %s, %s updates %s reads in %s ms%s\n", f["experiment"], f["impl"], f["readers"], f["fake_writers"], f["result"], f["errors"], f["updates"], f["reads"], f["ms"], tag
    else
      printf "  %-14s %-10s threads=%s update=%g%%: %s, %s ops/s%s\n", f["experiment"], f["impl"], f["threads"], f["update"] / 100, f["result"], f["ops_per_s"], tag
  }'
{ grep -o -E 'rm_ksbuf: experiment=.*' "$log.txt" || true; } | awk '
  {
    delete f
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "  %-14s %-11s %s rounds of %s ms: %s, %s violations, buffer drained by an IPI %s times\n", f["experiment"], f["impl"], f["rounds"], f["hold_ms"], f["result"], f["violations"], f["ipi_drains"]
  }'
awk -v tag="$tag" '
  /^KSH: locktorture begin/ { t = $4; w = $5; r = $6; s = $7; h = $8 + 0; wt = "-"; rt = "-"; ok = "FAIL"; next }
  /Writes:  Total:/ { sub(/.*Writes:  Total: /, ""); wt = $1 }
  /Reads :  Total:/ { sub(/.*Reads :  Total: /, ""); rt = $1 }
  /-torture:--- End of test: SUCCESS/ { ok = "SUCCESS" }
  /rm_locks: (bravo_rwsem|prwlock) bravo / { st = $0; sub(/.* bravo /, "", st); sub(/ prwlock /, " ", st) }
  /^KSH: locktorture end/ {
    printf "  %-14s %-11s writers=%s readers=%s%s: %s, %s writes %s reads in %s s%s\n", "locktorture", t, w, r, (h > 0 ? " read_hold_us=" h : ""), ok, wt, rt, s, tag
    if (st != "") printf "                 %s\n", st
    st = ""
  }' "$log.txt"
say "CSV $csv"
# Every row has the driver's eight fields.
if badrows=$(awk -F, '!/^#/ && NF != 8' "$csv") && [ -n "$badrows" ]; then
  fail "CSV rows without 8 fields:"
  echo "$badrows" | head -n 5
fi
# The verdict, last, for the report (scripts/report.sh).
[ -n "$hang_note" ] && echo "# note: $hang_note; the first log: serial.hung.log" >>"$csv"
if [ $bad = 0 ]; then
  echo "# check: PASS" >>"$csv"
else
  echo "# check: FAIL: ${fails[0]}$([ ${#fails[@]} -gt 1 ] && echo " (and $(( ${#fails[@]} - 1 )) more)")" >>"$csv"
fi
if [ $bad = 0 ]; then
  say "PASS: ${#plan[@]} runs, ${#sbplan[@]} store-buffer model runs and ${#ltplan[@]} locktorture runs, every module loaded and unloaded, no error in the kernel log; $(( $(date +%s) - t_start )) s in all${hang_note:+ (note: $hang_note)}"
else
  say "FAIL ($(( $(date +%s) - t_start )) s); see $log.txt"
fi
exit $bad
