/* <urcu.h> (readmostly's liburcu compat directory): liburcu's default
 * flavor with its flavor-less names (rcu_read_lock, call_rcu, ...).  See
 * <urcu/urcu-memb.h>. */
#define URCU_API_MAP
#include "urcu/urcu.h"
