/*
 * <urcu/defer.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * defer_rcu header.  The functions (defer_rcu, rcu_defer_register_thread,
 * rcu_defer_unregister_thread, rcu_defer_barrier, rcu_defer_barrier_thread,
 * rcu_defer_exit and their urcu_<flavor>_ names) come with the flavor
 * headers (<urcu.h>, <urcu/urcu-memb.h>, ...), which include this one.
 *
 * DIFFERENCES FROM LIBURCU
 *   defer_rcu(fct, p) queues fct(p) on the flavor's call_rcu queue (a
 *   worker calls it after a grace period); liburcu keeps a per-thread
 *   queue flushed by the caller or a defer thread.  Registration is
 *   nothing (returns 0); both barriers wait for every queued callback, not
 *   only the caller's.  Inside a read section with no memory for its node,
 *   defer_rcu does not call fct and says so on stderr (liburcu would wait
 *   for ever).
 */
#ifndef _URCU_DEFER_H
#define _URCU_DEFER_H
#include <pthread.h>
#include <stdlib.h>
#endif /* _URCU_DEFER_H */
