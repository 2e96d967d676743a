/*
 * urcu_qsbr.c - the out-of-line part of liburcu's qsbr flavor names
 * (readmostly/urcu-compat/urcu/urcu-qsbr.h) over readmostly/rcu_qsbr.h:
 * the flavor table, and wrappers whose signatures differ from
 * rm_rcu_qsbr_'s.  Empty in a tree without the QSBR flavor.
 */
#define _GNU_SOURCE
#if defined(__has_include)
#if __has_include(<readmostly/rcu_qsbr.h>)
#define READMOSTLY_URCU_NO_LIBURCU 1
#include <readmostly/urcu-compat/urcu/urcu-qsbr.h>

#include "urcu_internal.h"

#include <stdio.h>
#include <string.h>

RM_API void rm_urcu_qsbr_register_thread(void) {
  int e = rm_rcu_qsbr_register_thread();
  if (e) {
    fprintf(stderr, "readmostly: urcu_qsbr_register_thread: %s\n", strerror(e));
    abort();
  }
}

RM_API void rm_urcu_qsbr_unregister_thread(void) {
  if (rm_rcu_qsbr_unregister_thread() != 0)
    fprintf(stderr, "readmostly: urcu_qsbr_unregister_thread inside a read section (ignored)\n");
}

/* Registered and online: the thread's record reports versions (an offline
 * or unregistered thread's holds RM_RCU_SEEN_OFFLINE).  Relaxed: only the
 * thread itself changes it. */
RM_API int rm_urcu_qsbr_online(void) {
  return rm_atomic_load_relaxed(&rm_rcu_qsbr_tls.rec->seen) != RM_RCU_SEEN_OFFLINE;
}

/* Inside a read section: EDEADLK, with the library's message (liburcu
 * would wait for ever). */
RM_API void rm_urcu_qsbr_synchronize_rcu(void) { (void)rm_rcu_qsbr_synchronize(); }

RM_API void rm_urcu_qsbr_barrier(void) { (void)rm_rcu_qsbr_barrier(); }

RM_API void rm_urcu_qsbr_defer_rcu(void (*fct)(void *p), void *p) { (void)rm_rcu_qsbr_defer(fct, p); }

RM_API void rm_urcu_qsbr_free_all_cpu_call_rcu_data(void) {
  (void)rm_rcu_qsbr_call_data_free_per_cpu();
}

RM_API void rm_urcu_qsbr_register_rculfhash_atfork(struct urcu_atfork *u) {
  rm_urcu_atfork_add(u, rm_rcu_qsbr_register_atfork, rm_rcu_qsbr_unregister_atfork);
}

RM_API void rm_urcu_qsbr_unregister_rculfhash_atfork(struct urcu_atfork *u) {
  rm_urcu_atfork_remove(u);
}

static void flavor_read_lock(void) { rm_rcu_qsbr_read_lock(); }
static void flavor_read_unlock(void) { rm_rcu_qsbr_read_unlock(); }
static int flavor_read_ongoing(void) { return rm_urcu_qsbr_online(); }
static void flavor_quiescent_state(void) { rm_rcu_qsbr_quiescent_state(); }
static void flavor_thread_offline(void) { rm_rcu_qsbr_thread_offline(); }
static void flavor_thread_online(void) { rm_rcu_qsbr_thread_online(); }

RM_API const struct rcu_flavor_struct rm_urcu_qsbr_flavor = {
    .read_lock = flavor_read_lock,
    .read_unlock = flavor_read_unlock,
    .read_ongoing = flavor_read_ongoing,
    .read_quiescent_state = flavor_quiescent_state,
    .update_call_rcu = rm_rcu_qsbr_call,
    .update_synchronize_rcu = rm_urcu_qsbr_synchronize_rcu,
    .update_defer_rcu = rm_urcu_qsbr_defer_rcu,
    .thread_offline = flavor_thread_offline,
    .thread_online = flavor_thread_online,
    .register_thread = rm_urcu_qsbr_register_thread,
    .unregister_thread = rm_urcu_qsbr_unregister_thread,
    .barrier = rm_urcu_qsbr_barrier,
    .register_rculfhash_atfork = rm_urcu_qsbr_register_rculfhash_atfork,
    .unregister_rculfhash_atfork = rm_urcu_qsbr_unregister_rculfhash_atfork,
};
#else
typedef int rm_urcu_qsbr_absent; /* a translation unit has a declaration */
#endif
#endif
