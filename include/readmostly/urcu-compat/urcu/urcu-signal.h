/*
 * <urcu/urcu-signal.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * signal-based flavor, urcu_signal_*, on FCP-RCU's domain.
 *
 * SYNOPSIS
 *   #include <urcu/urcu-signal.h>       // prefixed names only
 *   urcu_signal_register_thread();     // optional: the first read lock registers
 *   urcu_signal_read_lock(); p = rcu_dereference(gp); ... urcu_signal_read_unlock();
 *   old = rcu_xchg_pointer(&gp, n); urcu_signal_synchronize_rcu(); free(old);
 *   urcu_signal_call_rcu(&old->rcu_head, free_cb); urcu_signal_barrier();
 *   cc ... $(pkg-config --cflags --libs readmostly-urcu)
 *
 * DESCRIPTION
 *   Every name liburcu's <urcu/urcu-signal.h> declares: urcu_signal_read_lock,
 *   _read_unlock, _read_ongoing, _register_thread, _unregister_thread,
 *   _init, _exit, _synchronize_rcu, _quiescent_state, _thread_offline,
 *   _thread_online, the call_rcu functions (_call_rcu, _barrier,
 *   _create_call_rcu_data, ..., _call_rcu_before_fork), the defer
 *   functions (_defer_rcu, _defer_barrier, ...), urcu_signal_flavor and the
 *   rculfhash fork hooks, with liburcu's signatures, as static inline
 *   functions over readmostly/rcu.h (see readmostly/urcu_flavor.h).  With
 *   URCU_API_MAP defined first (as <urcu.h> does) the flavor-less names
 *   (rcu_read_lock, call_rcu, ...) name these, unless another flavor's
 *   header mapped them first.  Also includes <urcu/pointer.h>,
 *   <urcu/call-rcu.h>, <urcu/defer.h> and <urcu/flavor.h>, as liburcu's.
 *
 * RETURN VALUES
 *   As liburcu: urcu_signal_read_ongoing is nonzero inside a read section;
 *   _create_call_rcu_data returns NULL when out of memory or threads;
 *   _set_cpu_call_rcu_data and _create_all_cpu_call_rcu_data return 0 or
 *   a negative error code (-EINVAL, -EEXIST, -ENOMEM, -EAGAIN) with errno
 *   set to it; _defer_register_thread returns 0.
 *
 * DIFFERENCES FROM LIBURCU
 *   The memb domain: liburcu's signal flavor makes readers' stores visible
 *   by sending each a signal (SIGUSR1), where FCP-RCU uses one membarrier
 *   system call (or readers' fences in fence mode); the guarantee a
 *   program relies on (a grace period ends after every section that began
 *   before it) is the same, and no signal is taken from the program (its
 *   SIGUSR1 handler stays its own).  Registration is optional; inside a
 *   read section synchronize_rcu and rcu_barrier print a message and
 *   return; quiescent_state, thread_offline and thread_online are real.
 *   There is no urcu_signal_reader or urcu_signal_gp.
 */
#ifndef _URCU_SIGNAL_H
#define _URCU_SIGNAL_H

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

RM_URCU_DEFINE_FLAVOR(signal, rm_rcu, rm_urcu)
/* Inside a read section (of any of the four flavors: one domain). */
RM_URCU_DEFINE_READ_ONGOING(signal, rm_rcu_read_ongoing)
static inline void urcu_signal_unregister_thread(void) { rm_urcu_unregister_thread(); }
static inline void urcu_signal_init(void) { rm_urcu_init(); }
#define urcu_signal_flavor rm_urcu_flavor

/* liburcu's older names for this flavor. */
#define rcu_read_lock_sig urcu_signal_read_lock
#define rcu_read_unlock_sig urcu_signal_read_unlock
#define rcu_read_ongoing_sig urcu_signal_read_ongoing
#define rcu_register_thread_sig urcu_signal_register_thread
#define rcu_unregister_thread_sig urcu_signal_unregister_thread
#define rcu_init_sig urcu_signal_init
#define rcu_exit_sig urcu_signal_exit
#define synchronize_rcu_sig urcu_signal_synchronize_rcu
#define get_cpu_call_rcu_data_sig urcu_signal_get_cpu_call_rcu_data
#define get_call_rcu_thread_sig urcu_signal_get_call_rcu_thread
#define create_call_rcu_data_sig urcu_signal_create_call_rcu_data
#define set_cpu_call_rcu_data_sig urcu_signal_set_cpu_call_rcu_data
#define get_default_call_rcu_data_sig urcu_signal_get_default_call_rcu_data
#define get_call_rcu_data_sig urcu_signal_get_call_rcu_data
#define get_thread_call_rcu_data_sig urcu_signal_get_thread_call_rcu_data
#define set_thread_call_rcu_data_sig urcu_signal_set_thread_call_rcu_data
#define create_all_cpu_call_rcu_data_sig urcu_signal_create_all_cpu_call_rcu_data
#define free_all_cpu_call_rcu_data_sig urcu_signal_free_all_cpu_call_rcu_data
#define call_rcu_sig urcu_signal_call_rcu
#define call_rcu_data_free_sig urcu_signal_call_rcu_data_free
#define call_rcu_before_fork_sig urcu_signal_call_rcu_before_fork
#define call_rcu_after_fork_parent_sig urcu_signal_call_rcu_after_fork_parent
#define call_rcu_after_fork_child_sig urcu_signal_call_rcu_after_fork_child
#define defer_rcu_sig urcu_signal_defer_rcu
#define rcu_barrier_sig urcu_signal_barrier
#define rcu_defer_register_thread_sig urcu_signal_defer_register_thread
#define rcu_defer_unregister_thread_sig urcu_signal_defer_unregister_thread
#define rcu_defer_barrier_sig urcu_signal_defer_barrier
#define rcu_defer_barrier_thread_sig urcu_signal_defer_barrier_thread
#define rcu_defer_exit_sig urcu_signal_defer_exit
#define rcu_flavor_sig urcu_signal_flavor
#define urcu_register_rculfhash_atfork_sig urcu_signal_register_rculfhash_atfork
#define urcu_unregister_rculfhash_atfork_sig urcu_signal_unregister_rculfhash_atfork
#define rcu_sig_before_fork urcu_signal_before_fork
#define rcu_sig_after_fork_parent urcu_signal_after_fork_parent
#define rcu_sig_after_fork_child urcu_signal_after_fork_child

#ifdef __cplusplus
}
#endif

#if defined(URCU_API_MAP) && !defined(RM_URCU_API_FLAVOR)
#define RM_URCU_API_FLAVOR signal
#include "map/readmostly.h"
#endif
#endif /* _URCU_SIGNAL_H */
