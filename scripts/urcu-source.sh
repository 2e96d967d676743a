# Sourced by scripts/urcu-suite.sh and scripts/urcu-abi-suite.sh (not run
# on its own): installs what both need from Debian (cmake, gcc, curl,
# bzip2, liburcu-dev) and unpacks Debian's liburcu 0.13.2 source tarball,
# checked against the sha256 of its .dsc, into $WORK.  Uses WORK, MIRROR
# and NAME (for messages); sets URCU_SRC to the unpacked tree.
urcu_source_prepare() {
  local need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v cc >/dev/null || need+=(gcc)
  command -v curl >/dev/null || need+=(curl)
  command -v bzip2 >/dev/null || need+=(bzip2)
  [ -f /usr/include/x86_64-linux-gnu/urcu/arch.h ] || [ -f /usr/include/urcu/arch.h ] || need+=(liburcu-dev)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; fi
  fi
  mkdir -p "$WORK"
  local tarball=$WORK/liburcu_0.13.2.orig.tar.bz2
  local sum=1213fd9f1b0b74da7de2bb74335b76098db9738fec5d3cdc07c0c524f34fc032
  if [ ! -f "$tarball" ] || ! echo "$sum  $tarball" | sha256sum -c --quiet - 2>/dev/null; then
    curl -fsSL -o "$tarball" "$MIRROR/libu/liburcu/liburcu_0.13.2.orig.tar.bz2"
    echo "$sum  $tarball" | sha256sum -c --quiet - || { echo "$NAME: checksum mismatch" >&2; exit 1; }
  fi
  URCU_SRC=$WORK/userspace-rcu-0.13.2
  rm -rf "$URCU_SRC"
  tar xjf "$tarball" -C "$WORK"
}
