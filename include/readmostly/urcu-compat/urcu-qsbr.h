/* <urcu-qsbr.h> (readmostly's liburcu compat directory): the qsbr flavor
 * with its flavor-less names.  See <urcu/urcu-qsbr.h>. */
#define URCU_API_MAP
#include "urcu/urcu-qsbr.h"
