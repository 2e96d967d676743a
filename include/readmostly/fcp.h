/*
 * readmostly/fcp.h - the FCP consensus core: fence-free readers, version
 * consensus, writers that wait only for stragglers.
 * Model of the ordering below: models/fcp.pml; rm_fcp_unlock_own against
 * rm_fcp_release_foreign: models/fcp_foreign.pml (docs/models-fcp.md).
 *
 * SYNOPSIS
 *   #include <readmostly/fcp.h>
 *   rm_fcp_domain_t *d = rm_fcp_default_domain();   // or rm_fcp_domain_create(&d)
 *   struct rm_fcp_reader *r = rm_fcp_self(d);       // this thread's record (claimed if new)
 *   r = rm_fcp_self_find(d);                         // ... or NULL, never claimed
 *   // reader:  rm_fcp_enter(r, obj) ... rm_fcp_leave(d, r)
 *   // writer:  v = rm_fcp_begin(d); rm_fcp_wait(d, v, obj, r, mode, clk, abstime)
 *   bool fast = rm_fcp_membarrier_mode();
 *
 * DESCRIPTION
 *   A domain is a 64-bit version and the list of its reader records, one per
 *   thread that has used the domain.  A record says which object (a lock)
 *   the thread holds passively, if any, and the last domain version the
 *   thread has seen ("reported").  Readers write only their own record, with
 *   plain stores: no atomic read-modify-write and, on x86, no fence.
 *
 *   A writer first makes its intention visible (for prwlock: it sets the
 *   lock's writer word), then bumps the version with rm_fcp_begin() and
 *   calls rm_fcp_wait().  A record that has already reported the new version
 *   needs nothing more: its thread saw the version after the writer's store,
 *   so it also sees the writer.  Busy readers report on their next unlock,
 *   so the writer first polls briefly ("bounded staleness": on x86 a store
 *   reaches other cores within hundreds of cycles).  If some records still
 *   have not reported, ONE membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
 *   makes every running thread of the process execute a full barrier (a
 *   thread that is not running passed one when it was switched out); after
 *   it, a record's `passive` field is the truth, and the writer waits only
 *   for records that hold its object, spinning briefly, then parking on the
 *   record's `wake` word, which that reader's unlock checks with one plain
 *   load when it reports a new version (see rm_fcp_report for why that
 *   is always the case when a writer parked).  This is the user-space form
 *   of the paper's IPI and report.
 *
 *   If the kernel refuses membarrier registration, or READMOSTLY_NO_MEMBARRIER=1
 *   is set, the core runs in fence mode: readers execute a full fence between
 *   publishing `passive` and reading the writer word, and writers use a fence
 *   instead of the system call.  rm_fcp_membarrier_mode() tells which.  A
 *   process whose writers need membarriers too often (threads that hold
 *   records but do not report: idle, or busy elsewhere) can switch to fence
 *   mode for good, by rm_fcp_switch_to_fence() or automatically above a
 *   rate set with rm_fcp_auto_fence(); the preload library does so by
 *   default (docs/preload.md).
 *
 *   If membarrier fails after registration succeeded (a seccomp filter
 *   installed later returns EPERM), the process switches to fence mode for
 *   good, with one line on stderr: readers fence from then on, and instead
 *   of the barrier the switch waits, for each thread with a record, until
 *   it has reported a version bumped after the switch, or the kernel shows
 *   it has been switched out since (its context-switch counts in
 *   /proc/self/task/<tid>/status moved, or it is not running): either way
 *   its earlier stores are visible and its later sections fence.  A writer
 *   never proceeds as if a barrier had run when none did.  A thread that
 *   runs without pause outside the library and never reports delays that
 *   one switch until the scheduler preempts it.  Transient failures
 *   (ENOMEM) are retried.
 *
 *   Records are allocated (128-byte aligned, never shared between threads) on
 *   a thread's first use of the domain, released when the thread exits
 *   (a record released while it holds an object passively gives that hold
 *   up, see docs/fcp.md), and reused by later threads; they are freed with
 *   the domain.  In a child after fork() records of other threads that hold
 *   nothing are released; holds of other threads stay held ("orphans"),
 *   except in domains with fork_release_holds set (RCU), where they end.
 *
 * HOLDS RELEASED BY ANOTHER THREAD (for pthread_rwlock semantics)
 *   rm_fcp_domain_keep_exit_holds(d, true) makes a thread that exits while
 *   holding an object passively leave that hold in place (an orphan record:
 *   writers of the object wait for it, as glibc's count would make them),
 *   instead of giving it up.  rm_fcp_release_foreign(d, obj, self) releases
 *   one passive hold of obj found in another thread's record (or an orphan,
 *   which is then freed for reuse); rm_fcp_held(d, obj) tells whether any
 *   record holds obj.  A domain used this way must change `nest` only with
 *   rm_fcp_nest_add() and rm_fcp_nest_drop(), which cooperate with the
 *   releaser (it marks `nest` with RM_FCP_NEST_BUSY while it takes the
 *   hold away, so that neither side miscounts), and the owner must unlock
 *   with rm_fcp_unlock_own(), which returns false when a releaser took the
 *   hold first (the owner's unlock then releases some other hold).
 *   prwlock's own domains do not use any of this.
 *
 * RETURN VALUES
 *   rm_fcp_domain_create: 0, ENOMEM.  rm_fcp_domain_destroy: 0, EBUSY while a
 *   record belongs to another live thread (it must exit or call
 *   rm_fcp_domain_leave first) or the caller holds an object of the domain.
 *   rm_fcp_domain_leave: 0, EBUSY while the caller holds an object.  rm_fcp_wait: 0,
 *   EBUSY (mode RM_FCP_TRY and a reader holds the object), ETIMEDOUT.
 *   rm_fcp_self: NULL only when the record cannot be allocated (callers then
 *   use their non-passive path).
 */
#ifndef READMOSTLY_FCP_H
#define READMOSTLY_FCP_H

#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_fcp_domain;
typedef struct rm_fcp_domain rm_fcp_domain_t;

/* One thread's record in one domain (128 bytes: nothing else on its lines). */
struct rm_fcp_reader {
  const void *passive;            /* object held passively, or NULL (owner writes) */
  uint64_t seen;                  /* last domain version reported (owner writes) */
  uint32_t nest;                  /* extra passive holds of `passive` (owner only) */
  uint32_t wake;                  /* futex: writers parked waiting for this record */
  uint32_t in_use;                /* 1 while a thread owns the record */
  uint32_t freeing;               /* an orphan's release is claimed (CAS 0 -> 1) */
  struct rm_fcp_domain *domain;
  struct rm_fcp_reader *next;     /* the domain's list (append-only) */
  struct rm_fcp_reader *tnext;    /* the owning thread's records */
  uint64_t owner;                 /* rm_thread_identity() of the owner */
  uint32_t stolen;                /* holds other threads released (releasers write, under BUSY) */
  uint32_t tid;                   /* the owner's kernel thread id (see "membarrier fails") */
} RM_ALIGNED;

/* The words readers load sit in the middle of their sector, 64 bytes from
 * where a record's `passive` and `seen` sit in theirs: records are
 * sector-aligned, so a reader's store to its record and its next load of
 * the version never share address bits 0-11.  When they do (the record 4
 * KiB from the domain, which the heap does produce), the CPU cannot tell
 * at once that the load does not read the store ("4K aliasing"): an RCU
 * read pair measured 1.11 ns instead of 1.04. */
struct rm_fcp_domain {
  uint8_t pad_lead[RM_CACHE_SECTOR / 2];
  uint64_t version;               /* bumped by every consensus; read by readers */
  uint64_t gate;                  /* rm_fcp_gate_open(): the version, or CLOSED */
  uint8_t pad0[RM_CACHE_SECTOR / 2 - 2 * sizeof(uint64_t)];
  struct rm_fcp_reader *head;     /* list of records */
  uint32_t uid;                   /* never reused: the thread-local cache key */
  uint32_t nrecords;
  struct rm_fcp_domain *dnext;    /* all domains (fork handler) */
  uint64_t consensus_fast;        /* statistics (relaxed counters) */
  uint64_t consensus_membarrier;
  uint64_t writer_parks;
  uint64_t consensus_fenced;      /* stragglers settled by a fence (fence mode) */
  uint32_t keep_exit_holds;       /* rm_fcp_domain_keep_exit_holds() */
  uint32_t no_tls_cache;          /* the user caches its records itself (RCU) */
  uint32_t fork_release_holds;    /* a fork child releases other threads' holds (RCU:
                                     a section of a thread that is gone never ends) */
  /* Called on an exiting thread for its record of this domain, before the
   * record is released (RCU forgets its thread-local pointer to it). */
  void (*exit_hook)(struct rm_fcp_reader *r);
} RM_ALIGNED;

#define RM_FCP_WAIT 0
#define RM_FCP_TRY 1
#define RM_FCP_TIMED 2

RM_API rm_fcp_domain_t *rm_fcp_default_domain(void);
RM_API int rm_fcp_domain_create(rm_fcp_domain_t **out);
/* Make *d, in storage the caller provides for the life of the process (a
 * static object, so that inline code reaches its version at a fixed
 * address), a domain.  Never destroyed. */
RM_API void rm_fcp_domain_init_static(struct rm_fcp_domain *d);
RM_API int rm_fcp_domain_destroy(rm_fcp_domain_t *d);
/* Release the calling thread's record of d now (EBUSY while it holds). */
RM_API int rm_fcp_domain_leave(rm_fcp_domain_t *d);
/* true: readers need no fence (membarrier registered at library load and
 * no switch to fence mode since). */
RM_API bool rm_fcp_membarrier_mode(void);
/* Switch the process to fence mode for good: readers fence, writers stop
 * issuing membarriers.  Safe at any time (one membarrier orders it). */
RM_API void rm_fcp_switch_to_fence(void);
/* Switch automatically when writers issue more than per_sec membarriers per
 * second (measured over 64 of them); 0 (the default) never switches. */
RM_API void rm_fcp_auto_fence(unsigned per_sec);

/* A rate watch for events such as membarriers (rm_fcp_auto_fence, RLU's
 * automatic close): rm_fcp_rate_note() counts one event and, on every
 * 64th, once at least min_window_ns have passed since the window began,
 * returns true if the window's rate was above per_sec a second (the caller
 * then acts), and otherwise begins a new window.  Zero-initialised is a
 * fresh watch.  Relaxed, racy counters: a heuristic, not an invariant. */
struct rm_fcp_rate {
  uint64_t count;        /* events */
  uint64_t window_ns;    /* rm_now_ns() when the window began (0: none yet) */
  uint64_t window_count; /* `count` then */
};
RM_API bool rm_fcp_rate_note(struct rm_fcp_rate *w, unsigned per_sec, uint64_t min_window_ns);
RM_API void rm_fcp_rate_reset(struct rm_fcp_rate *w);

/*
 * The gate: a fence-free read fast path that needs no mode test.
 *
 * A reader that must report the version anyway loads it, compares it with
 * its `seen`, and then tests the mode word to learn whether to fence.  A
 * domain's `gate` folds the two: while the process is in membarrier mode
 * it holds a recent version (rm_fcp_gate_open() moves it up to the current
 * one), and otherwise a value with RM_FCP_GATE_CLOSED set, which no `seen`
 * ever equals.  A reader that stores "in flight" (R1), then loads the gate
 * and finds it equal to its `seen` is in membarrier mode and has nothing to
 * report: it needs neither fence nor store.  Any other value sends it to
 * its slow path, which fences when the gate is closed and reports.
 *
 * Why the fence may be skipped: the gate opens only while the mode has
 * RM_FCP_NOFENCE (membarrier registered, every writer issues one for
 * stragglers), and rm_fcp_switch_to_fence() closes every gate for good
 * (RM_FCP_GATE_SHUT, an RMW) before its membarrier.  A reader whose gate
 * load, made after R1 in program order, saw the gate open made that load
 * before the switch's barrier reached its CPU; R1 came earlier still, so
 * the barrier made R1 visible, exactly as for a reader that saw NOFENCE in
 * the mode word (rm_fcp_reader_fence).  A gate that lags the version is
 * harmless: the reader does not report, so writers treat it as a
 * straggler (a membarrier, or its next report), as before the gate.
 *
 * Only readers that load the gate after R1 may use it (RCU does); the
 * domain's user opens it, after claiming a record and after each
 * rm_fcp_begin(), with rm_fcp_gate_open().
 */
#define RM_FCP_GATE_CLOSED (UINT64_C(1) << 63) /* no fast path (fence mode, or not yet open) */
#define RM_FCP_GATE_SHUT (UINT64_C(1) << 62)   /* closed for good (the switch to fence) */
RM_API void rm_fcp_gate_open(rm_fcp_domain_t *d);

RM_API struct rm_fcp_reader *rm_fcp_self_slowpath(rm_fcp_domain_t *d);
RM_API uint64_t rm_fcp_begin(rm_fcp_domain_t *d);
RM_API int rm_fcp_wait(rm_fcp_domain_t *d, uint64_t v, const void *obj,
                       const struct rm_fcp_reader *self, int mode, int clk,
                       const struct timespec *abstime);
RM_API void rm_fcp_wake_writers(struct rm_fcp_reader *r);

/* Holds released by another thread (see above). */
RM_API void rm_fcp_domain_keep_exit_holds(rm_fcp_domain_t *d, bool keep);
RM_API bool rm_fcp_release_foreign(rm_fcp_domain_t *d, const void *obj,
                                   const struct rm_fcp_reader *self);
RM_API bool rm_fcp_held(rm_fcp_domain_t *d, const void *obj);
#define RM_FCP_NEST_BUSY 0x80000000u /* a foreign release is taking the hold */
RM_API bool rm_fcp_nest_add(struct rm_fcp_reader *r, const void *obj);
RM_API bool rm_fcp_nest_drop(struct rm_fcp_reader *r, const void *obj);

/* Thread-local cache: the record for the default domain, and a small cache
 * for other domains.  A thread with no default-domain record (none yet, or
 * after it left the domain) points at rm_fcp_unregistered instead of NULL:
 * a record of no domain whose `passive` is never NULL and never a lock, so
 * the inline fast paths need no NULL test (their `passive` test sends the
 * thread to its slow path, which claims a record). */
extern RM_API struct rm_fcp_reader rm_fcp_unregistered;
extern RM_API __thread struct rm_fcp_reader *rm_fcp_tls_default __attribute__((tls_model("initial-exec")));
extern RM_API struct rm_fcp_domain rm_fcp_default;
#define RM_FCP_TLS_CACHE 4
struct rm_fcp_tls_entry {
  uint32_t uid;
  struct rm_fcp_reader *r;
};
extern RM_API __thread struct rm_fcp_tls_entry rm_fcp_tls_cache[RM_FCP_TLS_CACHE] __attribute__((tls_model("initial-exec")));

RM_INLINE struct rm_fcp_reader *rm_fcp_self(rm_fcp_domain_t *d) {
  if (RM_LIKELY(d == &rm_fcp_default)) {
    struct rm_fcp_reader *r = rm_fcp_tls_default;
    return RM_LIKELY(r != &rm_fcp_unregistered) ? r : rm_fcp_self_slowpath(d);
  }
  for (int i = 0; i < RM_FCP_TLS_CACHE; i++)
    if (rm_fcp_tls_cache[i].uid == d->uid) return rm_fcp_tls_cache[i].r;
  return rm_fcp_self_slowpath(d);
}

/* The caller's record if it has one already (never registers). */
RM_INLINE struct rm_fcp_reader *rm_fcp_self_cached(rm_fcp_domain_t *d) {
  if (RM_LIKELY(d == &rm_fcp_default)) {
    struct rm_fcp_reader *r = rm_fcp_tls_default;
    return r != &rm_fcp_unregistered ? r : NULL;
  }
  for (int i = 0; i < RM_FCP_TLS_CACHE; i++)
    if (rm_fcp_tls_cache[i].uid == d->uid) return rm_fcp_tls_cache[i].r;
  return NULL;
}

/* The caller's record of d if it has one, even one the cache above has
 * evicted (a thread using more than RM_FCP_TLS_CACHE domains); never claims
 * one.  For paths that must find an existing hold (unlock, the EDEADLK
 * check, upgrade) without making an idle record writers would then wait on:
 * a record that never reports costs every consensus of its domain a
 * membarrier. */
RM_API struct rm_fcp_reader *rm_fcp_self_find_slowpath(rm_fcp_domain_t *d);
RM_INLINE struct rm_fcp_reader *rm_fcp_self_find(rm_fcp_domain_t *d) {
  struct rm_fcp_reader *r = rm_fcp_self_cached(d);
  return RM_LIKELY(r != NULL) || d == &rm_fcp_default ? r : rm_fcp_self_find_slowpath(d);
}

/* A `passive` value with this bit set holds the same object as with it
 * clear: prwlock marks a record held more than once (nest > 0) this way, so
 * that its unlock fast path, which compares `passive` with the lock, needs
 * no look at `nest`.  Writers compare rm_fcp_obj(passive) with their object
 * (objects are at least 2-byte aligned).  Domains whose holds other threads
 * release (rm_fcp_release_foreign) never set it. */
#define RM_FCP_NESTED ((uintptr_t)1)
RM_INLINE const void *rm_fcp_obj(const void *passive) {
  return (const void *)((uintptr_t)passive & ~RM_FCP_NESTED);
}
RM_INLINE const void *rm_fcp_nested(const void *obj) {
  return (const void *)((uintptr_t)obj | RM_FCP_NESTED);
}

/* rm_fcp_mode bits */
#define RM_FCP_NOFENCE 0x1u       /* readers skip the fence (writers use membarrier) */
#define RM_FCP_SWITCHED 0x2u      /* rm_fcp_switch_to_fence() has begun: readers fence */
#define RM_FCP_WRITERS_FENCE 0x4u /* ... and finished: writers need no membarrier */
#define RM_FCP_MEMBARRIER 0x8u    /* membarrier is registered (set at first record claim) */
#define RM_FCP_BARRIER_LOST 0x10u /* membarrier failed after registration: fence mode for good */
extern RM_API uint32_t rm_fcp_mode;

/* Readers skip the fence only when every writer will issue a membarrier.
 * Until the first record is claimed the mode reads 0: fence (safe). */
RM_INLINE void rm_fcp_reader_fence(void) {
  if (RM_UNLIKELY(!(rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_NOFENCE))) rm_fence_store_load();
}

/* Publish "I hold obj passively" (R1).  The caller then reads its writer
 * word (R2).  In membarrier mode R1 may still sit in this core's store
 * buffer when R2 executes; a writer that set its word before R2 and later
 * finds R1 invisible has not finished: it issues a membarrier, which drains
 * our buffer (or we were switched out, which did), before it trusts
 * `passive`.  In fence mode the fence orders R1 before R2 (Dekker with the
 * writer's fence after its own store). */
RM_INLINE void rm_fcp_enter(struct rm_fcp_reader *r, const void *obj) {
  rm_atomic_store_relaxed(&r->passive, obj); /* (R1) */
  /* C11 would let the compiler sink a relaxed store below later loads (the
   * mode here, the caller's R2, even an acquire one); the argument above is
   * about the order in which the CPU executes them, so pin it. */
  rm_compiler_barrier();
  RM_DEBUG_YIELD();
  rm_fcp_reader_fence();
}

/* Report the current version: every writer whose rm_fcp_begin() we see has
 * its writer-word store visible to our later loads (acquire here, release
 * of the RMW in rm_fcp_begin).  Release store: a writer that reads `seen`
 * with acquire also sees everything this thread did before.
 *
 * Called only while the record holds nothing passively (asserted).  When `seen`
 * already holds the current version (no writer since our last report, the
 * common case) the store is skipped: the store costs more than the test on
 * machines where stores to one line limit the read pair.  Skipping loses the
 * release for what this thread did since that report, and no writer needs
 * it: a writer that counts us by `seen == v` bumped the version to at most
 * v, after setting its writer word, and our acquire load of v at that
 * earlier report made the word visible to us; every passive section of its
 * lock we began since then saw the word at R2 and never entered (sections
 * of other locks are not its concern, active ones it waits for by count).
 *
 * Writers parked on this record are woken here too, and only when the
 * store is not skipped: the `wake` test costs nothing on the common path.
 * A writer with version v parks on r->wake only after it stored wake = 1,
 * issued a membarrier and then still found r holding its object with
 * seen < v.  The hold it found began before that barrier ran on our CPU
 * (a later R1 would find the writer word and back out), so its end (U1,
 * then this report) comes after our barrier: our acquire load of the
 * version sees v or more, and `seen` is still below v (reports happen only
 * outside passive sections).  So the test above sees a difference and the
 * branch loads `wake`, which the barrier made visible.  The `wake` load is
 * plain: in fence mode, where no membarrier stands between, a writer parks
 * with a short timeout, so a wake-up lost to store-buffer reordering costs
 * at most that timeout.  (A hold that rm_fcp_release_foreign() takes away
 * is not ended here: the releaser wakes the writers itself.) */
/* The store half of a report: `seen` = v (release) and the wake-up of
 * writers parked on r (see above).  RCU also calls it from its read lock,
 * inside a section (rcu.c, rm_rcu_read_lock_report). */
RM_INLINE void rm_fcp_report_store(struct rm_fcp_reader *r, uint64_t v) {
  rm_atomic_store_release(&r->seen, v);
  if (rm_atomic_load_relaxed(&r->wake)) rm_fcp_wake_writers(r);
}

RM_INLINE void rm_fcp_report(rm_fcp_domain_t *d, struct rm_fcp_reader *r) {
  /* A report counts the record as done with every object of the version:
   * made while it holds something, it would let a writer of that object in. */
  RM_ASSERT(rm_atomic_load_relaxed(&r->passive) == NULL,
            "record %p reports while it holds %p", (void *)r,
            rm_atomic_load_relaxed(&r->passive));
  uint64_t v = rm_atomic_load_acquire(&d->version);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&r->seen) != v)) rm_fcp_report_store(r, v);
}

/* Give up the passive hold (U1, release: the critical section happens
 * before a writer that reads NULL), report, and wake parked writers (in
 * rm_fcp_report). */
RM_INLINE void rm_fcp_leave(rm_fcp_domain_t *d, struct rm_fcp_reader *r) {
  rm_atomic_store_release(&r->passive, (const void *)NULL); /* (U1) */
  /* The report's version load stays after U1 in the CPU's order (C11
   * would let it move above a release store): the argument for the `wake`
   * load in rm_fcp_report needs it. */
  rm_compiler_barrier();
  RM_DEBUG_YIELD();
  rm_fcp_report(d, r);
}

/* `nest` once no releaser is working on the record (RM_FCP_NEST_BUSY
 * clear).  Acquire: a releaser clears BUSY with a release store after its
 * CAS of `passive` and its update of `stolen`, so both are visible then. */
RM_INLINE uint32_t rm_fcp_nest_settled(const struct rm_fcp_reader *r) {
  uint32_t n = rm_atomic_load_acquire(&r->nest);
  while (RM_UNLIKELY(n & RM_FCP_NEST_BUSY)) {
    rm_cpu_relax();
    n = rm_atomic_load_acquire(&r->nest);
  }
  return n;
}

/*
 * The unlock of a passive hold for domains whose holds other threads may
 * release (rm_fcp_release_foreign): releases one hold of obj that the
 * caller's record r has, a recursive level or the hold itself (as
 * rm_fcp_leave).  false: r holds no obj, or a releaser took the hold before
 * our store of NULL counted; the caller's unlock must then release some
 * other hold, as a count would.
 *
 * Ordering.  A releaser marks `nest` BUSY, issues a membarrier, then CASes
 * `passive` obj -> NULL, bumps `stolen` and clears BUSY (release).  We read
 * `stolen` (s0) after seeing `nest` settled, so s0 counts every take that
 * came before (our current hold began after we saw such a take's NULL,
 * which comes with its BUSY mark), and we read `passive` after s0
 * (acquire on s0), so a take after s0 either shows as passive != obj or
 * bumps `stolen` past s0.  Then Dekker: we store NULL (U1), then read
 * `nest`; the releaser stores BUSY, then reads `passive` by its CAS.  Its
 * membarrier puts a full barrier between our two accesses, so we need no
 * fence while membarrier is registered (without it we fence).  Either its
 * CAS finds our NULL and fails, or our read of `nest` sees BUSY (we wait,
 * then see `stolen` moved) or what it left (`stolen` moved).
 */
RM_INLINE bool rm_fcp_unlock_own(rm_fcp_domain_t *d, struct rm_fcp_reader *r, const void *obj) {
  uint32_t n = rm_fcp_nest_settled(r);
  /* nest is 0 unless the owner recursed: drop a level.  false from
   * rm_fcp_nest_drop: a releaser took the last level (nest is 0 now,
   * settled) or the hold; both are handled below. */
  if (RM_UNLIKELY(n != 0) && rm_fcp_nest_drop(r, obj)) return true;
  uint32_t s0 = rm_atomic_load_acquire(&r->stolen);
  if (rm_atomic_load_acquire(&r->passive) != obj) return false;
  RM_DEBUG_YIELD(); /* a releaser may take the hold here */
  rm_atomic_store_release(&r->passive, (const void *)NULL); /* (U1) */
  RM_DEBUG_YIELD();
  if (RM_UNLIKELY(!(rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_MEMBARRIER)))
    rm_fence_store_load(); /* U1 before the read of nest: no membarrier to rely on */
  else
    rm_compiler_barrier(); /* the releaser's membarrier orders U1 and the read in the CPU */
  rm_fcp_nest_settled(r);
  bool mine = rm_atomic_load_relaxed(&r->stolen) == s0; /* after the acquire of nest */
  rm_fcp_report(d, r); /* wakes parked writers */
  return mine;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_FCP_H */
