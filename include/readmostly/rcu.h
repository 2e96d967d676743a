/*
 * readmostly/rcu.h - FCP-RCU: read-copy update on the FCP consensus core.
 * Model of the read side's ordering: models/rcu.pml (docs/models.md).
 *
 * SYNOPSIS
 *   #include <readmostly/rcu.h>
 *   rm_rcu_register_thread();               // optional: the first read lock registers
 *   rm_rcu_read_lock();
 *   struct foo *p = rm_rcu_dereference(shared);   ... use *p ...
 *   rm_rcu_read_unlock();
 *
 *   old = rm_rcu_xchg_pointer(&shared, new);    // writer
 *   rm_rcu_synchronize();  free(old);            // or:
 *   rm_rcu_call(&old->rcu, free_foo);            // never blocks
 *   rm_rcu_barrier();                            // every queued callback has run
 *
 * DESCRIPTION
 *   A read section is the code between an outermost rm_rcu_read_lock() and
 *   its rm_rcu_read_unlock().  Sections nest to any depth (inner ones run
 *   on a second, per-thread record that only counts them), cost no atomic
 *   instruction and, while membarrier is available
 *   (readmostly/fcp.h, "membarrier mode"), no fence: the outermost lock
 *   stores "in flight" in the thread's record of the RCU domain, the
 *   outermost unlock clears it and reports the domain's version, exactly as
 *   a prwlock reader does.  In fence mode (READMOSTLY_NO_MEMBARRIER=1, a
 *   kernel without membarrier, or after rm_fcp_switch_to_fence()) the
 *   outermost lock executes one full fence.  A reader may block, sleep or
 *   be preempted inside a section; it only delays grace periods.
 *
 *   rm_rcu_synchronize() waits until every section that began before the
 *   call has ended (a grace period).  It bumps the domain version; threads
 *   that report the new version, or are outside any section, need nothing
 *   (busy readers report on their next unlock, within microseconds); if some
 *   thread has not reported, ONE membarrier makes every thread's "in flight"
 *   store visible, and the caller then waits only for threads still inside a
 *   section that began before: it spins briefly, then sleeps until that
 *   reader's unlock wakes it.  Concurrent callers share grace periods (a
 *   sequence counter: a caller whose need a grace period run by another
 *   thread already covers returns when that one ends), so N threads calling
 *   at once cost one or two grace periods, not N.  Calling it inside a read
 *   section is an error (it would wait for itself): EDEADLK, and an
 *   assertion in debug builds.
 *
 *   Registration.  A thread is registered by rm_rcu_register_thread() or by
 *   its first read lock; rm_rcu_unregister_thread() (or thread exit, even
 *   inside a section) releases its record, which never delays a later grace
 *   period.  A registered thread that is outside any section but never
 *   reports (idle, or busy outside the library) costs every grace period a
 *   membarrier: call rm_rcu_thread_offline() before going idle for long and
 *   rm_rcu_thread_online() after, or rm_rcu_quiescent_state() now and then,
 *   which reports the version.  An offline thread is never waited for
 *   outside its sections.  It may still read: a section while offline
 *   costs one full fence more than an online one, grace periods wait for it
 *   as for any other, and the thread is offline again when it ends.  A
 *   thread that only updates (synchronize, call) needs no registration.
 *   If no record can be allocated, rm_rcu_register_thread() returns ENOMEM
 *   and a read lock that would register prints a message and aborts (it
 *   cannot return an error).
 *
 *   Signal handlers.  A read section may run in a signal handler, at any
 *   point of the interrupted thread's code: inside its sections, inner or
 *   outermost, inside its own lock or unlock, while it is offline or goes
 *   offline or online, waits in rm_rcu_synchronize() or rm_rcu_barrier(),
 *   registers or unregisters (liburcu's default flavor promises the same).
 *   The handler's section is waited for by grace periods like any other
 *   and leaves the thread as it found it.  The thread must be registered
 *   before such a signal can arrive: a read lock in an unregistered thread
 *   registers it, which allocates, and a handler must not allocate.
 *   rm_rcu_read_lock, rm_rcu_read_unlock, rm_rcu_read_ongoing and the
 *   pointer macros are the async-signal-safe part of this header; the rest
 *   (synchronize, call, barrier, registration, offline and online) must not
 *   be called from a handler.  (In fence mode, an inner section of a
 *   handler that interrupted its thread's outermost lock between its store
 *   and its fence relies on the interruption itself ordering that store
 *   before the handler's loads, as liburcu's mb flavor does: on x86 the
 *   processor drains its store buffer when it takes the interrupt or
 *   exception that delivers the signal.  docs/rcu.md, "Signal handlers".)
 *
 *   Callbacks.  rm_rcu_call(head, func) queues func(head) to run after a
 *   grace period.  It never blocks and may be called inside a read section
 *   and from a callback.  Callbacks are queued (a lock-free queue) on a
 *   call_rcu data object, each drained by its own worker thread, which
 *   takes every queued callback, waits for ONE grace period and runs them in
 *   order; the default object is created on first use, others by
 *   rm_rcu_call_data_create() and chosen per thread or per CPU.  The worker
 *   starts a grace period once rm_rcu_call_set_batch() callbacks are queued
 *   (default 1: at once) or the oldest has waited the batch delay (default
 *   10 ms; UINT64_MAX: no deadline).  rm_rcu_barrier() waits until every
 *   callback queued before it (on every object, also on one that
 *   rm_rcu_call_data_free() is freeing meanwhile) has run; it holds no lock
 *   while it waits, so other threads may create and set objects, and fork,
 *   meanwhile.  Callbacks queued by a thread that exits are run as usual.
 *   A callback that returns inside a read section has the section ended
 *   for it (a message; an assertion in debug builds).  If the worker
 *   thread cannot be created, rm_rcu_call() outside a read section waits
 *   for a grace period and runs the queue (its callback among them)
 *   itself; inside one it leaves the callback queued, and the next
 *   rm_rcu_call() or rm_rcu_barrier() retries (the barrier, failing again,
 *   runs the queue itself): a callback is never dropped.
 *   rm_rcu_call_data_free() runs what the object holds (its worker's last
 *   batches, or itself) and frees it.  With per-CPU objects rm_rcu_call()
 *   chooses its object inside a read section if the thread is registered
 *   (an offline thread stays offline), else under a mutex held for a few
 *   instructions: it never registers the caller.
 *   rm_rcu_defer(func, p) (liburcu's defer_rcu) queues func(p) the same way
 *   through a small allocated node; when the node cannot be allocated it
 *   waits for a grace period and calls func(p) itself, so it must not be
 *   called inside a read section (an assertion in debug builds; there,
 *   without memory, it returns EDEADLK and does not call func).
 *
 *   fork().  The child can read, synchronize and queue callbacks: records of
 *   other threads are released in the child (their sections end there), and
 *   its call_rcu workers, which do not exist there, are started again on
 *   first use, with the callbacks the parent had queued (they run in the
 *   child too, as with liburcu).  fork() may be called anywhere, inside a
 *   read section and while other threads synchronize, wait in a barrier or
 *   switch to fence mode.  One thing is lost without help: a callback that
 *   a worker is running at the moment of the fork (or has just taken off
 *   its queue) does not run in the child.  rm_rcu_call_before_fork() before
 *   fork() (outside any section) stops every worker between two batches,
 *   so that none is; rm_rcu_call_after_fork_parent() and
 *   rm_rcu_call_after_fork_child() after it resume them (liburcu's
 *   call_rcu_before_fork() and friends are these).
 *
 *   Pointers.  rm_rcu_dereference(p) is a consume load (an acquire load
 *   here: no compiler implements consume); rm_rcu_assign_pointer(p, v) a
 *   release store (the new object's initialisation happens before any
 *   reader that loads v); rm_rcu_xchg_pointer and rm_rcu_cmpxchg_pointer
 *   are full barriers, as liburcu's are.
 *
 *   The design, the ordering table and every difference from liburcu and
 *   from the paper: docs/rcu.md.  readmostly/urcu.h gives liburcu's names.
 *
 * RETURN VALUES
 *   rm_rcu_synchronize, rm_rcu_barrier: 0, or EDEADLK inside a read section
 *   (rm_rcu_barrier also in a callback, and in the thread that called
 *   rm_rcu_call_before_fork until the fork).  rm_rcu_register_thread: 0,
 *   ENOMEM.  rm_rcu_unregister_thread: 0, EBUSY inside a read section.
 *   rm_rcu_call_data_create: 0, EINVAL, ENOMEM, EAGAIN (no thread).
 *   rm_rcu_call_data_free: 0; EINVAL (NULL, the default object, or an
 *   object another thread is freeing); EDEADLK inside a read section or in
 *   a callback of the object's own worker.  rm_rcu_call_data_free_per_cpu:
 *   0, EDEADLK inside a read section.  rm_rcu_call_data_set_cpu: 0,
 *   EINVAL, EEXIST, ENOMEM.  rm_rcu_defer: 0, EDEADLK (see above).
 *
 * COSTS
 *   128 bytes per registered thread (its record); outermost read pair:
 *   one store to the thread's record each way, one load and compare each
 *   way (the lock: the domain's gate; the unlock: its version, on the same
 *   line), one load and test of the thread-local depth in the unlock, and
 *   one store when the version moved; no atomic instruction, and no test
 *   of the fence mode (it is folded into the lock's compare).  A nested
 *   pair takes the unlikely branch of the lock and the likely one of the
 *   unlock, inline, and stores only to thread-local storage (the depth)
 *   (docs/rcu.md, "The read pair").
 *
 * MISUSE
 *   An rm_rcu_read_unlock() without a matching lock is caught by an
 *   assertion in debug builds; in release builds it is ignored (a thread
 *   that is not registered also gets a one-line message).  A call that
 *   would wait for itself (synchronize, barrier, call_rcu_data_free and
 *   free_per_cpu inside a section; barrier in a callback) asserts in debug
 *   builds and in release builds returns EDEADLK with one line on stderr
 *   that names the function called.
 */
#ifndef READMOSTLY_RCU_H
#define READMOSTLY_RCU_H

#include <readmostly/fcp.h>

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- read side ---------------------------------------------------------- */

/* The calling thread's RCU state.
 *
 * `rec` is what the inline read side works on: the thread's record in the
 * RCU domain (`own`), or, while the thread is not registered, the
 * stand-in &rm_rcu_unregistered (in no domain).  `depth` counts the
 * sections open inside the outermost one; only the outermost section
 * stores to the record (R1, U1), so a grace period sees one section per
 * thread, and an inner pair counts `depth` up and down in thread-local
 * storage.  The stand-in's `seen` never equals a version and is
 * RM_RCU_SEEN_OFFLINE: a lock on it finds its `passive` not NULL and goes
 * to the slow path on that `seen`, or finds it NULL (after a misplaced
 * unlock) and goes there on the gate compare; an unlock on it goes to its
 * slow path on the version compare.  An offline thread (and one waiting
 * in rm_rcu_synchronize or rm_rcu_barrier) keeps `rec` == `own`, whose
 * `seen` is then RM_RCU_SEEN_OFFLINE: its next lock leaves that state in
 * its slow path.  So the inline pair needs no test of the thread's state
 * beyond the compares it makes anyway.
 *
 * Signal handlers.  A handler may interrupt the thread's own RCU code at
 * any instruction and run read sections; it leaves every field as it
 * found it.  Each step of the inline code is one store to one field (R1 or
 * U1 to the record, or `depth` counted up or down by one), and a handler
 * that interrupts a read-modify-write of `depth` puts it back as it was
 * before returning, so every point in between is a consistent nesting
 * state: `depth` is nonzero only while the record is in flight (the
 * outermost lock stores R1 before any inner section counts, the outermost
 * unlock tests `depth` before U1), and a handler that finds the record in
 * flight nests inside the interrupted section; the slow paths handle the
 * offline states a handler can find (readmostly/rcu.h "Signal handlers",
 * docs/rcu.md). */
struct rm_rcu_thread {
  struct rm_fcp_reader *rec;  /* see above */
  struct rm_fcp_reader *own;  /* the thread's record (NULL: not registered) */
  uint32_t depth;             /* sections open inside the outermost one */
  uint32_t state;             /* RM_RCU_IN_CALLBACK (slow paths only) */
  struct rm_rcu_call_data *crd;      /* rm_rcu_call_data_set_thread() */
};
#define RM_RCU_IN_CALLBACK 0x4u /* a call_rcu worker running callbacks */
/* The `seen` of a record that never waits for anything: a thread that is
 * offline or waiting for a grace period, a record nobody owns, the
 * stand-in (versions never come near it). */
#define RM_RCU_SEEN_OFFLINE UINT64_MAX

extern RM_API __thread struct rm_rcu_thread rm_rcu_tls __attribute__((tls_model("initial-exec")));
/* The RCU domain (one per process, as liburcu's default flavor). */
extern RM_API struct rm_fcp_domain rm_rcu_dom;
extern RM_API struct rm_fcp_reader rm_rcu_unregistered;
/* What a record holds while its thread is inside a section: never NULL,
 * never a lock (the RCU domain holds nothing else). */
extern RM_API const uint64_t rm_rcu_in_flight;

RM_API struct rm_fcp_reader *rm_rcu_read_lock_slowpath(void);
RM_API void rm_rcu_read_lock_report(struct rm_fcp_reader *r, uint64_t gate);
RM_API void rm_rcu_read_unlock_report(struct rm_fcp_reader *r, uint64_t v);

/* The thread-local state is named directly (rm_rcu_tls.x), not through a
 * pointer to it: gcc's -fsanitize=null reports a member access through the
 * address of an initial-exec TLS object as a null dereference.
 *
 * The outermost lock, the common case: the record's `passive` is NULL
 * (outside any section; reading our own `passive` needs no ordering: only
 * this thread writes it while it lives).  Store "in flight" (R1), then load
 * the domain's gate (readmostly/fcp.h, "The gate") and compare it with our
 * `seen`: equal means membarrier mode and no new version since our last
 * report, so the section needs no fence and no store.  Otherwise
 * rm_rcu_read_lock_report() fences if the gate is closed (fence mode),
 * leaves the offline state if the thread was in it, and reports the
 * version (see there why a report inside the section is sound).  Like
 * liburcu's, the pair stores only to one per-thread word. */
RM_INLINE void rm_rcu_read_lock(void) {
  struct rm_fcp_reader *r = rm_rcu_tls.rec;
  const void *p = rm_atomic_load_relaxed(&r->passive);
  RM_DEBUG_YIELD();
  if (RM_UNLIKELY(p != NULL)) {
    /* Nested: the thread's record is in flight (every record the inline
     * code sees holds NULL or "in flight", rcu.c invariant 1, except the
     * stand-in, whose `seen` is offline).  `seen` a version (or 0, a
     * section begun offline): count one more inner section.  `seen`
     * offline: the stand-in (its `passive` holds its address, or "in
     * flight" after a misplaced unlock and a lock), or the thread's record
     * when this lock runs in a signal handler that interrupted the
     * outermost lock before it left the offline state; the slow path
     * registers, or leaves the offline state first.  (A plain read: only
     * this thread, and its signal handlers, write the `seen` of its
     * record; the stand-in's is never written.)  Debug builds assert that
     * the count does not wrap (2^32 - 1 sections open: unlocks missing);
     * release builds do not test it, since any test here costs the inner
     * pair (docs/rcu.md, "Measured"). */
    if (RM_LIKELY(r->seen != RM_RCU_SEEN_OFFLINE)) {
      RM_ASSERT(rm_rcu_tls.depth != UINT32_MAX,
                "rm_rcu_read_lock: 2^32 - 1 nested read sections (unlocks missing?)");
      rm_rcu_tls.depth++;
      return;
    }
    r = rm_rcu_read_lock_slowpath(); /* register; or an inner section, begun there */
    if (r == NULL) return;
  }
  rm_atomic_store_relaxed(&r->passive, (const void *)&rm_rcu_in_flight); /* (R1) */
  /* C11 would let the compiler sink the relaxed R1 below the gate load;
   * the argument is about the order in which the CPU executes them (the
   * gate load after R1), so pin it. */
  rm_compiler_barrier();
  RM_DEBUG_YIELD();
  uint64_t g = rm_atomic_load_relaxed(&rm_rcu_dom.gate);
  if (RM_UNLIKELY(g != rm_atomic_load_relaxed(&r->seen))) rm_rcu_read_lock_report(r, g);
}

/* An inner unlock counts `depth` down and touches no record.  (`depth` is
 * thread-local: only this thread and its signal handlers, which leave it
 * as they found it, write it.)
 *
 * The outermost unlock: release store of NULL (U1): the section's loads
 * happen before a synchronize that reads it.  Then the report: the acquire
 * load of the version, and when it differs from `seen`, the slow path,
 * which stores it (release) and wakes a synchronize parked on this record,
 * as rm_fcp_report() does, or on the stand-in reports the misuse.  `seen`
 * is read after U1: a signal handler that ran before U1 nested inside this
 * section and left `seen` as it was; one that ran after U1 found the
 * record out of its section and made its own report, which we read (the
 * slow path reads `seen` again anyway).  The version load stays after U1
 * in the CPU's order (C11 would let it move above a release store): the
 * wake argument of rm_fcp_report() needs it. */
RM_INLINE void rm_rcu_read_unlock(void) {
  uint32_t d = rm_rcu_tls.depth;
  RM_DEBUG_YIELD();
  if (RM_UNLIKELY(d != 0)) {
    rm_rcu_tls.depth = d - 1;
    return;
  }
  struct rm_fcp_reader *r = rm_rcu_tls.rec;
  /* A registered thread outside any section: storing NULL again and
   * reporting changes nothing, so release builds let it pass. */
  RM_ASSERT(r == &rm_rcu_unregistered || rm_atomic_load_relaxed(&r->passive) != NULL,
            "rm_rcu_read_unlock without a matching rm_rcu_read_lock");
  rm_atomic_store_release(&r->passive, (const void *)NULL); /* (U1) */
  rm_compiler_barrier();
  RM_DEBUG_YIELD();
  uint64_t v = rm_atomic_load_acquire(&rm_rcu_dom.version);
  if (RM_UNLIKELY(r->seen != v)) rm_rcu_read_unlock_report(r, v); /* report, or an unlock without a lock */
}

/* Inside a read section (of this thread, or of the code a signal handler
 * interrupted). */
RM_INLINE bool rm_rcu_read_ongoing(void) {
  struct rm_fcp_reader *r = rm_rcu_tls.rec;
  return r != &rm_rcu_unregistered &&
         rm_atomic_load_relaxed(&r->passive) == (const void *)&rm_rcu_in_flight;
}

/* ---- registration --------------------------------------------------------- */

RM_API int rm_rcu_register_thread(void);
RM_API int rm_rcu_unregister_thread(void);
RM_API void rm_rcu_thread_offline(void);
RM_API void rm_rcu_thread_online(void);
RM_API void rm_rcu_quiescent_state(void);
/* The domain all RCU records belong to (created on first use). */
RM_API rm_fcp_domain_t *rm_rcu_domain(void);

/* ---- grace periods -------------------------------------------------------- */

RM_API int rm_rcu_synchronize(void);

struct rm_rcu_head {
  struct rm_rcu_head *next;
  void (*func)(struct rm_rcu_head *head);
};

struct rm_rcu_call_data;
RM_API void rm_rcu_call(struct rm_rcu_head *head, void (*func)(struct rm_rcu_head *head));
RM_API int rm_rcu_barrier(void);
RM_API int rm_rcu_defer(void (*func)(void *p), void *p);

/* call_rcu data objects: one worker thread each. */
RM_API int rm_rcu_call_data_create(struct rm_rcu_call_data **out);
RM_API int rm_rcu_call_data_free(struct rm_rcu_call_data *crd);
RM_API struct rm_rcu_call_data *rm_rcu_call_data_default(void);
/* The object rm_rcu_call() of the calling thread uses (NULL: per CPU or default). */
RM_API void rm_rcu_call_data_set_thread(struct rm_rcu_call_data *crd);
RM_API struct rm_rcu_call_data *rm_rcu_call_data_thread(void);
/* One object per CPU: every CPU that has none gets a new one (a CPU set
 * with rm_rcu_call_data_set_cpu keeps its own); rm_rcu_call() then uses
 * the object of the CPU it runs on, unless the thread has its own.  0,
 * ENOMEM, EAGAIN. */
RM_API int rm_rcu_call_data_create_per_cpu(void);
RM_API struct rm_rcu_call_data *rm_rcu_call_data_cpu(int cpu);
/* Give CPU cpu the object crd (NULL: none).  0; EINVAL (cpu out of
 * range); EEXIST (crd is not NULL and the CPU has an object: set NULL
 * first, wait for a grace period, then free the old one); ENOMEM. */
RM_API int rm_rcu_call_data_set_cpu(int cpu, struct rm_rcu_call_data *crd);
/* Free every per-CPU object (their callbacks run first).  0, EDEADLK
 * inside a read section. */
RM_API int rm_rcu_call_data_free_per_cpu(void);
/* The object rm_rcu_call() would use now: the thread's, else its CPU's,
 * else the default one. */
RM_API struct rm_rcu_call_data *rm_rcu_call_data_current(void);
/* The worker thread of crd (started if it was not). */
RM_API pthread_t rm_rcu_call_data_worker(struct rm_rcu_call_data *crd);
/* liburcu's fork protocol: rm_rcu_call_before_fork() stops every call_rcu
 * worker between two batches (call it outside any read section, and after
 * rm_rcu_barrier() if the callbacks should have run before the fork);
 * rm_rcu_call_after_fork_parent() and rm_rcu_call_after_fork_child()
 * resume them (the library's own fork handlers also do).  Without it a
 * fork() still works, but a callback that a worker was running at that
 * moment does not run in the child (see "fork()" above). */
RM_API void rm_rcu_call_before_fork(void);
RM_API void rm_rcu_call_after_fork_parent(void);
RM_API void rm_rcu_call_after_fork_child(void);
/* Hooks run around fork() (before, in the parent after, in the child
 * after), in registration order; for libraries with threads of their own
 * that use RCU (liburcu's lock-free hash table registers its resize
 * worker here).  The structure must stay valid until unregistered. */
struct rm_rcu_atfork {
  void (*before_fork)(void *priv);
  void (*after_fork_parent)(void *priv);
  void (*after_fork_child)(void *priv);
  void *priv;
  struct rm_rcu_atfork *rm_next; /* the library's */
};
RM_API void rm_rcu_register_atfork(struct rm_rcu_atfork *a);
RM_API void rm_rcu_unregister_atfork(struct rm_rcu_atfork *a);
/* Batching of one object (NULL: every object, now and later): a grace
 * period starts when `batch` callbacks are queued (1..1 000 000) or the
 * oldest has waited delay_ns.  0, EINVAL. */
RM_API int rm_rcu_call_set_batch(struct rm_rcu_call_data *crd, unsigned batch, uint64_t delay_ns);

/* Statistics (relaxed counters, for benchmarks and tests). */
struct rm_rcu_stats {
  uint64_t grace_periods;   /* grace periods run */
  uint64_t sync_calls;      /* rm_rcu_synchronize calls */
  uint64_t sync_shared;     /* ... that returned on another caller's grace period */
  uint64_t callbacks_run;
  uint64_t callback_batches; /* grace periods the workers waited for */
};
RM_API void rm_rcu_get_stats(struct rm_rcu_stats *out);

/* ---- pointers ------------------------------------------------------------- */

/* Consume, implemented as acquire: every later load through the pointer
 * sees the object as the publisher initialised it. */
#define rm_rcu_dereference(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
/* Release: the object's initialisation happens before a reader that loads
 * the new value.  (liburcu skips the barrier for NULL; a release store of
 * NULL costs nothing more on x86.) */
#define rm_rcu_assign_pointer(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
/* Full barriers (seq_cst), as liburcu's uatomic_xchg / uatomic_cmpxchg. */
#define rm_rcu_xchg_pointer(pp, v) __atomic_exchange_n((pp), (v), __ATOMIC_SEQ_CST)
#define rm_rcu_cmpxchg_pointer(pp, old, v)                                                   \
  __extension__({                                                                          \
    __typeof__(*(pp)) rm_rcu_old_ = (old);                                                 \
    __atomic_compare_exchange_n((pp), &rm_rcu_old_, (v), false, __ATOMIC_SEQ_CST,          \
                                __ATOMIC_SEQ_CST);                                         \
    rm_rcu_old_;                                                                           \
  })

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RCU_H */
