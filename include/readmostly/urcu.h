/*
 * readmostly/urcu.h - liburcu's default-flavor names on FCP-RCU.
 *
 * SYNOPSIS
 *   // urcu.h, somewhere before liburcu's headers on the include path:
 *   //   #include <readmostly/urcu.h>
 *   #include <urcu.h>
 *   rcu_register_thread();
 *   rcu_read_lock(); p = rcu_dereference(gp); ... rcu_read_unlock();
 *   old = rcu_xchg_pointer(&gp, n); synchronize_rcu(); free(old);
 *   call_rcu(&old->rcu_head, free_cb);  rcu_barrier();
 *   cc ... -lreadmostly        (instead of -lurcu)
 *
 * DESCRIPTION
 *   A program written for liburcu's default flavor ("memb": #include
 *   <urcu.h>, link -lurcu) builds unchanged against readmostly's RCU
 *   (readmostly/rcu.h) when its <urcu.h> is a two-line file that includes
 *   this header and it links -lreadmostly.  Every name of that flavor is a
 *   macro or a static inline function here, mapped onto the rm_rcu_ API, so
 *   one program can still link liburcu's own flavors (whose symbols carry
 *   their urcu_memb_, urcu_mb_, ... prefixes) beside ours.
 *
 *   liburcu's header-only helpers (urcu/arch.h, urcu/compiler.h,
 *   urcu/uatomic.h, urcu/list.h, urcu/rculist.h, urcu/hlist.h,
 *   urcu/rcuhlist.h) work beside this header, included before or after it.
 *   This header defines the include guards of liburcu's urcu/pointer.h,
 *   urcu/call-rcu.h, urcu/defer.h and urcu/flavor.h, whose names it
 *   provides itself, so that those files, included later (rculist.h
 *   includes pointer.h), add nothing that clashes.  Include <urcu.h> before
 *   them: if liburcu's urcu/pointer.h comes first, its definitions of
 *   rcu_dereference and friends are kept (without _LGPL_SOURCE they call
 *   functions of liburcu-common, which the program must then link).
 *   <urcu/cds.h> works: `rcu_flavor` is readmostly's flavor object, which
 *   liburcu's lock-free hash table (liburcu-cds) can use.
 *
 *   Every name, what it does here and every difference from liburcu:
 *   docs/rcu.md, "liburcu compatibility".
 */
#ifndef READMOSTLY_URCU_H
#define READMOSTLY_URCU_H

#include <readmostly/rcu.h>

#include <errno.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* As liburcu's <urcu.h>: its data structure headers, included after this
 * one, then give the flavor-less names (cds_lfht_new over rcu_flavor). */
#ifndef URCU_API_MAP
#define URCU_API_MAP
#endif

/* ---- types -------------------------------------------------------------- */

/* struct rcu_head and struct call_rcu_data are ours under liburcu's names
 * (the tag is renamed, so a member named rcu_head is renamed with it,
 * consistently in every file that includes this header). */
#define rcu_head rm_rcu_head
#define call_rcu_data rm_rcu_call_data

#ifndef _URCU_FLAVOR_H
#define _URCU_FLAVOR_H
struct urcu_atfork {
  void (*before_fork)(void *priv);
  void (*after_fork_parent)(void *priv);
  void (*after_fork_child)(void *priv);
  void *priv;
};
/* The flavor table liburcu's data structures (liburcu-cds) call through. */
struct rcu_flavor_struct {
  void (*read_lock)(void);
  void (*read_unlock)(void);
  int (*read_ongoing)(void);
  void (*read_quiescent_state)(void);
  void (*update_call_rcu)(struct rcu_head *head, void (*func)(struct rcu_head *head));
  void (*update_synchronize_rcu)(void);
  void (*update_defer_rcu)(void (*fct)(void *p), void *p);
  void (*thread_offline)(void);
  void (*thread_online)(void);
  void (*register_thread)(void);
  void (*unregister_thread)(void);
  void (*barrier)(void);
  void (*register_rculfhash_atfork)(struct urcu_atfork *atfork);
  void (*unregister_rculfhash_atfork)(struct urcu_atfork *atfork);
};
#endif
extern RM_API const struct rcu_flavor_struct rm_urcu_flavor;
#define rcu_flavor rm_urcu_flavor
RM_API void rm_urcu_register_rculfhash_atfork(struct urcu_atfork *atfork);
RM_API void rm_urcu_unregister_rculfhash_atfork(struct urcu_atfork *atfork);
#define urcu_register_rculfhash_atfork rm_urcu_register_rculfhash_atfork
#define urcu_unregister_rculfhash_atfork rm_urcu_unregister_rculfhash_atfork

/* ---- read side and registration ----------------------------------------- */

/* Functions, not macros: programs take their addresses. */
static inline void rm_urcu_read_lock(void) { rm_rcu_read_lock(); }
static inline void rm_urcu_read_unlock(void) { rm_rcu_read_unlock(); }
static inline int rm_urcu_read_ongoing(void) { return rm_rcu_read_ongoing(); }
RM_API void rm_urcu_register_thread(void); /* aborts with a message on ENOMEM, as liburcu */
RM_API void rm_urcu_unregister_thread(void);
RM_API void rm_urcu_synchronize_rcu(void); /* inside a section: a message and EDEADLK ignored */
RM_API void rm_urcu_barrier(void);
RM_API void rm_urcu_init(void);

#define rcu_read_lock rm_urcu_read_lock
#define rcu_read_unlock rm_urcu_read_unlock
#define rcu_read_ongoing rm_urcu_read_ongoing
#define rcu_quiescent_state rm_rcu_quiescent_state
#define rcu_thread_offline rm_rcu_thread_offline
#define rcu_thread_online rm_rcu_thread_online
#define rcu_register_thread rm_urcu_register_thread
#define rcu_unregister_thread rm_urcu_unregister_thread
#define rcu_init rm_urcu_init
#define synchronize_rcu rm_urcu_synchronize_rcu

/* ---- pointers (liburcu's urcu/pointer.h) ---------------------------------- */

#ifndef _URCU_POINTER_H
#define _URCU_POINTER_H
/* rcu_dereference(p): p is the pointer (an lvalue); an acquire load (see
 * rm_rcu_dereference).  rcu_set_pointer(pp, v): *pp = v, a release store,
 * a statement.  rcu_assign_pointer(p, v): rcu_set_pointer(&p, v).
 * rcu_xchg_pointer(pp, v), rcu_cmpxchg_pointer(pp, old, new): seq_cst,
 * returning the old value, as liburcu's full-barrier versions. */
#define rcu_dereference(p) rm_rcu_dereference(p)
#define rcu_set_pointer(pp, v)                                         \
  do {                                                                 \
    __typeof__(*(pp)) rm_urcu_v_ = (v);                                \
    __atomic_store_n((pp), rm_urcu_v_, __ATOMIC_RELEASE);              \
  } while (0)
#define rcu_assign_pointer(p, v) rcu_set_pointer(&(p), (v))
#define rcu_xchg_pointer(pp, v) rm_rcu_xchg_pointer((pp), (v))
#define rcu_cmpxchg_pointer(pp, old, v) rm_rcu_cmpxchg_pointer((pp), (old), (v))
#endif

/* ---- call_rcu (liburcu's urcu/call-rcu.h) ---------------------------------- */

#ifndef _URCU_CALL_RCU_H
#define _URCU_CALL_RCU_H
#define URCU_CALL_RCU_RT (1U << 0)
#define URCU_CALL_RCU_RUNNING (1U << 1)
#define URCU_CALL_RCU_STOP (1U << 2)
#define URCU_CALL_RCU_STOPPED (1U << 3)
#define URCU_CALL_RCU_PAUSE (1U << 4)
#define URCU_CALL_RCU_PAUSED (1U << 5)
#endif
/* flags and cpu_affinity are accepted and ignored (docs/rcu.md). */
static inline struct rm_rcu_call_data *rm_urcu_create_call_rcu_data(unsigned long flags,
                                                                     int cpu_affinity) {
  struct rm_rcu_call_data *c = NULL;
  (void)flags;
  (void)cpu_affinity;
  return rm_rcu_call_data_create(&c) == 0 ? c : NULL;
}
static inline void rm_urcu_call_rcu_data_free(struct rm_rcu_call_data *c) {
  if (c) (void)rm_rcu_call_data_free(c);
}
/* As liburcu: 0, or a negative error code with errno set to it (ENOMEM,
 * EAGAIN; EINVAL for a CPU out of range, EEXIST for a CPU that has an
 * object). */
static inline int rm_urcu_create_all_cpu_call_rcu_data(unsigned long flags) {
  (void)flags;
  int e = rm_rcu_call_data_create_per_cpu();
  if (e) errno = e;
  return -e;
}
static inline int rm_urcu_set_cpu_call_rcu_data(int cpu, struct rm_rcu_call_data *c) {
  int e = rm_rcu_call_data_set_cpu(cpu, c);
  if (e) errno = e;
  return -e;
}
RM_API void rm_urcu_free_all_cpu_call_rcu_data(void); /* inside a section: a message */
RM_API void rm_urcu_defer_rcu(void (*fct)(void *p), void *p);

#define call_rcu rm_rcu_call
#define rcu_barrier rm_urcu_barrier
#define create_call_rcu_data rm_urcu_create_call_rcu_data
#define call_rcu_data_free rm_urcu_call_rcu_data_free
#define get_default_call_rcu_data rm_rcu_call_data_default
#define get_cpu_call_rcu_data rm_rcu_call_data_cpu
#define get_thread_call_rcu_data rm_rcu_call_data_thread
#define get_call_rcu_data rm_rcu_call_data_current
#define get_call_rcu_thread rm_rcu_call_data_worker
#define set_thread_call_rcu_data rm_rcu_call_data_set_thread
#define set_cpu_call_rcu_data rm_urcu_set_cpu_call_rcu_data
#define create_all_cpu_call_rcu_data rm_urcu_create_all_cpu_call_rcu_data
#define free_all_cpu_call_rcu_data rm_urcu_free_all_cpu_call_rcu_data
#define call_rcu_before_fork rm_rcu_call_before_fork
#define call_rcu_after_fork_parent rm_rcu_call_after_fork_parent
#define call_rcu_after_fork_child rm_rcu_call_after_fork_child

/* ---- defer_rcu (liburcu's urcu/defer.h) ------------------------------------ */

#ifndef _URCU_DEFER_H
#define _URCU_DEFER_H
#endif
static inline int rm_urcu_defer_register_thread(void) { return 0; }
static inline void rm_urcu_defer_nothing(void) {}
#define defer_rcu rm_urcu_defer_rcu
#define rcu_defer_register_thread rm_urcu_defer_register_thread
#define rcu_defer_unregister_thread rm_urcu_defer_nothing
#define rcu_defer_exit rm_urcu_defer_nothing
#define rcu_defer_barrier rm_urcu_barrier
#define rcu_defer_barrier_thread rm_urcu_barrier

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_URCU_H */
