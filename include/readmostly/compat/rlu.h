/*
 * rlu.h - drop-in for the RLU reference implementation's header.  Put
 * <prefix>/include/readmostly/compat first on the include path and link
 * with -lreadmostly: code that says #include "rlu.h" builds unchanged
 * against readmostly's RLU (see readmostly/rlu-compat.h).
 */
#ifndef RLU_H
#define RLU_H 1
#include <readmostly/rlu-compat.h>
#endif
