/* <urcu-pointer.h> (readmostly's liburcu compat directory): <urcu/pointer.h>. */
#include "urcu/pointer.h"
