#!/usr/bin/env bash
# Build the kernel modules in kernel/ (and the kernel's locktorture, from
# linux-source-6.1, with our lock types) against Debian's kernel headers,
# boot that kernel in qemu with a busybox initramfs that loads each module
# with its parameters and unloads it, and check the serial log.
# docs/kernel.md describes the modules and the runs.
#
#   scripts/kernel.sh            # the full run: RLU benchmarks and tortures,
#                                # locktorture with 1 and 0 writers
#   scripts/kernel.sh --quick    # tortures for a few seconds, each benchmark
#                                # for a moment (CI)
#
# Environment: WORK (default build-kernel/: packages' files, the build, the
# initramfs, the serial log, kernel.csv), TORTURE_MS, BENCH_MS and
# LOCKTORTURE_S (override the durations), TIMEOUT (seconds before the VM is killed; default from
# the plan), RECHECK (1: check and parse the last run's log again, no build
# and no boot), ONLY (rlu or locktorture: one half of the plan), MUTANT (see
# below), ACCEL (kvm or tcg; default: kvm when /dev/kvm opens, and tcg
# when the KVM boot does not reach init).
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
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
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

# ---- packages ---------------------------------------------------------------
# The kernel Debian's linux-image-amd64 points to; its headers must be the
# same version (the modules' vermagic).
export DEBIAN_FRONTEND=noninteractive
kver=${KVER:-$(apt-cache depends linux-image-amd64 2>/dev/null |
  sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n 1)}
if [ -z "$kver" ]; then
  apt-get update -qq >/dev/null
  kver=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: linux-image-\(.*\)$/\1/p' | head -n 1)
fi
[ -n "$kver" ] || die "cannot tell which kernel linux-image-amd64 is"
# RECHECK=1: no build and no boot; check and parse the serial log of the
# last run in $WORK again (with the same plan options).
if [ -z "${RECHECK:-}" ]; then
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
# The kernel's own sources (linux-source-6.1) give locktorture and the
# torture core, which Debian's kernel does not build.
srcpkg=linux-source-$(cut -d. -f1,2 <<<"$kver")
need=()
for p in qemu-system-x86 busybox-static cpio gzip make gcc kmod patch xz-utils "linux-headers-$kver" "$srcpkg"; do
  installed "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  { apt-get install -y -qq --no-install-recommends "${need[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; }; } >"$work/apt.log" 2>&1 ||
    { tail -n 20 "$work/apt.log" >&2; die "apt-get install failed"; }
fi
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
kdir=/usr/src/linux-headers-$kver
[ -d "$kdir" ] || die "no $kdir"
# The three files of the kernel's sources that locktorture needs, unpacked
# once per source version (reading the 140 MB tarball takes half a minute).
srcver=$(dpkg-query -W -f='${Version}' "$srcpkg")
ksrc=$work/linux-src/$srcver
if [ ! -f "$ksrc/kernel/locking/locktorture.c" ]; then
  rm -rf "$work/linux-src"
  mkdir -p "$ksrc"
  tar -xJf "/usr/src/$srcpkg.tar.xz" -C "$ksrc" --strip-components=1 \
    "$srcpkg/kernel/locking/locktorture.c" "$srcpkg/kernel/torture.c" "$srcpkg/kernel/rcu/rcu.h" ||
    die "cannot unpack locktorture from /usr/src/$srcpkg.tar.xz"
fi
imgver=$(dpkg-deb -f "$(ls "$work"/debs/linux-image-"$kver"_*.deb | tail -n 1)" Version)
[ "$imgver" = "$srcver" ] || say "note: $srcpkg is $srcver, the image $imgver"

# ---- modules -----------------------------------------------------------------
# Built from a copy, so that Kbuild's objects stay out of the source tree.
rm -rf "$work/src"
mkdir -p "$work/src"
cp -r kernel/. "$work/src/"
cp "$ksrc/kernel/locking/locktorture.c" "$ksrc/kernel/torture.c" "$work/src/locktorture/"
mkdir -p "$work/src/locktorture/rcu"
cp "$ksrc/kernel/rcu/rcu.h" "$work/src/locktorture/rcu/"
(cd "$work/src/locktorture" && patch -s -p3 <"$root_dir/patches/locktorture-readmostly.patch") ||
  die "patches/locktorture-readmostly.patch does not apply to $srcpkg $srcver"
t0=$(date +%s)
# Checks of the checks, run by hand; each must make the run FAIL:
#   MUTANT=no_wait        RLU's synchronize does not wait (rm_rlu.c)
#   MUTANT=no_ipi         RLU's fence-free writers send no IPI (rm_rlu.c); not
#                         caught under emulation (docs/kernel.md)
#   MUTANT=no_revoke      BRAVO's writer does not revoke (rm_locks.c)
#   MUTANT=no_consensus   prwlock's writer does not wait for passive readers
kcflags=""
[ -n "${MUTANT:-}" ] && kcflags="-DRM_MUTANT_$(tr a-z A-Z <<<"$MUTANT")"
nice make -s -j2 -C "$kdir" M="$work/src" KCFLAGS="$kcflags" modules >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; die "module build failed"; }
if grep -q 'warning:' "$work/build.log"; then
  grep 'warning:' "$work/build.log" >&2
  die "module build has warnings"
fi
mods=(rlu/rm_rlu rlu_bench/rm_rlu_bench locks/rm_locks locktorture/torture locktorture/locktorture)
for m in "${mods[@]}"; do
  vm=$(modinfo -F vermagic "$work/src/$m.ko" | cut -d' ' -f1)
  [ "$vm" = "$kver" ] || die "$m.ko built for $vm, the image is $kver"
done
say "modules built against $kver in $(( $(date +%s) - t0 )) s"
fi # RECHECK

# ---- the plan --------------------------------------------------------------------
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
  for n in 1 2 4; do
    for impl in rlu rlu-ff rlu-defer; do
      plan+=("test=torture impl=$impl threads=$n duration=$tms rep=1")
    done
  done
  for upd in 10 100; do
    for impl in rcu rlu rlu-ff rlu-defer rlu-coarse; do
      for n in 1 2 4; do
        plan+=("test=dlist impl=$impl threads=$n update=$upd range=1000 duration=$bms rep=1")
      done
    done
  done
  for test in list hash; do
    if [ $test = list ]; then sz="range=1000"; else sz="range=20000 buckets=1000"; fi
    for upd in 200 2000 4000; do
      for impl in rcu rlu rlu-ff rlu-defer rlu-coarse; do
        for n in 1 2 4; do
          plan+=("test=$test impl=$impl threads=$n update=$upd $sz duration=$bms rep=1")
        done
      done
    done
  done
fi
# locktorture: rwsem_lock (the kernel's rw_semaphore), bravo_rwsem and
# prwlock; the BRAVO paper's two figures: 1 writer and 0 writers, readers
# from 1 to the VM's CPUs.  "type writers readers seconds" per run.
ltplan=()
if [ $quick = 1 ]; then
  lts=${LOCKTORTURE_S:-3}
  for t in rwsem_lock bravo_rwsem prwlock; do ltplan+=("$t 1 2 $lts"); done
else
  lts=${LOCKTORTURE_S:-10}
  for w in 1 0; do
    for r in 1 2; do
      for t in rwsem_lock bravo_rwsem prwlock; do ltplan+=("$t $w $r $lts"); done
    done
  done
fi
# ONLY=rlu or ONLY=locktorture keeps one half of the plan.
case ${ONLY:-} in
  rlu) ltplan=() ;;
  locktorture) plan=() ;;
  '') ;;
  *) die "ONLY is rlu or locktorture" ;;
esac
total_ms=0
for p in "${ltplan[@]}"; do
  total_ms=$((total_ms + ${p##* } * 1000))
done
for p in "${plan[@]}"; do
  d=$(sed -n 's/.*duration=\([0-9]*\).*/\1/p' <<<"$p")
  total_ms=$((total_ms + d))
done

if [ -z "${RECHECK:-}" ]; then
# ---- initramfs ---------------------------------------------------------------------
ird=$work/initramfs
rm -rf "$ird"
mkdir -p "$ird"/{bin,dev,proc,sys,m}
cp /bin/busybox "$ird/bin/busybox"
for m in "${mods[@]}"; do cp "$work/src/$m.ko" "$ird/m/"; done
mknod "$ird/dev/console" c 5 1
mknod "$ird/dev/null" c 1 3
{
  cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "KSH: start $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
ld() { insmod "/m/$1.ko" $2; echo "KSH: insmod $1 rc=$? $2"; }
ul() { rmmod "$1"; echo "KSH: rmmod $1 rc=$?"; }
ld rm_rlu ""
EOF
  for p in "${plan[@]}"; do
    printf 'ld rm_rlu_bench "%s"\nul rm_rlu_bench\n' "$p"
  done
  cat <<'EOF'
ul rm_rlu
ld rm_locks ""
ld torture ""
lt() {
  echo "KSH: locktorture begin $1 $2 $3 $4"
  insmod /m/locktorture.ko torture_type=$1 nwriters_stress=$2 nreaders_stress=$3 stat_interval=0 verbose=0
  echo "KSH: insmod locktorture rc=$? $1"
  sleep $4
  rmmod locktorture
  echo "KSH: rmmod locktorture rc=$?"
  echo "KSH: locktorture end"
}
EOF
  for p in "${ltplan[@]}"; do echo "lt $p"; done
  cat <<'EOF'
ul torture
ul rm_locks
echo "KSH: done"
poweroff -f
EOF
} >"$ird/init"
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

# ---- boot ------------------------------------------------------------------------------
log=$work/serial.log
timeout_s=${TIMEOUT:-$((180 + total_ms * 3 / 1000 + ${#plan[@]} * 5 + ${#ltplan[@]} * 10))}
cmdline="console=ttyS0 oops=panic panic=-1 panic_on_warn=1 preempt=full"
boot() { # accel
  local acc=$1 cpu=max
  [ "$acc" = kvm ] && cpu=host
  [ "$acc" = tcg ] && acc=tcg,thread=multi
  timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel "$acc" -cpu "$cpu" -smp 2 -m 1G \
    -nographic -no-reboot -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
    -append "$cmdline" </dev/null >"$log" 2>&1 || true
}
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
fi
tvm=$(( $(date +%s) - t0 ))
echo "$accel" >"$work/accel"
say "VM ($accel, ${#plan[@]} + ${#ltplan[@]} runs) ran $tvm s; serial log $log"
else
  log=$work/serial.log
  [ -f "$log" ] && [ -f "$work/accel" ] || die "RECHECK: no serial log of a run in $work"
  accel=$(cat "$work/accel")
  timeout_s=${TIMEOUT:-?}
fi # RECHECK

# ---- check -------------------------------------------------------------------------------
tr -d '\r' <"$log" >"$log.txt"
bad=0
fail() { echo "kernel.sh: FAIL: $*"; bad=1; }
if pat=$(grep -n -E 'BUG:|Oops|WARNING:|Kernel panic|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|detected stall|self-detected stall|blocked for more than|UBSAN|KASAN|Call Trace' "$log.txt" | head -n 5) &&
   [ -n "$pat" ]; then
  fail "the kernel log reports:"
  echo "$pat"
fi
grep -q '^KSH: start' "$log.txt" || fail "the VM did not reach init"
grep -q '^KSH: done' "$log.txt" || fail "the init script did not finish (timeout ${timeout_s} s, or a panic)"
while read -r l; do fail "$l"; done < <(grep -E '^KSH: (insmod|rmmod) .*rc=[1-9]' "$log.txt" || true)
nres=$(grep -c -E 'rm_(kbench|ktorture): experiment=' "$log.txt" || true)
[ "$nres" = "${#plan[@]}" ] || fail "$nres result lines for ${#plan[@]} runs"
while read -r l; do fail "${l#*] }"; done < <(grep -E 'rm_(kbench|ktorture): experiment=.*result=FAIL' "$log.txt" || true)
# locktorture: one "End of test: SUCCESS" per run, no FAILURE, no failed
# acquisition ("Fail: 1").
nlt=$(grep -c -E -- '-torture:--- End of test: SUCCESS' "$log.txt" || true)
[ "$nlt" = "${#ltplan[@]}" ] || fail "$nlt locktorture runs ended in SUCCESS of ${#ltplan[@]}"
while read -r l; do fail "locktorture: ${l#*] }"; done < <(grep -E -- '-torture:--- End of test: [A-Z_]*FAIL|(Writes|Reads ):  Total: .*Fail: [1-9]' "$log.txt" || true)

# ---- CSV and summary -----------------------------------------------------------------
csv=$work/kernel.csv
{
  echo "# kernel: Linux $kver in qemu ($accel), 2 vCPUs, 1 GiB; modules from kernel/; VM run ended $(date -u -r "$log" '+%Y-%m-%d %H:%M:%S') UTC"
  [ "$accel" = tcg ] && echo "# EMULATED: throughput under TCG emulation is not a measurement of any machine (metrics *_emulated)"
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
  awk -v sfx="$sfx" '
    /^KSH: locktorture begin/ { t = $4; w = $5; r = $6; s = $7; wt = ""; rt = ""; ok = 0; next }
    /Writes:  Total:/ { sub(/.*Writes:  Total: /, ""); wt = $1 }
    /Reads :  Total:/ { sub(/.*Reads :  Total: /, ""); rt = $1 }
    /-torture:--- End of test: SUCCESS/ { ok = 1 }
    /rm_locks: (bravo_rwsem|prwlock) bravo / { st = $0; sub(/.* bravo /, "", st) }
    /^KSH: locktorture end/ {
      p = "writers=" w
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
awk -v tag="$tag" '
  /^KSH: locktorture begin/ { t = $4; w = $5; r = $6; s = $7; wt = "-"; rt = "-"; ok = "FAIL"; next }
  /Writes:  Total:/ { sub(/.*Writes:  Total: /, ""); wt = $1 }
  /Reads :  Total:/ { sub(/.*Reads :  Total: /, ""); rt = $1 }
  /-torture:--- End of test: SUCCESS/ { ok = "SUCCESS" }
  /rm_locks: (bravo_rwsem|prwlock) bravo / { st = $0; sub(/.* bravo /, "", st); sub(/ prwlock /, " ", st) }
  /^KSH: locktorture end/ {
    printf "  %-14s %-11s writers=%s readers=%s: %s, %s writes %s reads in %s s%s\n", "locktorture", t, w, r, ok, wt, rt, s, tag
    if (st != "") printf "                 %s\n", st
    st = ""
  }' "$log.txt"
say "CSV $csv"
# Every row has the driver's eight fields.
if badrows=$(awk -F, '!/^#/ && NF != 8' "$csv") && [ -n "$badrows" ]; then
  fail "CSV rows without 8 fields:"
  echo "$badrows" | head -n 5
fi
if [ $bad = 0 ]; then
  say "PASS: ${#plan[@]} runs and ${#ltplan[@]} locktorture runs, every module loaded and unloaded, no error in the kernel log; $(( $(date +%s) - t_start )) s in all"
else
  say "FAIL ($(( $(date +%s) - t_start )) s); see $log.txt"
fi
exit $bad
