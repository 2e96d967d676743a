/*
 * readmostly/urcu_flavor.h - the machinery behind liburcu's flavor headers
 * (the compat directory, readmostly/urcu-compat/): not included directly.
 *
 * SYNOPSIS
 *   #include <urcu/urcu-memb.h>       // with -I<includedir>/readmostly/urcu-compat
 *   urcu_memb_read_lock(); ... urcu_memb_read_unlock();
 *
 * DESCRIPTION
 *   RM_URCU_DEFINE_FLAVOR(f, B, W) defines every function liburcu 0.13
 *   declares for its flavor `f` (memb, mb, signal, bp, qsbr) under its
 *   liburcu name urcu_<f>_<name>, as a static inline function over
 *   readmostly's functions: B is the rm_ prefix of the flavor's backend
 *   (rm_rcu for FCP-RCU's domain, rm_rcu_qsbr for the QSBR flavor), W the
 *   prefix of the few out-of-line wrappers in libreadmostly whose
 *   signatures or messages differ (rm_urcu, rm_urcu_qsbr).  Static inline
 *   functions keep liburcu's names out of libreadmostly's symbol table, so
 *   a program may link liburcu's own libraries beside it; each has an
 *   address, as liburcu's functions do (liburcu-cds's queues store
 *   call_rcu's).
 *
 *   The flavor-less names (rcu_read_lock, call_rcu, ...) are macros that
 *   name the functions of ONE flavor: the first flavor header included
 *   while URCU_API_MAP is defined (<urcu.h>, <urcu-bp.h> and <urcu-qsbr.h>
 *   define it, as liburcu's do).  They expand lazily through
 *   RM_URCU_API_FLAVOR, which is defined once and never changed, so a file
 *   that includes <urcu.h> and then <urcu/urcu-qsbr.h> keeps the memb
 *   mapping for the flavor-less names and may call both urcu_memb_* and
 *   urcu_qsbr_* names, with no macro redefined.  (liburcu redefines the
 *   flavor-less macros in that case, which warns.)  A program that never
 *   defines URCU_API_MAP sees only prefixed names, as with liburcu's
 *   <urcu/map/clear.h>.
 */
#ifndef READMOSTLY_URCU_FLAVOR_H
#define READMOSTLY_URCU_FLAVOR_H

#include <readmostly/rcu.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* ---- the out-of-line part over FCP-RCU's domain (src/urcu.c) ------------- */

#ifdef __cplusplus
extern "C" {
#endif
struct urcu_atfork;
struct rcu_flavor_struct;
RM_API void rm_urcu_register_thread(void); /* aborts with a message on ENOMEM, as liburcu */
RM_API void rm_urcu_unregister_thread(void);
RM_API void rm_urcu_synchronize_rcu(void); /* inside a section: a message and EDEADLK ignored */
RM_API void rm_urcu_barrier(void);
RM_API void rm_urcu_init(void);
RM_API void rm_urcu_defer_rcu(void (*fct)(void *p), void *p);
RM_API void rm_urcu_free_all_cpu_call_rcu_data(void); /* inside a section: a message */
RM_API void rm_urcu_register_rculfhash_atfork(struct urcu_atfork *atfork);
RM_API void rm_urcu_unregister_rculfhash_atfork(struct urcu_atfork *atfork);
extern RM_API const struct rcu_flavor_struct rm_urcu_flavor;
#ifdef __cplusplus
}
#endif

/* ---- one flavor's functions ------------------------------------------------ */

/* A name of flavor f: RM_URCU_NAME(memb, read_lock) is urcu_memb_read_lock. */
#define RM_URCU_NAME(f, n) RM_URCU_NAME_(f, n)
#define RM_URCU_NAME_(f, n) urcu_##f##_##n

/* urcu_<f>_read_ongoing and its underscore twin, over `fn`.  Each flavor
 * header says what it answers. */
#define RM_URCU_DEFINE_READ_ONGOING(f, fn)                                                     \
  static inline int urcu_##f##_read_ongoing(void) { return fn() ? 1 : 0; }                    \
  static inline int _urcu_##f##_read_ongoing(void) { return fn() ? 1 : 0; }

/* The other functions every flavor has.  create_call_rcu_data's flags and CPU
 * are accepted and ignored; set_cpu_call_rcu_data and
 * create_all_cpu_call_rcu_data return liburcu's values (0, or a negative
 * error code with errno set to it); the defer queue is the call_rcu
 * queue, so its registration is nothing and its barriers are
 * rcu_barrier.  quiescent_state, thread_offline and thread_online are
 * real here for every flavor (liburcu's memb, mb, signal and bp make them
 * no-ops): an offline thread costs grace periods nothing. */
#define RM_URCU_DEFINE_FLAVOR(f, B, W)                                                         \
  static inline void urcu_##f##_read_lock(void) { B##_read_lock(); }                          \
  static inline void urcu_##f##_read_unlock(void) { B##_read_unlock(); }                      \
  static inline void _urcu_##f##_read_lock(void) { B##_read_lock(); }                         \
  static inline void _urcu_##f##_read_unlock(void) { B##_read_unlock(); }                     \
  static inline void urcu_##f##_quiescent_state(void) { B##_quiescent_state(); }              \
  static inline void _urcu_##f##_quiescent_state(void) { B##_quiescent_state(); }             \
  static inline void urcu_##f##_thread_offline(void) { B##_thread_offline(); }                \
  static inline void urcu_##f##_thread_online(void) { B##_thread_online(); }                  \
  static inline void urcu_##f##_register_thread(void) { W##_register_thread(); }              \
  static inline void urcu_##f##_synchronize_rcu(void) { W##_synchronize_rcu(); }              \
  static inline void urcu_##f##_exit(void) {}                                                 \
  static inline void urcu_##f##_call_rcu(struct rm_rcu_head *head,                            \
                                         void (*func)(struct rm_rcu_head *head)) {            \
    B##_call(head, func);                                                                     \
  }                                                                                           \
  static inline void urcu_##f##_barrier(void) { W##_barrier(); }                              \
  static inline struct rm_rcu_call_data *urcu_##f##_create_call_rcu_data(unsigned long flags, \
                                                                         int cpu_affinity) {  \
    struct rm_rcu_call_data *c = NULL;                                                        \
    (void)flags;                                                                              \
    (void)cpu_affinity;                                                                       \
    return B##_call_data_create(&c) == 0 ? c : NULL;                                          \
  }                                                                                           \
  static inline void urcu_##f##_call_rcu_data_free(struct rm_rcu_call_data *c) {              \
    if (c) (void)B##_call_data_free(c);                                                       \
  }                                                                                           \
  static inline struct rm_rcu_call_data *urcu_##f##_get_default_call_rcu_data(void) {         \
    return B##_call_data_default();                                                           \
  }                                                                                           \
  static inline struct rm_rcu_call_data *urcu_##f##_get_cpu_call_rcu_data(int cpu) {          \
    return B##_call_data_cpu(cpu);                                                            \
  }                                                                                           \
  static inline struct rm_rcu_call_data *urcu_##f##_get_thread_call_rcu_data(void) {          \
    return B##_call_data_thread();                                                            \
  }                                                                                           \
  static inline struct rm_rcu_call_data *urcu_##f##_get_call_rcu_data(void) {                 \
    return B##_call_data_current();                                                           \
  }                                                                                           \
  static inline pthread_t urcu_##f##_get_call_rcu_thread(struct rm_rcu_call_data *c) {        \
    return B##_call_data_worker(c);                                                           \
  }                                                                                           \
  static inline void urcu_##f##_set_thread_call_rcu_data(struct rm_rcu_call_data *c) {        \
    B##_call_data_set_thread(c);                                                              \
  }                                                                                           \
  static inline int urcu_##f##_set_cpu_call_rcu_data(int cpu, struct rm_rcu_call_data *c) {   \
    int e = B##_call_data_set_cpu(cpu, c);                                                    \
    if (e) errno = e;                                                                         \
    return -e;                                                                                \
  }                                                                                           \
  static inline int urcu_##f##_create_all_cpu_call_rcu_data(unsigned long flags) {            \
    (void)flags;                                                                              \
    int e = B##_call_data_create_per_cpu();                                                   \
    if (e) errno = e;                                                                         \
    return -e;                                                                                \
  }                                                                                           \
  static inline void urcu_##f##_free_all_cpu_call_rcu_data(void) {                            \
    W##_free_all_cpu_call_rcu_data();                                                         \
  }                                                                                           \
  static inline void urcu_##f##_call_rcu_before_fork(void) { B##_call_before_fork(); }        \
  static inline void urcu_##f##_call_rcu_after_fork_parent(void) {                            \
    B##_call_after_fork_parent();                                                             \
  }                                                                                           \
  static inline void urcu_##f##_call_rcu_after_fork_child(void) {                             \
    B##_call_after_fork_child();                                                              \
  }                                                                                           \
  static inline void urcu_##f##_defer_rcu(void (*fct)(void *p), void *p) {                    \
    W##_defer_rcu(fct, p);                                                                    \
  }                                                                                           \
  static inline int urcu_##f##_defer_register_thread(void) { return 0; }                      \
  static inline void urcu_##f##_defer_unregister_thread(void) {}                              \
  static inline void urcu_##f##_defer_exit(void) {}                                           \
  static inline void urcu_##f##_defer_barrier(void) { W##_barrier(); }                        \
  static inline void urcu_##f##_defer_barrier_thread(void) { W##_barrier(); }                 \
  static inline void urcu_##f##_register_rculfhash_atfork(struct urcu_atfork *a) {            \
    W##_register_rculfhash_atfork(a);                                                         \
  }                                                                                           \
  static inline void urcu_##f##_unregister_rculfhash_atfork(struct urcu_atfork *a) {          \
    W##_unregister_rculfhash_atfork(a);                                                       \
  }                                                                                           \
  /* liburcu's process-wide fork hooks of its registry: ours are pthread_atfork handlers      \
   * the library installs itself, so these have nothing to do. */                            \
  static inline void urcu_##f##_before_fork(void) {}                                          \
  static inline void urcu_##f##_after_fork_parent(void) {}                                    \
  static inline void urcu_##f##_after_fork_child(void) {}

#endif /* READMOSTLY_URCU_FLAVOR_H */
