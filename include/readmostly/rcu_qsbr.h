/*
 * readmostly/rcu_qsbr.h - quiescent-state-based RCU (QSBR) on the FCP
 * consensus core.
 *
 * SYNOPSIS
 *   #include <readmostly/rcu_qsbr.h>
 *   rm_rcu_qsbr_register_thread();          // every reader, once (online from then on)
 *   for (;;) {
 *     rm_rcu_qsbr_read_lock();
 *     struct foo *p = rm_rcu_dereference(shared);   ... use *p ...
 *     rm_rcu_qsbr_read_unlock();
 *     rm_rcu_qsbr_quiescent_state();        // now and then, outside sections
 *   }
 *   rm_rcu_qsbr_thread_offline(); sleep(...); rm_rcu_qsbr_thread_online();
 *   rm_rcu_qsbr_unregister_thread();
 *
 *   old = rm_rcu_xchg_pointer(&shared, new);     // writer
 *   rm_rcu_qsbr_synchronize();  free(old);        // or:
 *   rm_rcu_qsbr_call(&old->rcu, free_foo);        // never blocks
 *   rm_rcu_qsbr_barrier();                        // every queued callback has run
 *
 * DESCRIPTION
 *   A flavor of RCU of its own, beside readmostly/rcu.h (the "memb"
 *   flavor): its grace periods, callbacks, workers and statistics are
 *   independent of that flavor's, as liburcu's flavors are.  Both share
 *   the types struct rm_rcu_head, struct rm_rcu_call_data,
 *   struct rm_rcu_atfork, struct rm_rcu_stats and the pointer macros
 *   (rm_rcu_dereference, rm_rcu_assign_pointer, ...).
 *
 *   Read sections cost nothing: rm_rcu_qsbr_read_lock() and
 *   rm_rcu_qsbr_read_unlock() are a compiler barrier each (the compiler
 *   keeps the section's loads between them; the CPU is not asked for
 *   anything).  Instead, a registered thread is "online" and grace periods
 *   wait for it until it announces a quiescent state, a point outside any
 *   section: rm_rcu_qsbr_quiescent_state(), which loads the flavor's
 *   version and, only when it moved since the thread's last announcement
 *   (once per grace period), stores it into the thread's record, fences and
 *   wakes a grace period parked on that record.  A thread that will not
 *   announce for a while (it sleeps, blocks, waits for input) goes offline
 *   with rm_rcu_qsbr_thread_offline() and comes back with
 *   rm_rcu_qsbr_thread_online(); grace periods never wait for an offline
 *   or unregistered thread.  An offline or unregistered thread must not
 *   read (debug builds assert it in rm_rcu_qsbr_read_lock).
 *
 *   rm_rcu_qsbr_synchronize() waits until every online thread has
 *   announced a quiescent state after the call began (a grace period): it
 *   bumps the version of the flavor's domain, then waits for each record
 *   that has not reported it, spinning briefly and then sleeping on the
 *   record's futex until the thread's announcement (or its going offline,
 *   unregistering or exiting) wakes it.  No membarrier and no signal: the
 *   readers' announcements carry all the ordering.  Concurrent callers
 *   share grace periods (a caller that a grace period run by another thread
 *   covers returns when it ends).  A registered online thread that calls it
 *   is offline while it waits (so it does not wait for itself) and online
 *   again when it returns, as in liburcu; rm_rcu_qsbr_barrier() does the
 *   same.
 *
 *   Nesting and the EDEADLK check.  Sections nest.  Code compiled without
 *   NDEBUG counts them per thread (rm_rcu_qsbr_tls.depth), asserts on an
 *   unlock without a lock, and then the library refuses calls that would
 *   wait for the section they are made in (synchronize, barrier,
 *   call_data_free, call_data_free_per_cpu, thread_offline, unregister):
 *   EDEADLK (EBUSY for unregister), or an assertion when the library itself
 *   is built without NDEBUG.  Code compiled with NDEBUG counts nothing, so
 *   the library cannot see its sections: such a call waits for ever,
 *   exactly as with liburcu.
 *
 *   rm_rcu_qsbr_read_ongoing() answers, in code compiled with NDEBUG, what
 *   liburcu's qsbr flavor answers: whether the thread is registered and
 *   online (liburcu returns its reader counter, which is non-zero exactly
 *   then), whether or not a section is open.  Compiled without NDEBUG it
 *   answers from the nesting count: whether a section is open.
 *
 *   Callbacks.  rm_rcu_qsbr_call(), rm_rcu_qsbr_barrier(),
 *   rm_rcu_qsbr_defer(), the call data objects (default, per thread, per
 *   CPU), batching, the fork protocol, the atfork hooks and the statistics
 *   behave exactly as readmostly/rcu.h's rm_rcu_call part describes, over
 *   this flavor's grace periods.  A worker thread registers itself with
 *   this flavor, is online while it runs callbacks (they may read) and
 *   offline otherwise.  A call data object belongs to the flavor that made
 *   it: passed to the other flavor's functions it is EINVAL (set_thread and
 *   worker, which return no error, report the misuse and ignore it).
 *
 *   fork().  The child keeps the forking thread's registration and state;
 *   the records of the other threads are released there (they never delay
 *   a grace period of the child); callbacks and workers as in rcu.h.
 *
 *   Signal handlers.  rm_rcu_qsbr_read_lock, rm_rcu_qsbr_read_unlock and
 *   rm_rcu_qsbr_read_ongoing are async-signal-safe (a handler's section
 *   leaves the nesting count as it found it), and a handler's section is
 *   protected while the interrupted thread is online and not inside
 *   rm_rcu_qsbr_synchronize or rm_rcu_qsbr_barrier (there it is offline).
 *   Nothing else here may be called from a handler; in particular a
 *   handler must not announce a quiescent state: the code it interrupted
 *   may be inside a section.
 *
 * RETURN VALUES
 *   rm_rcu_qsbr_register_thread: 0, ENOMEM.  rm_rcu_qsbr_unregister_thread:
 *   0, EBUSY inside a (counted) section.  rm_rcu_qsbr_synchronize,
 *   rm_rcu_qsbr_barrier: 0, EDEADLK inside a counted section
 *   (rm_rcu_qsbr_barrier also in a callback, and between
 *   rm_rcu_qsbr_call_before_fork and the fork).  The call data functions:
 *   as rcu.h's, plus EINVAL for an object of the other flavor.
 *
 * DIFFERENCES FROM LIBURCU'S QSBR FLAVOR
 *   - Registering twice, unregistering, offline and online without
 *     registration are harmless no-ops here (liburcu asserts).
 *   - Calls that would wait for the caller's own section return EDEADLK
 *     when the caller's code counts sections (no NDEBUG); liburcu hangs.
 *   - rm_rcu_qsbr_read_ongoing() compiled without NDEBUG tells whether a
 *     section is open (liburcu: whether the thread is online).
 *   - A grace period is one version bump and one pass over the records
 *     (liburcu's 64-bit qsbr is one phase too); a quiescent state that
 *     reports costs one fence (liburcu's three), and one that has nothing to
 *     report a load and a compare (as liburcu's).
 *
 * COSTS
 *   128 bytes per registered thread (its record).  Read pair: nothing but
 *   two compiler barriers (plus the nesting count without NDEBUG).
 *   Quiescent state: one load of the version and a compare; when the
 *   version moved, a store, a fence and a load of the record's wake word.
 *
 * The design and the ordering table: docs/rcu-qsbr.md.
 */
#ifndef READMOSTLY_RCU_QSBR_H
#define READMOSTLY_RCU_QSBR_H

#include <readmostly/rcu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- read side ---------------------------------------------------------- */

/* The calling thread's QSBR state.  `rec` is its record in the flavor's
 * domain, or the stand-in &rm_rcu_qsbr_unregistered (no domain; `seen`
 * RM_RCU_SEEN_OFFLINE for ever), so that the inline quiescent state needs
 * no NULL test.  A record's `seen` is RM_RCU_SEEN_OFFLINE while its thread
 * is offline (or waits in synchronize or barrier). */
struct rm_rcu_qsbr_thread {
  struct rm_fcp_reader *rec;    /* see above */
  uint32_t depth;               /* open sections (counted without NDEBUG) */
  uint32_t state;               /* RM_RCU_IN_CALLBACK (slow paths only) */
  struct rm_rcu_call_data *crd; /* rm_rcu_qsbr_call_data_set_thread() */
};

extern RM_API __thread struct rm_rcu_qsbr_thread rm_rcu_qsbr_tls __attribute__((tls_model("initial-exec")));
/* The QSBR domain (one per process). */
extern RM_API struct rm_fcp_domain rm_rcu_qsbr_dom;
extern RM_API struct rm_fcp_reader rm_rcu_qsbr_unregistered;

RM_API void rm_rcu_qsbr_report_slowpath(struct rm_fcp_reader *r, uint64_t v);

/* A section's bounds: compiler barriers only.  No CPU ordering is needed:
 * a grace period waits for the thread's next quiescent state, and that
 * report is a release store made after every load of the section (see
 * rm_rcu_qsbr_quiescent_state).  The barrier keeps the compiler from
 * moving the section's loads across a quiescent state the caller's code
 * inlined next to it. */
RM_INLINE void rm_rcu_qsbr_read_lock(void) {
#ifndef NDEBUG
  RM_ASSERT(rm_atomic_load_relaxed(&rm_rcu_qsbr_tls.rec->seen) != RM_RCU_SEEN_OFFLINE,
            "rm_rcu_qsbr_read_lock in a thread that is offline or not registered");
  rm_rcu_qsbr_tls.depth++;
#endif
  rm_compiler_barrier();
}

RM_INLINE void rm_rcu_qsbr_read_unlock(void) {
  rm_compiler_barrier();
#ifndef NDEBUG
  RM_ASSERT(rm_rcu_qsbr_tls.depth > 0,
            "rm_rcu_qsbr_read_unlock without a matching rm_rcu_qsbr_read_lock");
  rm_rcu_qsbr_tls.depth--;
#endif
}

/* See "rm_rcu_qsbr_read_ongoing" above: without NDEBUG, a section is open;
 * with it, the thread is registered and online (liburcu's answer). */
RM_INLINE bool rm_rcu_qsbr_read_ongoing(void) {
#ifndef NDEBUG
  return rm_rcu_qsbr_tls.depth != 0;
#else
  return rm_atomic_load_relaxed(&rm_rcu_qsbr_tls.rec->seen) != RM_RCU_SEEN_OFFLINE;
#endif
}

/* Announce a quiescent state (outside any section).
 *
 * (Q1) Acquire load of the version.  A grace period bumps it with a
 * seq_cst RMW after the updates it protects (the unpublishing store), so a
 * thread that loads the new version v sees those updates in every later
 * section: sections after this point need not be waited for by grace
 * periods up to v, which is what reporting v says.  When `seen` already
 * equals v nothing is reported and nothing is stored: every section since
 * the report of v began after that report's acquire load, so it is as
 * covered as the ones after this point.  A thread that is offline or not
 * registered finds RM_RCU_SEEN_OFFLINE (never a version) and goes to the
 * slow path, which leaves it as it is.  The slow path stores v with a
 * release store (Q2: every load of the sections before happens before a
 * grace period that reads v there and frees what they read), then fences
 * and wakes a grace period parked on the record (Q3, see rcu_qsbr.c). */
RM_INLINE void rm_rcu_qsbr_quiescent_state(void) {
  struct rm_fcp_reader *r = rm_rcu_qsbr_tls.rec;
  RM_ASSERT(rm_rcu_qsbr_tls.depth == 0, "rm_rcu_qsbr_quiescent_state inside a read section");
  uint64_t v = rm_atomic_load_acquire(&rm_rcu_qsbr_dom.version); /* (Q1) */
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&r->seen) != v)) rm_rcu_qsbr_report_slowpath(r, v);
}

/* ---- registration --------------------------------------------------------- */

RM_API int rm_rcu_qsbr_register_thread(void);
RM_API int rm_rcu_qsbr_unregister_thread(void);
RM_API void rm_rcu_qsbr_thread_offline(void);
RM_API void rm_rcu_qsbr_thread_online(void);
/* The domain all QSBR records belong to (created on first use). */
RM_API rm_fcp_domain_t *rm_rcu_qsbr_domain(void);

/* ---- grace periods and callbacks ------------------------------------------ */

RM_API int rm_rcu_qsbr_synchronize(void);

RM_API void rm_rcu_qsbr_call(struct rm_rcu_head *head, void (*func)(struct rm_rcu_head *head));
RM_API int rm_rcu_qsbr_barrier(void);
RM_API int rm_rcu_qsbr_defer(void (*func)(void *p), void *p);

RM_API int rm_rcu_qsbr_call_data_create(struct rm_rcu_call_data **out);
RM_API int rm_rcu_qsbr_call_data_free(struct rm_rcu_call_data *crd);
RM_API struct rm_rcu_call_data *rm_rcu_qsbr_call_data_default(void);
RM_API void rm_rcu_qsbr_call_data_set_thread(struct rm_rcu_call_data *crd);
RM_API struct rm_rcu_call_data *rm_rcu_qsbr_call_data_thread(void);
RM_API int rm_rcu_qsbr_call_data_create_per_cpu(void);
RM_API struct rm_rcu_call_data *rm_rcu_qsbr_call_data_cpu(int cpu);
RM_API int rm_rcu_qsbr_call_data_set_cpu(int cpu, struct rm_rcu_call_data *crd);
RM_API int rm_rcu_qsbr_call_data_free_per_cpu(void);
RM_API struct rm_rcu_call_data *rm_rcu_qsbr_call_data_current(void);
RM_API pthread_t rm_rcu_qsbr_call_data_worker(struct rm_rcu_call_data *crd);
RM_API void rm_rcu_qsbr_call_before_fork(void);
RM_API void rm_rcu_qsbr_call_after_fork_parent(void);
RM_API void rm_rcu_qsbr_call_after_fork_child(void);
RM_API void rm_rcu_qsbr_register_atfork(struct rm_rcu_atfork *a);
RM_API void rm_rcu_qsbr_unregister_atfork(struct rm_rcu_atfork *a);
RM_API int rm_rcu_qsbr_call_set_batch(struct rm_rcu_call_data *crd, unsigned batch,
                                      uint64_t delay_ns);
RM_API void rm_rcu_qsbr_get_stats(struct rm_rcu_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RCU_QSBR_H */
