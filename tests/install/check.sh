#!/usr/bin/env bash
# The install test (CTest "install.readme", label install): what a new user
# does with the README.
#
#   tests/install/check.sh SOURCE_DIR BUILD_DIR WORK_DIR [CC [CMAKE]]
#
# 1. `cmake --install BUILD_DIR` into a staging prefix under WORK_DIR, then
#    move the tree elsewhere: nothing installed may depend on the prefix it
#    was installed to (readmostly.pc is relative to ${pcfiledir}, the CMake
#    package to its own directory).
# 2. Take every C block of README.md and of the docs it sends a newcomer to
#    for a whole program (docs/api-errors.md).  A block opened with ```c example=NAME.c
#    is a whole program; ```c fragment marks a deliberate piece of code; any
#    other ```c block fails the test (mark it one way or the other).
# 3. Each program is built with the command printed beside it: the first
#    line starting "cc " that names NAME.c in the ```sh blocks after it
#    (before the next C block), run as given with the moved prefix in
#    PKG_CONFIG_PATH, plus -Wall -Wextra -Werror; then run (the library
#    found through LD_LIBRARY_PATH, as the README's Install section says).
#    It must exit 0.
# 4. The same programs again through find_package(readmostly) in a CMake
#    project of their own (readmostly::readmostly and
#    readmostly::readmostly_static), built and run.
# Any failure names the file and line of the program.
set -euo pipefail
src=$1 build=$2 work=$3 cc=${4:-cc} cmake=${5:-cmake}
# The files whose C blocks are programs (paths relative to SOURCE_DIR).
example_files=(README.md docs/api-errors.md)

fail() { echo "install test: $*" >&2; exit 1; }
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }

rm -rf "$work"
mkdir -p "$work/examples"

# ---- 1. install, then move ------------------------------------------------
"$cmake" --install "$build" --prefix "$work/staged" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install $build failed (build every target first)"; }
mv "$work/staged" "$work/prefix"
prefix=$work/prefix
pcfile=$(find "$prefix" -name readmostly.pc -print -quit)
[ -n "$pcfile" ] || fail "no readmostly.pc installed"
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$(find "$prefix" -name 'libreadmostly.so' -print -quit)")
export PKG_CONFIG_PATH=$pcdir
# The flags must point into the moved tree.
for var in libdir includedir; do
  got=$(realpath -m "$(pkg-config --variable=$var readmostly)")
  case $got in "$(realpath "$prefix")"/*) ;;
    *) fail "pkg-config's $var is $got, outside the installed tree $prefix" ;;
  esac
done

# ---- 2. the C blocks of README.md and docs/api-errors.md --------------------
# manifest: NAME <TAB> FILE:LINE <TAB> build command
awk -v out="$work/examples" -v manifest="$work/manifest" -v src="$src/" '
  function finish_cmd() { if (name != "" && cmd == "") missing[name] = start }
  FNR == 1 {
    if (in_block) { print where ": the file ends inside a block" > "/dev/stderr"; bad = 1 }
    finish_cmd(); name = ""; in_block = 0
    rel = substr(FILENAME, 1, length(src)) == src ? substr(FILENAME, length(src) + 1) : FILENAME
  }
  { where = rel ":" FNR }
  /^```c( |$)/ {
    if (in_block) { print where ": a block opens inside another" > "/dev/stderr"; bad = 1 }
    in_block = 1; kind = "c"
    if (match($0, /example=[A-Za-z0-9_.-]+\.c/)) {
      finish_cmd()
      name = substr($0, RSTART + 8, RLENGTH - 8); start = where; cmd = ""
      if (name in seen) { print where ": a second program named " name > "/dev/stderr"; bad = 1 }
      seen[name] = where; order[++n] = name
      file = out "/" name; printf "" > file
      kind = "example"
    } else if ($0 !~ /fragment/) {
      print where ": a C block that is not marked: open it with ```c example=NAME.c " \
            "(a whole program, built and run by this test) or ```c fragment" > "/dev/stderr"
      bad = 1
    } else {
      finish_cmd(); name = ""
    }
    next
  }
  /^```sh/ { in_block = 1; kind = "sh"; next }
  /^```/ {
    if (in_block) { in_block = 0; if (kind == "example") close(file) }
    else { in_block = 1; kind = "other" }
    next
  }
  in_block && kind == "example" { print > file; next }
  in_block && kind == "sh" && name != "" && cmd == "" && $0 ~ /^cc / && index($0, name) {
    cmd = $0; sub(/[ \t]+#.*$/, "", cmd); cmds[name] = cmd; next
  }
  END {
    finish_cmd()
    for (k in missing) { print missing[k] ": " k " has no build command " \
                           "(a line starting \"cc \" naming it in a ```sh block after it)" > "/dev/stderr"; bad = 1 }
    for (i = 1; i <= n; i++) printf "%s\t%s\t%s\n", order[i], seen[order[i]], cmds[order[i]] > manifest
    exit bad
  }' "${example_files[@]/#/$src/}" || fail "the C blocks of ${example_files[*]} are not all marked and complete (above)"
[ -s "$work/manifest" ] || fail "README.md has no program marked \`\`\`c example=NAME.c"

# ---- 3. through pkg-config, with the printed command -----------------------
n=0
while IFS=$'\t' read -r name line cmd; do
  exe=${name%.c}
  # The printed command, with the configured compiler and warnings as errors.
  run="${cmd/#cc /$cc } -Wall -Wextra -Werror"
  echo "$line: $name: $run"
  (cd "$work/examples" && eval "$run") >"$work/$exe.build.log" 2>&1 ||
    { cat "$work/$exe.build.log" >&2; fail "$line: $name does not build with: $cmd"; }
  [ -x "$work/examples/$exe" ] || fail "$line: '$cmd' does not make ./$exe"
  (cd "$work/examples" && LD_LIBRARY_PATH=$libdir timeout 120 "./$exe") >"$work/$exe.run.log" 2>&1 ||
    { cat "$work/$exe.run.log" >&2; fail "$line: ./$exe (pkg-config build) failed"; }
  n=$((n + 1))
done <"$work/manifest"

# ---- 4. through find_package -----------------------------------------------
proj=$work/cmake-project
mkdir -p "$proj"
{
  echo "cmake_minimum_required(VERSION 3.25)"
  echo "project(readme_examples C)"
  echo "find_package(readmostly REQUIRED)"
  echo "message(STATUS \"readmostly_DIR: \${readmostly_DIR}\")"
  while IFS=$'\t' read -r name _ cmd; do
    exe=${name%.c}
    echo "add_executable($exe $work/examples/$name)"
    echo "target_link_libraries($exe PRIVATE readmostly::readmostly)"
    echo "add_executable(${exe}_static $work/examples/$name)"
    echo "target_link_libraries(${exe}_static PRIVATE readmostly::readmostly_static)"
    echo "target_compile_options($exe PRIVATE -Wall -Wextra -Werror)"
    echo "target_compile_options(${exe}_static PRIVATE -Wall -Wextra -Werror)"
    # The programs that the README builds with -DNDEBUG get it here too.
    if [[ $cmd == *-DNDEBUG* ]]; then
      echo "target_compile_definitions($exe PRIVATE NDEBUG)"
      echo "target_compile_definitions(${exe}_static PRIVATE NDEBUG)"
    fi
  done <"$work/manifest"
} >"$proj/CMakeLists.txt"
"$cmake" -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; fail "find_package(readmostly) from $prefix failed"; }
grep -q "readmostly_DIR: $prefix/" "$work/cmake.log" ||
  fail "find_package(readmostly) did not use the installed tree $prefix"
"$cmake" --build "$proj/build" -j2 >"$work/cmake-build.log" 2>&1 ||
  { cat "$work/cmake-build.log" >&2; fail "the README programs do not build through find_package"; }
while IFS=$'\t' read -r name line _; do
  exe=${name%.c}
  for v in "$exe" "${exe}_static"; do
    # No LD_LIBRARY_PATH: CMake's build RPATH must find the library.
    (cd "$work/examples" && timeout 120 "$proj/build/$v") >"$work/$v.cmake-run.log" 2>&1 ||
      { cat "$work/$v.cmake-run.log" >&2; fail "$line: $v (find_package build) failed"; }
  done
done <"$work/manifest"

# ---- 5. liburcu's API: the compat directory ---------------------------------
# A liburcu program with two flavors in one file (the memb flavor's
# flavor-less names and bp's prefixed ones; qsbr's too when the library has
# that flavor; liburcu's list when liburcu-dev is installed), through
# `pkg-config --cflags --libs readmostly-urcu` and readmostly::urcu /
# readmostly::urcu_static.
urcu=$work/urcu
mkdir -p "$urcu"
cat >"$urcu/two_flavors.c" <<'PROG'
#include <urcu.h>
#include <urcu/urcu-bp.h>
#if __has_include(<readmostly/rcu_qsbr.h>)
#include <urcu/urcu-qsbr.h>
#define HAVE_QSBR 1
#endif
#if __has_include(<urcu/rculist.h>)
#include <urcu/rculist.h>
#endif
#include <stdio.h>
#include <stdlib.h>

struct obj {
  int v;
  struct rcu_head rcu_head;
};
static struct obj *gp;
static int freed;
static void free_obj(struct rcu_head *h) {
  free(caa_container_of(h, struct obj, rcu_head));
  freed++;
}

int main(void) {
  rcu_register_thread();
  struct obj *o = calloc(1, sizeof *o);
  o->v = 1;
  rcu_assign_pointer(gp, o);
  urcu_bp_read_lock();
  int v = rcu_dereference(gp)->v;
  urcu_bp_read_unlock();
  struct obj *n = calloc(1, sizeof *n);
  n->v = 2;
  struct obj *old = rcu_xchg_pointer(&gp, n);
  synchronize_rcu();
  free(old);
  urcu_bp_call_rcu(&n->rcu_head, free_obj);
  rcu_barrier();
#ifdef HAVE_QSBR
  urcu_qsbr_register_thread();
  urcu_qsbr_read_lock();
  urcu_qsbr_read_unlock();
  urcu_qsbr_quiescent_state();
  urcu_qsbr_unregister_thread();
#endif
#if __has_include(<urcu/rculist.h>)
  struct item { int k; struct cds_list_head node; } it = {3, {NULL, NULL}};
  CDS_LIST_HEAD(list);
  cds_list_add_rcu(&it.node, &list);
  rcu_read_lock();
  struct item *p;
  int seen = 0;
  cds_list_for_each_entry_rcu(p, &list, node) seen += p->k;
  rcu_read_unlock();
  cds_list_del_rcu(&it.node); /* CMM_STORE_SHARED, from liburcu's urcu/system.h */
  synchronize_rcu();
  if (seen != 3) return 1;
#endif
  rcu_unregister_thread();
  if (v != 1 || freed != 1) return 1;
  printf("two flavors: ok\n");
  return 0;
}
PROG
(cd "$urcu" && $cc two_flavors.c -o two_flavors $(pkg-config --cflags --libs readmostly-urcu) \
   -Wall -Wextra -Werror) >"$urcu/build.log" 2>&1 ||
  { cat "$urcu/build.log" >&2; fail "the liburcu program does not build with pkg-config readmostly-urcu"; }
(cd "$urcu" && LD_LIBRARY_PATH=$libdir timeout 120 ./two_flavors) >"$urcu/run.log" 2>&1 ||
  { cat "$urcu/run.log" >&2; fail "the liburcu program (pkg-config build) failed"; }
mkdir -p "$urcu/cmake"
cat >"$urcu/cmake/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(urcu_program C)
find_package(readmostly REQUIRED)
add_executable(two_flavors $urcu/two_flavors.c)
target_link_libraries(two_flavors PRIVATE readmostly::urcu)
add_executable(two_flavors_static $urcu/two_flavors.c)
target_link_libraries(two_flavors_static PRIVATE readmostly::urcu_static)
target_compile_options(two_flavors PRIVATE -Wall -Wextra -Werror)
target_compile_options(two_flavors_static PRIVATE -Wall -Wextra -Werror)
CM
"$cmake" -S "$urcu/cmake" -B "$urcu/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  >"$urcu/cmake.log" 2>&1 && "$cmake" --build "$urcu/cmake/build" >>"$urcu/cmake.log" 2>&1 ||
  { cat "$urcu/cmake.log" >&2; fail "the liburcu program does not build with readmostly::urcu"; }
for v in two_flavors two_flavors_static; do
  timeout 120 "$urcu/cmake/build/$v" >"$urcu/$v.cmake-run.log" 2>&1 ||
    { cat "$urcu/$v.cmake-run.log" >&2; fail "the liburcu program ($v, find_package build) failed"; }
done

echo "install test: $n programs of ${example_files[*]} built and run through pkg-config and find_package" \
     "(shared and static) against an installed copy moved to $prefix; a two-flavor liburcu" \
     "program through readmostly-urcu.pc, readmostly::urcu and readmostly::urcu_static"
