# A user's strict ISO C11 build (-std=c11, no GNU dialect), run as a CTest
# (unit.strict_c11, label unit) in CMake's script mode:
#
#   cmake -DCC=<C compiler> -DSRC=<source dir> -DWORK=<scratch dir> -P strict_c11.cmake
#
# 1. One file that includes every public header (include/readmostly/*.h)
#    compiles with -std=c11 -D_POSIX_C_SOURCE=200809L, and again with
#    -D_GNU_SOURCE, quietly under -Wall -Wextra -Wpedantic -Werror.
# 2. Without either define, each header alone fails, and the first error is
#    platform.h's #error naming the define, not a list of undeclared names.
cmake_minimum_required(VERSION 3.20)
foreach(var CC SRC WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "strict_c11.cmake: -D${var}=... is missing")
  endif()
endforeach()

set(want "readmostly needs POSIX 2008")
set(want_define "-D_POSIX_C_SOURCE=200809L or -D_GNU_SOURCE")
set(flags -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I${SRC}/include)

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(GLOB headers ${SRC}/include/readmostly/*.h)
list(SORT headers)
set(all "")
foreach(h ${headers})
  get_filename_component(hn ${h} NAME)
  string(APPEND all "#include <readmostly/${hn}>\n")
endforeach()
string(APPEND all "int main(void) { return 0; }\n")
file(WRITE ${WORK}/all.c "${all}")

# ---- 1. with the define, every header together builds --------------------
foreach(define -D_POSIX_C_SOURCE=200809L -D_GNU_SOURCE)
  execute_process(COMMAND ${CC} ${flags} ${define} ${WORK}/all.c
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "every public header with -std=c11 ${define} does not compile:\n${out}${err}")
  endif()
  message(STATUS "all public headers, -std=c11 ${define}: ok")
endforeach()

# ---- 2. without it, each header fails with the clear message first --------
foreach(h ${headers})
  get_filename_component(hn ${h} NAME)
  get_filename_component(hw ${h} NAME_WE)
  file(WRITE ${WORK}/${hw}.c "#include <readmostly/${hn}>\nint main(void) { return 0; }\n")
  execute_process(COMMAND ${CC} ${flags} ${WORK}/${hw}.c
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "<readmostly/${hn}> compiled with -std=c11 and no POSIX define: "
                        "the check in platform.h is gone, or the system declares "
                        "CLOCK_MONOTONIC in strict C11 (then drop this test)")
  endif()
  # The first line that reports an error must be platform.h's #error.
  string(REGEX MATCH "[^\n]*error[^\n]*" first "${err}")
  string(FIND "${first}" "${want}" at_want)
  string(FIND "${first}" "${want_define}" at_define)
  if(at_want LESS 0 OR at_define LESS 0)
    message(FATAL_ERROR "<readmostly/${hn}> with -std=c11 and no POSIX define: the first "
                        "error is not readmostly's #error naming ${want_define}:\n${err}")
  endif()
endforeach()
list(LENGTH headers n)
message(STATUS "${n} headers alone, -std=c11 without a POSIX define: each fails with "
               "\"${want} ... ${want_define}\" first")
