# readmostly-bench: the benchmark driver (bench/harness.c and one
# bench/exp_*.c per experiment family).  The
# Concurrency Kit peers are compiled in when Debian's libck-dev is installed
# (header-only use), liburcu's memb flavour when liburcu-dev is.
include(CheckIncludeFile)
# A "not found" is looked for again at every configure, so that a build
# directory configured before libck-dev was installed picks it up (the
# report installs it, then configures).
if(NOT RM_BENCH_HAVE_CK)
  unset(RM_BENCH_HAVE_CK CACHE)
endif()
check_include_file(ck_rwlock.h RM_BENCH_HAVE_CK)
find_path(RM_URCU_INCLUDE urcu/urcu-memb.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
find_library(RM_URCU_MEMB_LIB urcu-memb)
find_library(RM_URCU_COMMON_LIB urcu-common)

add_executable(readmostly-bench harness.c glossary.c locks.c exp_rwlock.c exp_fcp.c exp_rcu.c exp_citrus.c
               exp_rlu.c exp_dlist.c exp_rcu_hash.c exp_rlu_resize.c)
target_link_libraries(readmostly-bench PRIVATE readmostly_static)
target_include_directories(readmostly-bench PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
if(RM_BENCH_HAVE_CK)
  target_compile_definitions(readmostly-bench PRIVATE RM_BENCH_HAVE_CK=1)
else()
  message(STATUS "readmostly-bench: libck-dev not found; ck-rwlock, ck-pflock, ck-brlock left out")
endif()
if(RM_URCU_INCLUDE AND RM_URCU_MEMB_LIB)
  target_compile_definitions(readmostly-bench PRIVATE RM_BENCH_HAVE_URCU=1)
  target_include_directories(readmostly-bench PRIVATE ${RM_URCU_INCLUDE})
  target_link_libraries(readmostly-bench PRIVATE ${RM_URCU_MEMB_LIB})
  if(RM_URCU_COMMON_LIB)
    target_link_libraries(readmostly-bench PRIVATE ${RM_URCU_COMMON_LIB})
  endif()
else()
  message(STATUS "readmostly-bench: liburcu-dev not found; urcu-memb left out")
endif()
# The RCU experiments' peers: liburcu's memb, mb, signal, qsbr and bp flavours,
# each compiled in when its library is found (their prefixed names coexist
# in one program); a flavour not found is listed as absent and skipped.
if(RM_URCU_INCLUDE)
  foreach(flavor memb mb signal qsbr bp)
    string(TOUPPER ${flavor} FLAVOR)
    find_library(RM_URCU_${FLAVOR}_LIBRARY urcu-${flavor})
    if(RM_URCU_${FLAVOR}_LIBRARY)
      target_compile_definitions(readmostly-bench PRIVATE RM_BENCH_HAVE_URCU_${FLAVOR}=1)
      target_link_libraries(readmostly-bench PRIVATE ${RM_URCU_${FLAVOR}_LIBRARY})
    else()
      message(STATUS "readmostly-bench: liburcu-${flavor} not found; urcu-${flavor} left out")
    endif()
  endforeach()
  target_include_directories(readmostly-bench PRIVATE ${RM_URCU_INCLUDE})
  if(RM_URCU_COMMON_LIB)
    target_link_libraries(readmostly-bench PRIVATE ${RM_URCU_COMMON_LIB})
  endif()
endif()
install(TARGETS readmostly-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Smoke tests: every experiment runs briefly, oversubscribed, and produces
# rows that scripts/bench_check.sh accepts (header, no NaN, positive values).
set(RM_BENCH_SMOKE
  "latency|--iterations|20000"
  "readers|--threads|1,3"
  "alternator|--threads|1,3"
  "interference|--threads|3|--param|locks=1,64"
  "test_rwlock|--threads|1,3"
  "rwbench|--threads|3|--param|P=1/2,1/10000"
  "hashtable|--threads|1,3|--param|keys=1024"
  "cs_efficiency|--impl|prwlock,pthread,bravo-ba|--param|readers=0,1,3"
  "scan|--param|slots=4096,16384"
  "revoke_tail|--impl|bravo-ba,bravo2d-ba|--threads|1,3"
  "revoke_tail:wm|--impl|bravowm-ba,bravowm-pthread|--threads|1|--param|writers=2"
  "dyn_table|--threads|1,3|--param|slots=16,0"
  "revocation|--impl|bravo-ba,bravo2d-ba,bravo-pthread,bravo2d-pthread|--param|slots=4096,16384"
  "writer_freq|--impl|prwlock,pthread,rcu,rcu-fence,urcu-memb,urcu-qsbr|--threads|1,3|--param|delay_us=10"
  "sleepers|--impl|prwlock,pthread|--threads|3|--param|sleepy=0,1"
  "wakeup|--param|readers=1,3"
  "rcu_read|--threads|1,3"
  "grace_period|--param|readers=0,3|--param|callers=1,2"
  "grace_period:mixed|--param|readers=1|--param|sleepy=1|--param|idle=2"
  "rcu_batch|--threads|1,3|--param|batch=1,100"
  "rcu_hash|--threads|1,3|--param|mode=both|--param|items=4096|--param|buckets=512"
  "citrus|--threads|1,3|--param|update=20|--param|range=2000"
  "rlu_list|--threads|1,3|--param|update=0,40|--param|size=200"
  "rlu_hash|--threads|3|--param|update=20|--param|size=2000|--param|buckets=20"
  "rlu_stress|--threads|1,3|--param|size=500|--param|buckets=500"
  "rlu_read|--impl|rlu,rlu-fence,rcu,urcu-memb"
  "dlist|--threads|1,3|--param|update=1,50|--param|size=100"
  "rlu_resize|--threads|1,3|--param|mode=all|--param|items=4096")
# An entry's name is its experiment, or EXPERIMENT:VARIANT.
foreach(spec ${RM_BENCH_SMOKE})
  string(REPLACE "|" ";" args "${spec}")
  list(GET args 0 exp)
  string(REPLACE ":" "." test ${exp})
  string(REGEX REPLACE ":.*" "" experiment ${exp})
  list(REMOVE_AT args 0)
  list(INSERT args 0 ${experiment})
  add_test(NAME bench.${test}
    COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:readmostly-bench>
            "-DARGS=${args};--duration;0.05;--reps;1"
            -DOUT=${CMAKE_CURRENT_BINARY_DIR}/smoke-${test}.csv
            -P ${CMAKE_CURRENT_SOURCE_DIR}/smoke.cmake)
  set_tests_properties(bench.${test} PROPERTIES LABELS bench-smoke TIMEOUT 300)
endforeach()

# Bad flags are refused with exit status 2 and a message naming the value
# and what is valid (bench/reject.cmake): malformed lists, out-of-range
# numbers, parameters the experiment does not declare, bad parameter values.
# NAME|EXPECT (regex on stderr)|ARGS...
set(RM_BENCH_REJECT
  "threads_empty|--threads '1,,2' .an empty element.*1..1024|readers|--threads|1,,2"
  "threads_trailing|--threads '1,2,' .an empty element|readers|--threads|1,2,"
  "threads_zero|--threads '0' .0 is out of range.*1..1024|readers|--threads|0"
  "reps_word|--reps 'x' .'x' is not an integer.*1..1000|readers|--reps|x"
  "duration_word|--duration '1x'|readers|--duration|1x"
  "param_unknown|unknown parameter 'bogus' for writer_freq. its parameters: delay_us=.*ceiling=|writer_freq|--param|bogus=1"
  "param_none|unknown parameter 'x': readers takes no --param|readers|--param|x=1"
  "param_list_empty|bad delay_us=1,,10 .an empty element.*0..10000000|writer_freq|--param|delay_us=1,,10"
  "param_choice|bad op=foo: want one of read.write.bias_off.both|latency|--param|op=foo"
  "param_prob|bad P=1/2,2 .'2'.*probabilities|rwbench|--param|P=1/2,2"
  "param_twice|--param readers given twice|cs_efficiency|--param|readers=1|--param|readers=2"
  "impl_unknown|unknown implementation 'nope' for readers. valid: ba,bravo-ba|readers|--impl|nope"
  "impl_empty|bad --impl 'ba,,futex' .an empty element.*names among ba,|readers|--impl|ba,,futex"
  "impl_no_write|urcu-memb has no write lock. test_rwlock needs one .valid: ba,|test_rwlock|--impl|urcu-memb"
  "rlu_update_range|bad update=2,101: want comma-separated percentages in .0, 100.|rlu_list|--param|update=2,101"
  "rlu_list_buckets|unknown parameter 'buckets' for rlu_list. its parameters: update=|rlu_list|--param|buckets=10"
  "rlu_stress_update|unknown parameter 'update' for rlu_stress|rlu_stress|--param|update=50"
  "rlu_size_list|bad size=10,20 .a list where one value is wanted|rlu_hash|--param|size=10,20"
  "rlu_read_impl|unknown implementation 'rlu-defer' for rlu_read. valid: rlu,rlu-fence,rcu|rlu_read|--impl|rlu-defer"
  "param_percent|bad update=0.1,101: want comma-separated percentages in .0, 100.|dlist|--param|update=0.1,101"
  "rlu_resize_mode|bad mode=32k: want one of 8k.16k.resizing.all|rlu_resize|--param|mode=32k"
  "rlu_resize_impl|unknown implementation 'urcu-qsbr' for rlu_resize.*valid: rcu,urcu-memb,rlu,rlu-upd10|rlu_resize|--impl|urcu-qsbr")
foreach(spec ${RM_BENCH_REJECT})
  string(REPLACE "|" ";" args "${spec}")
  list(GET args 0 name)
  list(GET args 1 expect)
  list(REMOVE_AT args 0 1)
  add_test(NAME bench.reject.${name}
    COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:readmostly-bench> "-DARGS=${args}"
            "-DEXPECT=${expect}" -P ${CMAKE_CURRENT_SOURCE_DIR}/reject.cmake)
  set_tests_properties(bench.reject.${name} PROPERTIES LABELS bench-smoke TIMEOUT 60)
endforeach()
