#!/usr/bin/env bash
# Build readmostly (RelWithDebInfo: optimised, assertions on) and run every
# test: unit contracts, torture tests with an oracle, benchmark smoke tests,
# and the README's programs against an installed copy (label install).
#   scripts/test.sh                 all tests (about 2-4 minutes on 2 cores)
#   BUILD_DIR=dir scripts/test.sh   another build directory
#   CTEST_ARGS="-L stress" scripts/test.sh   a subset
# Extra CMake options go in CMAKE_ARGS (e.g. -DREADMOSTLY_SANITIZE=thread).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-test}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v pkg-config >/dev/null || need+=(pkgconf) # the install test builds through it
# liburcu: the <urcu.h> compatibility test and the RCU sets' liburcu flavor
dpkg -s liburcu-dev >/dev/null 2>&1 || need+=(liburcu-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "test.sh: installing ${need[*]}"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; fi
fi

# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADMOSTLY_WERROR=ON ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)" --target all torture_yield rlu_torture_yield
cd "$BUILD_DIR"
# shellcheck disable=SC2086
ctest --output-on-failure -j"$(nproc)" ${CTEST_ARGS:-}
