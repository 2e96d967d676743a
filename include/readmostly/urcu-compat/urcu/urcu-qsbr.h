/*
 * <urcu/urcu-qsbr.h> (readmostly's liburcu compat directory) - liburcu
 * 0.13's quiescent-state-based flavor, urcu_qsbr_*, on readmostly's QSBR
 * flavor (readmostly/rcu_qsbr.h).
 *
 * SYNOPSIS
 *   #include <urcu-qsbr.h>          // flavor-less names: rcu_read_lock, ...
 *   #include <urcu/urcu-qsbr.h>     // prefixed names only
 *   urcu_qsbr_register_thread();    // required, as in liburcu
 *   urcu_qsbr_read_lock(); p = rcu_dereference(gp); ... urcu_qsbr_read_unlock();
 *   urcu_qsbr_quiescent_state();    // now and then, outside sections
 *   urcu_qsbr_thread_offline(); sleep(1); urcu_qsbr_thread_online();
 *   cc ... $(pkg-config --cflags --libs readmostly-urcu)
 *
 * DESCRIPTION
 *   Every name liburcu's <urcu/urcu-qsbr.h> declares, with liburcu's
 *   signatures, as static inline functions over the rm_rcu_qsbr_ API (see
 *   readmostly/urcu_flavor.h): urcu_qsbr_read_lock, _read_unlock,
 *   _read_ongoing, _quiescent_state, _thread_offline, _thread_online,
 *   _register_thread, _unregister_thread, _init, _exit, _synchronize_rcu,
 *   _before_fork, _after_fork_parent, _after_fork_child, the call_rcu and
 *   defer functions, urcu_qsbr_flavor and the rculfhash fork hooks.  A
 *   reader must register, announce quiescent states outside its sections
 *   (or go offline), and grace periods wait for every online registered
 *   thread's next quiescent state, as with liburcu.  <urcu-qsbr.h>
 *   defines URCU_API_MAP first, so the flavor-less names name these
 *   (unless another flavor's header mapped them first); urcu_memb_* and
 *   urcu_qsbr_* may be used side by side in one file.
 *   urcu_qsbr_read_ongoing() is liburcu's: nonzero while the thread is
 *   registered and online (inside a section or not).
 *
 * RETURN VALUES
 *   As liburcu's (see <urcu/urcu-memb.h>).
 *
 * DIFFERENCES FROM LIBURCU
 *   Inside a read section urcu_qsbr_synchronize_rcu and urcu_qsbr_barrier
 *   print a message and return (liburcu waits for ever).  Registration fails
 *   only without memory: a message and abort, as liburcu.  The defer queue
 *   is the call_rcu queue.  There is no urcu_qsbr_reader or urcu_qsbr_gp.
 */
#ifndef _URCU_QSBR_H
#define _URCU_QSBR_H

#include <pthread.h>
#include <stdlib.h>

#include "pointer.h"
#include "call-rcu.h"
#include "defer.h"
#include "flavor.h"
#include <readmostly/urcu_flavor.h>
#include <readmostly/rcu_qsbr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The out-of-line part (src/urcu_qsbr.c). */
RM_API void rm_urcu_qsbr_register_thread(void); /* aborts with a message on ENOMEM */
RM_API void rm_urcu_qsbr_unregister_thread(void);
RM_API int rm_urcu_qsbr_online(void); /* registered and online */
RM_API void rm_urcu_qsbr_synchronize_rcu(void); /* inside a section: a message */
RM_API void rm_urcu_qsbr_barrier(void);
RM_API void rm_urcu_qsbr_defer_rcu(void (*fct)(void *p), void *p);
RM_API void rm_urcu_qsbr_free_all_cpu_call_rcu_data(void);
RM_API void rm_urcu_qsbr_register_rculfhash_atfork(struct urcu_atfork *atfork);
RM_API void rm_urcu_qsbr_unregister_rculfhash_atfork(struct urcu_atfork *atfork);
extern RM_API const struct rcu_flavor_struct rm_urcu_qsbr_flavor;

RM_URCU_DEFINE_FLAVOR(qsbr, rm_rcu_qsbr, rm_urcu_qsbr)
/* liburcu's answer for qsbr, in every build: the thread is registered and
 * online (rm_rcu_qsbr_read_ongoing answers "inside a section" in debug
 * builds, which liburcu's own test_urcu_qsbr contradicts). */
RM_URCU_DEFINE_READ_ONGOING(qsbr, rm_urcu_qsbr_online)
static inline void urcu_qsbr_unregister_thread(void) { rm_urcu_qsbr_unregister_thread(); }
static inline void urcu_qsbr_init(void) {}
#define urcu_qsbr_flavor rm_urcu_qsbr_flavor

/* liburcu's older names for this flavor. */
#define rcu_qsbr_before_fork urcu_qsbr_before_fork
#define rcu_qsbr_after_fork_parent urcu_qsbr_after_fork_parent
#define rcu_qsbr_after_fork_child urcu_qsbr_after_fork_child

#ifdef __cplusplus
}
#endif

#if defined(URCU_API_MAP) && !defined(RM_URCU_API_FLAVOR)
#define RM_URCU_API_FLAVOR qsbr
#include "map/readmostly.h"
#endif
#endif /* _URCU_QSBR_H */
