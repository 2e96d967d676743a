/*
 * <urcu/urcu-bp.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * "bulletproof" flavor, urcu_bp_*, on FCP-RCU's domain.
 *
 * SYNOPSIS
 *   #include <urcu-bp.h>            // flavor-less names: rcu_read_lock, ...
 *   #include <urcu/urcu-bp.h>       // prefixed names only
 *   urcu_bp_read_lock(); p = urcu_bp_dereference(gp); ... urcu_bp_read_unlock();
 *   urcu_bp_synchronize_rcu();  urcu_bp_call_rcu(&o->rcu_head, free_cb);
 *   cc ... $(pkg-config --cflags --libs readmostly-urcu)
 *
 * DESCRIPTION
 *   Every name liburcu's <urcu/urcu-bp.h> declares, with liburcu's
 *   signatures, as static inline functions over readmostly/rcu.h (see
 *   readmostly/urcu_flavor.h): urcu_bp_read_lock, _read_unlock,
 *   _read_ongoing, _register_thread, _unregister_thread, _register, _init,
 *   _exit, _synchronize_rcu, _quiescent_state, _thread_offline,
 *   _thread_online, _before_fork, _after_fork_parent, _after_fork_child,
 *   the call_rcu and defer functions, urcu_bp_flavor, the rculfhash fork
 *   hooks, and the pointer names urcu_bp_dereference, _set_pointer,
 *   _xchg_pointer, _cmpxchg_pointer with their *_sym functions.  As in
 *   liburcu, a thread needs no registration (FCP-RCU's first read lock
 *   registers the thread, and thread exit releases its record), and
 *   urcu_bp_unregister_thread and urcu_bp_init do nothing.  <urcu-bp.h>
 *   defines URCU_API_MAP first, so the flavor-less names name these
 *   (unless another flavor's header mapped them first).
 *
 * RETURN VALUES
 *   As liburcu's (see <urcu/urcu-memb.h>).
 *
 * DIFFERENCES FROM LIBURCU
 *   The bp flavor is the memb domain: liburcu's bp readers pay a full
 *   fence per section to need no registration; FCP-RCU needs none either
 *   and its readers pay no fence while membarrier works.  Inside a read
 *   section synchronize_rcu and rcu_barrier print a message and return
 *   (liburcu waits for ever).  _before_fork and the two after-fork
 *   functions do nothing: the library's own pthread_atfork handlers keep
 *   its registry consistent across fork().  There is no urcu_bp_reader or
 *   urcu_bp_gp.
 */
#ifndef _URCU_BP_H
#define _URCU_BP_H

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

RM_URCU_DEFINE_FLAVOR(bp, rm_rcu, rm_urcu)
/* Inside a read section (of any of the four flavors: one domain). */
RM_URCU_DEFINE_READ_ONGOING(bp, rm_rcu_read_ongoing)
static inline void urcu_bp_unregister_thread(void) {}
static inline void urcu_bp_init(void) {}
static inline void urcu_bp_register(void) { rm_urcu_register_thread(); }
#define urcu_bp_flavor rm_urcu_flavor

#define urcu_bp_dereference rcu_dereference
#define urcu_bp_set_pointer rcu_set_pointer
#define urcu_bp_xchg_pointer rcu_xchg_pointer
#define urcu_bp_cmpxchg_pointer rcu_cmpxchg_pointer
/* The same orderings as rcu_dereference_sym and its partners
 * (<urcu/pointer.h>). */
static inline void *urcu_bp_dereference_sym(void *p) { return rcu_dereference_sym(p); }
static inline void *urcu_bp_set_pointer_sym(void **p, void *v) { return rcu_set_pointer_sym(p, v); }
static inline void *urcu_bp_xchg_pointer_sym(void **p, void *v) { return rcu_xchg_pointer_sym(p, v); }
static inline void *urcu_bp_cmpxchg_pointer_sym(void **p, void *old, void *v) {
  return rcu_cmpxchg_pointer_sym(p, old, v);
}

/* liburcu's older names for this flavor. */
#define rcu_bp_before_fork urcu_bp_before_fork
#define rcu_bp_after_fork_parent urcu_bp_after_fork_parent
#define rcu_bp_after_fork_child urcu_bp_after_fork_child

#ifdef __cplusplus
}
#endif

#if defined(URCU_API_MAP) && !defined(RM_URCU_API_FLAVOR)
#define RM_URCU_API_FLAVOR bp
#include "map/readmostly.h"
#endif
#endif /* _URCU_BP_H */
