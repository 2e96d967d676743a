/*
 * fcp.c - the FCP consensus core: domains, per-thread reader records, the
 * writer's consensus (readmostly/fcp.h; design and ordering in docs/fcp.md).
 *
 * Invariants:
 *  1. A record's `passive`, `seen` and `nest` are written only by the thread
 *     that owns it (in_use == 1, owner == its identity), except by the exit
 *     and fork-child handlers, which run when that thread can no longer run.
 *  2. `seen` only grows while a record is owned; a released record has
 *     seen == UINT64_MAX (it never delays a writer) and passive == NULL.
 *  3. Records are never unlinked or freed while the domain exists, so
 *     writers walk the list without a lock.
 */
#define _GNU_SOURCE
#include <readmostly/fcp.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

RM_API struct rm_fcp_domain rm_fcp_default = {.uid = 1};
RM_API __thread struct rm_fcp_reader *rm_fcp_tls_default __attribute__((tls_model("initial-exec")));
RM_API __thread struct rm_fcp_tls_entry rm_fcp_tls_cache[RM_FCP_TLS_CACHE] __attribute__((tls_model("initial-exec")));

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rm_fcp_domain *domains = &rm_fcp_default; /* under domains_lock */
static uint32_t next_uid = 2;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct rm_fcp_reader *tls_records; /* this thread's records */
static __thread uint32_t tls_cache_next;

RM_API rm_fcp_domain_t *rm_fcp_default_domain(void) { return &rm_fcp_default; }

RM_API bool rm_fcp_membarrier_mode(void) { return rm_membarrier_available(); }

/* ---- records -------------------------------------------------------------- */

/* Give a record up: its thread exits (or is gone, in a fork child).  A
 * passive hold it still has is released: the thread can never leave its
 * section, and a writer waiting for it would wait forever. */
static void record_release(struct rm_fcp_reader *r) {
  rm_atomic_store_relaxed(&r->nest, 0u);
  rm_atomic_store_release(&r->passive, (const void *)NULL);
  rm_atomic_store_release(&r->seen, UINT64_MAX);
  if (rm_atomic_load_relaxed(&r->wake)) rm_fcp_wake_writers(r);
  rm_atomic_store_relaxed(&r->owner, (uint64_t)0);
  /* Release: a thread that claims the record (acquire CAS) sees it clean. */
  rm_atomic_store_release(&r->in_use, 0u);
}

static void thread_exit(void *arg) {
  (void)arg;
  struct rm_fcp_reader *r = tls_records;
  tls_records = NULL;
  rm_fcp_tls_default = NULL;
  memset(rm_fcp_tls_cache, 0, sizeof rm_fcp_tls_cache);
  while (r) {
    struct rm_fcp_reader *n = r->tnext;
    record_release(r);
    r = n;
  }
}

static void fork_child(void);
static void key_init(void) {
  pthread_key_create(&exit_key, thread_exit);
  pthread_atfork(NULL, NULL, fork_child);
}

/* In the child only the forking thread runs.  Records of other threads that
 * hold nothing are released (else writers would wait for threads that do
 * not exist to report); holds of other threads stay held, as with glibc. */
static void fork_child(void) {
  pthread_mutex_init(&domains_lock, NULL);
  uint64_t self = (uint64_t)rm_thread_identity();
  for (struct rm_fcp_domain *d = domains; d; d = d->dnext)
    for (struct rm_fcp_reader *r = d->head; r; r = r->next) {
      if (!r->in_use || r->owner == self) continue;
      r->wake = 0;
      if (r->passive == NULL) record_release(r);
    }
}

RM_API RM_NOINLINE struct rm_fcp_reader *rm_fcp_self_slowpath(rm_fcp_domain_t *d) {
  pthread_once(&key_once, key_init);
  rm_platform_init();
  uint64_t self = (uint64_t)rm_thread_identity();
  /* Ours already (the TLS cache was full and evicted it)? */
  struct rm_fcp_reader *r;
  for (r = tls_records; r; r = r->tnext)
    if (r->domain == d) goto cache;
  /* Reuse a released record, else allocate one. */
  for (r = rm_atomic_load_acquire(&d->head); r; r = r->next) {
    uint32_t z = 0;
    if (rm_atomic_load_relaxed(&r->in_use) == 0 && rm_atomic_cas_acq_rel(&r->in_use, &z, 1u)) break;
  }
  if (!r) {
    r = (struct rm_fcp_reader *)aligned_alloc(RM_CACHE_SECTOR, sizeof *r);
    if (!r) return NULL;
    memset(r, 0, sizeof *r);
    r->in_use = 1;
    r->domain = d;
    r->seen = UINT64_MAX;
    struct rm_fcp_reader *h = rm_atomic_load_relaxed(&d->head);
    do r->next = h;
    while (!rm_atomic_cas_acq_rel(&d->head, &h, r)); /* release: fields above */
    rm_atomic_fetch_add_relaxed(&d->nrecords, 1u);
  }
  rm_atomic_store_relaxed(&r->owner, self);
  rm_atomic_store_relaxed(&r->nest, 0u);
  rm_atomic_store_relaxed(&r->passive, (const void *)NULL);
  rm_fcp_report(d, r);
  /* A writer that walked past this record while it was free counted it as
   * reported (seen == UINT64_MAX).  This fence, paired with the one after
   * the version bump in rm_fcp_begin(), makes sure such a writer's writer-
   * word store is visible to every lock attempt we make from now on. */
  rm_fence_store_load();
  r->tnext = tls_records;
  tls_records = r;
  pthread_setspecific(exit_key, (void *)1);
cache:
  if (d == &rm_fcp_default) {
    rm_fcp_tls_default = r;
  } else {
    uint32_t i = tls_cache_next++ % RM_FCP_TLS_CACHE;
    rm_fcp_tls_cache[i].r = r;
    rm_fcp_tls_cache[i].uid = d->uid;
  }
  return r;
}

/* ---- domains ------------------------------------------------------------- */

RM_API int rm_fcp_domain_create(rm_fcp_domain_t **out) {
  if (!out) return EINVAL;
  struct rm_fcp_domain *d = (struct rm_fcp_domain *)aligned_alloc(RM_CACHE_SECTOR, sizeof *d);
  if (!d) return ENOMEM;
  memset(d, 0, sizeof *d);
  pthread_mutex_lock(&domains_lock);
  d->uid = next_uid++;
  d->dnext = domains->dnext;
  domains->dnext = d; /* after the default domain, which stays first */
  pthread_mutex_unlock(&domains_lock);
  *out = d;
  return 0;
}

RM_API int rm_fcp_domain_destroy(rm_fcp_domain_t *d) {
  if (!d) return EINVAL;
  if (d == &rm_fcp_default) return EBUSY;
  uint64_t self = (uint64_t)rm_thread_identity();
  for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&d->head); r; r = r->next)
    if (rm_atomic_load_acquire(&r->in_use) &&
        (rm_atomic_load_relaxed(&r->owner) != self || rm_atomic_load_relaxed(&r->passive)))
      return EBUSY;
  /* Forget our own record of it. */
  struct rm_fcp_reader **pp = &tls_records;
  while (*pp) {
    if ((*pp)->domain == d) *pp = (*pp)->tnext;
    else pp = &(*pp)->tnext;
  }
  for (int i = 0; i < RM_FCP_TLS_CACHE; i++)
    if (rm_fcp_tls_cache[i].uid == d->uid) rm_fcp_tls_cache[i].uid = 0;
  pthread_mutex_lock(&domains_lock);
  for (struct rm_fcp_domain **dp = &domains; *dp; dp = &(*dp)->dnext)
    if (*dp == d) {
      *dp = d->dnext;
      break;
    }
  pthread_mutex_unlock(&domains_lock);
  struct rm_fcp_reader *r = d->head;
  while (r) {
    struct rm_fcp_reader *n = r->next;
    free(r);
    r = n;
  }
  free(d);
  return 0;
}

RM_API int rm_fcp_domain_leave(rm_fcp_domain_t *d) {
  if (!d) return EINVAL;
  struct rm_fcp_reader **pp = &tls_records;
  while (*pp && (*pp)->domain != d) pp = &(*pp)->tnext;
  struct rm_fcp_reader *r = *pp;
  if (!r) return 0;
  if (rm_atomic_load_relaxed(&r->passive)) return EBUSY;
  *pp = r->tnext;
  if (d == &rm_fcp_default) rm_fcp_tls_default = NULL;
  for (int i = 0; i < RM_FCP_TLS_CACHE; i++)
    if (rm_fcp_tls_cache[i].uid == d->uid) rm_fcp_tls_cache[i].uid = 0;
  record_release(r);
  return 0;
}

/* ---- the writer's side ---------------------------------------------------- */

RM_API uint64_t rm_fcp_begin(rm_fcp_domain_t *d) {
  /* seq_cst RMW: its release half orders the caller's writer-word store
   * before the new version (a reader that reports this version sees the
   * writer); it is also a full fence (W-fence) that orders that store before
   * every load of reader records below. */
  uint64_t v = rm_atomic_fetch_add_seq_cst(&d->version, (uint64_t)1) + 1;
  rm_fence_store_load();
  RM_DEBUG_YIELD();
  return v;
}

RM_API void rm_fcp_wake_writers(struct rm_fcp_reader *r) {
  rm_atomic_store_release(&r->wake, 0u);
  rm_futex_wake(&r->wake, INT32_MAX, false);
}

/* Done with record r for version v and object obj?  Acquire loads: when we
 * conclude, the reader's critical section happens before ours. */
RM_INLINE bool reported(const struct rm_fcp_reader *r, uint64_t v) {
  return rm_atomic_load_acquire(&r->seen) >= v;
}
RM_INLINE bool released(const struct rm_fcp_reader *r, uint64_t v, const void *obj) {
  return rm_atomic_load_acquire(&r->passive) != obj || reported(r, v);
}

/* Waiting for reports: up to FCP_STALE_ROUNDS recounts, FCP_STALE_PAUSES
 * cpu_relax() apart (a few microseconds in all: a busy reader reports on
 * its next unlock, tens of nanoseconds away; an idle one never will, and
 * only the membarrier settles it). */
#define FCP_STALE_ROUNDS 16u
#define FCP_STALE_PAUSES 4u
#define FCP_SPIN_POLLS 1000u /* spinning on one straggler before parking */

/* Wait until r no longer holds obj (it is known to be inside, or was when
 * the barrier ran).  Spin, then park on r->wake. */
static int wait_one(rm_fcp_domain_t *d, struct rm_fcp_reader *r, uint64_t v, const void *obj,
                    int mode, int clk, const struct timespec *abstime) {
  for (unsigned i = 0; i < FCP_SPIN_POLLS; i++) {
    if (released(r, v, obj)) return 0;
    rm_cpu_relax();
  }
  if (mode == RM_FCP_TRY) return EBUSY;
  bool mb = rm_membarrier_available();
  for (;;) {
    if (mode == RM_FCP_TIMED && rm_timespec_expired(clk, abstime)) return ETIMEDOUT;
    /* Announce ourselves, then recheck (Dekker with the reader's U1 store
     * and its plain load of `wake`): in membarrier mode the barrier makes
     * either U1 visible to the recheck or our flag visible to that load; in
     * fence mode the reader has no fence there, so we sleep at most 1 ms. */
    rm_atomic_store_seq_cst(&r->wake, 1u);
    if (mb) rm_membarrier();
    else rm_fence_store_load();
    if (released(r, v, obj)) return 0;
    rm_atomic_fetch_add_relaxed(&d->writer_parks, (uint64_t)1);
    struct timespec lim;
    const struct timespec *until = abstime;
    int c = clk;
    if (!mb || mode != RM_FCP_TIMED) {
      clock_gettime(CLOCK_MONOTONIC, &lim);
      lim.tv_nsec += mb ? 100000000L : 1000000L; /* 100 ms / 1 ms: a safety net */
      if (lim.tv_nsec >= 1000000000L) {
        lim.tv_sec++;
        lim.tv_nsec -= 1000000000L;
      }
      until = &lim;
      c = CLOCK_MONOTONIC;
    }
    rm_futex_wait(&r->wake, 1u, c, until, false);
    if (released(r, v, obj)) return 0;
  }
}

RM_API int rm_fcp_wait(rm_fcp_domain_t *d, uint64_t v, const void *obj,
                       const struct rm_fcp_reader *self, int mode, int clk,
                       const struct timespec *abstime) {
  /* Pass 1: records that have reported v (or are free) are done.  Count the
   * rest; poll them briefly, since busy readers report on every unlock. */
  struct rm_fcp_reader *head = rm_atomic_load_acquire(&d->head);
  unsigned pending = 0;
  for (struct rm_fcp_reader *r = head; r; r = r->next)
    if (r != self && !reported(r, v)) pending++;
  for (unsigned i = 0; pending && i < FCP_STALE_ROUNDS; i++) {
    for (unsigned k = 0; k < FCP_STALE_PAUSES; k++) rm_cpu_relax();
    pending = 0;
    for (struct rm_fcp_reader *r = head; r; r = r->next)
      if (r != self && !reported(r, v)) pending++;
  }
  if (!pending) {
    rm_atomic_fetch_add_relaxed(&d->consensus_fast, (uint64_t)1);
    return 0;
  }
  /* Some thread has not reported: make every thread's `passive` store
   * visible (the paper's IPI).  After this, a record whose `passive` is not
   * obj either was not inside (its next R2 follows the barrier, so it sees
   * our writer word) or has left. */
  rm_atomic_fetch_add_relaxed(&d->consensus_membarrier, (uint64_t)1);
  RM_DEBUG_YIELD();
  if (rm_membarrier_available()) rm_membarrier();
  else rm_fence_store_load();
  /* Records registered after `head` was read claimed themselves after our
   * fence in rm_fcp_begin (see rm_fcp_self_slowpath) and need no look. */
  for (struct rm_fcp_reader *r = head; r; r = r->next) {
    if (r == self || released(r, v, obj)) continue;
    int e = wait_one(d, r, v, obj, mode, clk, abstime);
    if (e) return e;
  }
  return 0;
}
