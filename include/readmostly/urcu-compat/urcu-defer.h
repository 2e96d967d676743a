/* <urcu-defer.h> (readmostly's liburcu compat directory): <urcu/defer.h>. */
#include "urcu/defer.h"
