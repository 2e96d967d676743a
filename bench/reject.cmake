# Runs readmostly-bench with ARGS, which it must refuse: exit status 2 and a
# message on stderr matching EXPECT (the bad value and what is valid), no
# CSV row on stdout.  Short runs come first in the options (a later option
# overrides them), so that a driver that wrongly accepts the flags ends soon.
list(GET ARGS 0 exp)
list(REMOVE_AT ARGS 0)
execute_process(COMMAND ${BENCH} ${exp} --duration 0.01 --reps 1 --threads 1 --iterations 1000 ${ARGS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit status 2, got ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "stderr does not match '${EXPECT}':\n${err}")
endif()
if(out MATCHES "experiment,impl")
  message(FATAL_ERROR "a refused run started measuring:\n${out}")
endif()
