/*
 * <urcu/urcu-memb.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * default (membarrier) flavor, urcu_memb_*, on FCP-RCU's domain.
 *
 * SYNOPSIS
 *   #include <urcu/urcu-memb.h>       // prefixed names only
 *   urcu_memb_register_thread();     // optional: the first read lock registers
 *   urcu_memb_read_lock(); p = rcu_dereference(gp); ... urcu_memb_read_unlock();
 *   old = rcu_xchg_pointer(&gp, n); urcu_memb_synchronize_rcu(); free(old);
 *   urcu_memb_call_rcu(&old->rcu_head, free_cb); urcu_memb_barrier();
 *   cc ... $(pkg-config --cflags --libs readmostly-urcu)
 *
 * DESCRIPTION
 *   Every name liburcu's <urcu/urcu-memb.h> declares: urcu_memb_read_lock,
 *   _read_unlock, _read_ongoing, _register_thread, _unregister_thread,
 *   _init, _exit, _synchronize_rcu, _quiescent_state, _thread_offline,
 *   _thread_online, the call_rcu functions (_call_rcu, _barrier,
 *   _create_call_rcu_data, ..., _call_rcu_before_fork), the defer
 *   functions (_defer_rcu, _defer_barrier, ...), urcu_memb_flavor and the
 *   rculfhash fork hooks, with liburcu's signatures, as static inline
 *   functions over readmostly/rcu.h (see readmostly/urcu_flavor.h).  With
 *   URCU_API_MAP defined first (as <urcu.h> does) the flavor-less names
 *   (rcu_read_lock, call_rcu, ...) name these, unless another flavor's
 *   header mapped them first.  Also includes <urcu/pointer.h>,
 *   <urcu/call-rcu.h>, <urcu/defer.h> and <urcu/flavor.h>, as liburcu's.
 *
 * RETURN VALUES
 *   As liburcu: urcu_memb_read_ongoing is nonzero inside a read section;
 *   _create_call_rcu_data returns NULL when out of memory or threads;
 *   _set_cpu_call_rcu_data and _create_all_cpu_call_rcu_data return 0 or
 *   a negative error code (-EINVAL, -EEXIST, -ENOMEM, -EAGAIN) with errno
 *   set to it; _defer_register_thread returns 0.
 *
 * DIFFERENCES FROM LIBURCU
 *   Registration is optional.  Inside a read section, synchronize_rcu and
 *   rcu_barrier print a message and return (liburcu waits for ever).
 *   quiescent_state, thread_offline and thread_online are real (an
 *   offline thread costs grace periods nothing); liburcu's are no-ops for
 *   this flavor.  There is no urcu_memb_reader or urcu_memb_gp (liburcu's
 *   inline fast path's data).  docs/rcu-urcu.md has
 *   every difference.
 */
#ifndef _URCU_MEMB_H
#define _URCU_MEMB_H

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

RM_URCU_DEFINE_FLAVOR(memb, rm_rcu, rm_urcu)
/* Inside a read section (of any of the four flavors: one domain). */
RM_URCU_DEFINE_READ_ONGOING(memb, rm_rcu_read_ongoing)
static inline void urcu_memb_unregister_thread(void) { rm_urcu_unregister_thread(); }
static inline void urcu_memb_init(void) { rm_urcu_init(); }
#define urcu_memb_flavor rm_urcu_flavor

/* liburcu's older names for this flavor. */
#define rcu_read_lock_memb urcu_memb_read_lock
#define rcu_read_unlock_memb urcu_memb_read_unlock
#define rcu_read_ongoing_memb urcu_memb_read_ongoing
#define rcu_register_thread_memb urcu_memb_register_thread
#define rcu_unregister_thread_memb urcu_memb_unregister_thread
#define rcu_init_memb urcu_memb_init
#define rcu_exit_memb urcu_memb_exit
#define synchronize_rcu_memb urcu_memb_synchronize_rcu
#define get_cpu_call_rcu_data_memb urcu_memb_get_cpu_call_rcu_data
#define get_call_rcu_thread_memb urcu_memb_get_call_rcu_thread
#define create_call_rcu_data_memb urcu_memb_create_call_rcu_data
#define set_cpu_call_rcu_data_memb urcu_memb_set_cpu_call_rcu_data
#define get_default_call_rcu_data_memb urcu_memb_get_default_call_rcu_data
#define get_call_rcu_data_memb urcu_memb_get_call_rcu_data
#define get_thread_call_rcu_data_memb urcu_memb_get_thread_call_rcu_data
#define set_thread_call_rcu_data_memb urcu_memb_set_thread_call_rcu_data
#define create_all_cpu_call_rcu_data_memb urcu_memb_create_all_cpu_call_rcu_data
#define free_all_cpu_call_rcu_data_memb urcu_memb_free_all_cpu_call_rcu_data
#define call_rcu_memb urcu_memb_call_rcu
#define call_rcu_data_free_memb urcu_memb_call_rcu_data_free
#define call_rcu_before_fork_memb urcu_memb_call_rcu_before_fork
#define call_rcu_after_fork_parent_memb urcu_memb_call_rcu_after_fork_parent
#define call_rcu_after_fork_child_memb urcu_memb_call_rcu_after_fork_child
#define defer_rcu_memb urcu_memb_defer_rcu
#define rcu_barrier_memb urcu_memb_barrier
#define rcu_defer_register_thread_memb urcu_memb_defer_register_thread
#define rcu_defer_unregister_thread_memb urcu_memb_defer_unregister_thread
#define rcu_defer_barrier_memb urcu_memb_defer_barrier
#define rcu_defer_barrier_thread_memb urcu_memb_defer_barrier_thread
#define rcu_defer_exit_memb urcu_memb_defer_exit
#define rcu_flavor_memb urcu_memb_flavor
#define urcu_register_rculfhash_atfork_memb urcu_memb_register_rculfhash_atfork
#define urcu_unregister_rculfhash_atfork_memb urcu_memb_unregister_rculfhash_atfork
#define rcu_memb_before_fork urcu_memb_before_fork
#define rcu_memb_after_fork_parent urcu_memb_after_fork_parent
#define rcu_memb_after_fork_child urcu_memb_after_fork_child

#ifdef __cplusplus
}
#endif

#if defined(URCU_API_MAP) && !defined(RM_URCU_API_FLAVOR)
#define RM_URCU_API_FLAVOR memb
#include "map/readmostly.h"
#endif
#endif /* _URCU_MEMB_H */
