/*
 * <urcu/urcu-mb.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * memory-barrier flavor, urcu_mb_*, on FCP-RCU's domain.
 *
 * SYNOPSIS
 *   #include <urcu/urcu-mb.h>       // prefixed names only
 *   urcu_mb_register_thread();     // optional: the first read lock registers
 *   urcu_mb_read_lock(); p = rcu_dereference(gp); ... urcu_mb_read_unlock();
 *   old = rcu_xchg_pointer(&gp, n); urcu_mb_synchronize_rcu(); free(old);
 *   urcu_mb_call_rcu(&old->rcu_head, free_cb); urcu_mb_barrier();
 *   cc ... $(pkg-config --cflags --libs readmostly-urcu)
 *
 * DESCRIPTION
 *   Every name liburcu's <urcu/urcu-mb.h> declares: urcu_mb_read_lock,
 *   _read_unlock, _read_ongoing, _register_thread, _unregister_thread,
 *   _init, _exit, _synchronize_rcu, _quiescent_state, _thread_offline,
 *   _thread_online, the call_rcu functions (_call_rcu, _barrier,
 *   _create_call_rcu_data, ..., _call_rcu_before_fork), the defer
 *   functions (_defer_rcu, _defer_barrier, ...), urcu_mb_flavor and the
 *   rculfhash fork hooks, with liburcu's signatures, as static inline
 *   functions over readmostly/rcu.h (see readmostly/urcu_flavor.h).  With
 *   URCU_API_MAP defined first (as <urcu.h> does) the flavor-less names
 *   (rcu_read_lock, call_rcu, ...) name these, unless another flavor's
 *   header mapped them first.  Also includes <urcu/pointer.h>,
 *   <urcu/call-rcu.h>, <urcu/defer.h> and <urcu/flavor.h>, as liburcu's.
 *
 * RETURN VALUES
 *   As liburcu: urcu_mb_read_ongoing is nonzero inside a read section;
 *   _create_call_rcu_data returns NULL when out of memory or threads;
 *   _set_cpu_call_rcu_data and _create_all_cpu_call_rcu_data return 0 or
 *   a negative error code (-EINVAL, -EEXIST, -ENOMEM, -EAGAIN) with errno
 *   set to it; _defer_register_thread returns 0.
 *
 * DIFFERENCES FROM LIBURCU
 *   Not a separate domain in fence mode: fence mode is process-wide in
 *   this library (readmostly/fcp.h), so this flavor is the memb domain
 *   (urcu_mb_* and urcu_memb_* are the same sections and grace periods).
 *   Its readers are at least as strong as liburcu's mb readers: a grace
 *   period orders every reader's section with membarrier, or with the
 *   reader's own fence in fence mode.  Registration is optional; inside a
 *   read section synchronize_rcu and rcu_barrier print a message and
 *   return; quiescent_state, thread_offline and thread_online are real.
 *   There is no urcu_mb_reader or urcu_mb_gp.
 */
#ifndef _URCU_MB_H
#define _URCU_MB_H

#include <pthread.h>
#include <stdlib.h>

#include "pointer.h"
#include "call-rcu.h"
#include "defer.h"
#include "flavor.h"
#include <readmostly/urcu_flavor.h>

#ifdef __cplusplus
extern "C" {
#endif

RM_URCU_DEFINE_FLAVOR(mb, rm_rcu, rm_urcu)
/* Inside a read section (of any of the four flavors: one domain). */
RM_URCU_DEFINE_READ_ONGOING(mb, rm_rcu_read_ongoing)
static inline void urcu_mb_unregister_thread(void) { rm_urcu_unregister_thread(); }
static inline void urcu_mb_init(void) { rm_urcu_init(); }
#define urcu_mb_flavor rm_urcu_flavor

/* liburcu's older names for this flavor. */
#define rcu_mb_before_fork urcu_mb_before_fork
#define rcu_mb_after_fork_parent urcu_mb_after_fork_parent
#define rcu_mb_after_fork_child urcu_mb_after_fork_child

#ifdef __cplusplus
}
#endif

#if defined(URCU_API_MAP) && !defined(RM_URCU_API_FLAVOR)
#define RM_URCU_API_FLAVOR mb
#include "map/readmostly.h"
#endif
#endif /* _URCU_MB_H */
