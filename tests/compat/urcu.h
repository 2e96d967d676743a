/* liburcu's <urcu.h>, served by readmostly (see readmostly/urcu.h) */
#include <readmostly/urcu.h>
