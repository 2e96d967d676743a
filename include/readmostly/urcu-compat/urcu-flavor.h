/* <urcu-flavor.h> (readmostly's liburcu compat directory): <urcu/flavor.h>. */
#include "urcu/flavor.h"
