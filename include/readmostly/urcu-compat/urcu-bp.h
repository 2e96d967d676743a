/* <urcu-bp.h> (readmostly's liburcu compat directory): the bp flavor
 * with its flavor-less names.  See <urcu/urcu-bp.h>. */
#define URCU_API_MAP
#include "urcu/urcu-bp.h"
