/* <urcu-call-rcu.h> (readmostly's liburcu compat directory): <urcu/call-rcu.h>. */
#include "urcu/call-rcu.h"
