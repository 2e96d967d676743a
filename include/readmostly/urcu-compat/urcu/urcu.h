/*
 * <urcu/urcu.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * flavor choice at compile time: RCU_MEMBARRIER (the default), RCU_MB or
 * RCU_SIGNAL selects <urcu/urcu-memb.h>, <urcu/urcu-mb.h> or
 * <urcu/urcu-signal.h>, as liburcu's.  All three are FCP-RCU's domain
 * here (docs/rcu-urcu.md, "Flavor mapping").
 */
#ifndef _URCU_H
#define _URCU_H
#if !defined(RCU_MEMBARRIER) && !defined(RCU_SIGNAL) && !defined(RCU_MB)
#define RCU_MEMBARRIER
#endif
#if defined(RCU_MEMBARRIER)
#include "urcu-memb.h"
#elif defined(RCU_SIGNAL)
#include "urcu-signal.h"
#else
#include "urcu-mb.h"
#endif
#endif /* _URCU_H */
