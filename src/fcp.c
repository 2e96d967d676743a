/*
 * fcp.c - the FCP consensus core: domains, per-thread reader records, the
 * writer's consensus (readmostly/fcp.h; design and ordering in docs/fcp.md).
 * Model: models/fcp.pml (x86-TSO, membarrier); rm_fcp_release_foreign,
 * rm_fcp_unlock_own and fork_child: models/fcp_foreign.pml
 * (docs/models-fcp.md).
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
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

RM_API struct rm_fcp_domain rm_fcp_default = {.uid = 1, .gate = RM_FCP_GATE_CLOSED};
/* passive: its own address, never NULL and never a lock.  Nothing writes
 * it: every path that finds it here claims a record or takes another way. */
RM_API struct rm_fcp_reader rm_fcp_unregistered = {.passive = &rm_fcp_unregistered};
RM_API __thread struct rm_fcp_reader *rm_fcp_tls_default
    __attribute__((tls_model("initial-exec"))) = &rm_fcp_unregistered;
RM_API __thread struct rm_fcp_tls_entry rm_fcp_tls_cache[RM_FCP_TLS_CACHE] __attribute__((tls_model("initial-exec")));

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rm_fcp_domain *domains = &rm_fcp_default; /* under domains_lock */
static uint32_t next_uid = 2;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct rm_fcp_reader *tls_records; /* this thread's records */
static __thread uint32_t tls_cache_next;

RM_API rm_fcp_domain_t *rm_fcp_default_domain(void) { return &rm_fcp_default; }

/* ---- membarrier mode or fence mode --------------------------------------- */

RM_API uint32_t rm_fcp_mode;
static uint32_t auto_fence_rate; /* membarriers per second; 0: never switch */
static struct rm_fcp_rate auto_rate;

/* Writers may trust a fence alone (readers all fence). */
RM_INLINE bool writers_fence_only(void) {
  return !rm_membarrier_available() ||
         (rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_WRITERS_FENCE) != 0;
}

RM_API bool rm_fcp_membarrier_mode(void) {
  return rm_membarrier_available() && !(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_SWITCHED);
}

/* Readers drop their fence once membarrier is registered (first record
 * claim).  Writers decide by RM_FCP_WRITERS_FENCE alone, which is clear
 * here, so they issue membarriers: safe whichever value a reader saw. */
static void mode_init(void) {
  if (!rm_membarrier_available()) return;
  /* rm_fcp_unlock_own() relies on rm_fcp_release_foreign()'s membarrier
   * when it sees this bit.  Its relaxed load of the bit is enough: the bit
   * is set only after registration succeeded (the check above), and
   * registration is process-wide, so every releaser will issue the
   * membarrier whatever else the reader has or has not seen yet. */
  if (!(rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_MEMBARRIER))
    rm_atomic_fetch_or_acq_rel(&rm_fcp_mode, RM_FCP_MEMBARRIER);
  uint32_t m = rm_atomic_load_relaxed(&rm_fcp_mode);
  while (!(m & (RM_FCP_NOFENCE | RM_FCP_SWITCHED)) &&
         !rm_atomic_cas_acq_rel(&rm_fcp_mode, &m, m | RM_FCP_NOFENCE)) {
  }
}

/* One way.  (1) readers start fencing; (2) one membarrier: every reader
 * that still read NOFENCE did so before its barrier, and its R1 came before
 * that load, so R1 is visible once the membarrier returns; readers whose
 * load follows their barrier see the switch and fence; (3) from then on a
 * writer's fence pairs with every reader's (Dekker) and membarriers are not
 * needed.  Release on (3): a writer that sees it (acquire) follows (2). */
static bool barrier(void);
static void barrier_by_threads(void);

RM_API void rm_fcp_switch_to_fence(void) {
  uint32_t m = rm_atomic_load_relaxed(&rm_fcp_mode);
  do {
    if (m & RM_FCP_SWITCHED) { /* someone else does it (or did) */
      /* A writer that must not go on before the switch is complete (its
       * membarrier failed) waits for it. */
      rm_backoff_t b = RM_BACKOFF_INIT;
      while (!(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_WRITERS_FENCE)) rm_backoff_wait(&b);
      return;
    }
  } while (!rm_atomic_cas_acq_rel(&rm_fcp_mode, &m, (m | RM_FCP_SWITCHED) & ~RM_FCP_NOFENCE));
  RM_DEBUG_PAUSE("fcp.switch"); /* a fork() here: the child finishes the switch */
  /* Close every gate for good before the barrier (fcp.h, "The gate"): a
   * reader that still finds its gate open loaded it before the barrier
   * reached its CPU, like a reader that still read NOFENCE.  RMW after the
   * mode's: rm_fcp_gate_open() that read NOFENCE before our CAS either
   * opened the gate before this (we close it) or fails its CAS on SHUT. */
  pthread_mutex_lock(&domains_lock);
  for (struct rm_fcp_domain *d = domains; d; d = d->dnext)
    __atomic_fetch_or(&d->gate, RM_FCP_GATE_CLOSED | RM_FCP_GATE_SHUT, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&domains_lock);
  if (rm_membarrier_available() && !barrier()) barrier_by_threads();
  rm_atomic_fetch_or_acq_rel(&rm_fcp_mode, RM_FCP_WRITERS_FENCE);
}

/* ---- when membarrier fails ------------------------------------------------
 * Registration succeeded, so readers may have skipped their fence; if the
 * system call now fails for good (EPERM from a seccomp filter installed
 * later, say), no writer may trust `passive` as it would after a barrier.
 * barrier() retries transient failures; on a lasting one it marks the mode
 * RM_FCP_BARRIER_LOST, says so once on stderr and returns false, and the
 * caller switches the process to fence mode with barrier_by_threads() in
 * place of the switch's membarrier.
 *
 * barrier_by_threads() gives, for every thread with a record, what the
 * membarrier gives: a point after the switch (RM_FCP_SWITCHED, set before
 * the call) at which the thread's earlier stores are visible and after
 * which its loads see the switch.  Per record, either
 *  - it reports a version bumped after the switch: its acquire load of the
 *    version comes after our bump (a seq_cst RMW, after the switch), so its
 *    later loads see the switch and it fences from its next section, and
 *    the report is made outside any passive section, so no section that
 *    skipped the fence is still open; or
 *  - its thread has been switched out since the switch began: the kernel
 *    shows it not running, or its context-switch count moved.  A context
 *    switch is a full barrier, which is the very argument that lets
 *    membarrier skip threads that are not running; or
 *  - it is free or offline (it holds nothing and will fence when it comes
 *    back).
 * The counts come from /proc/self/task/<tid>/status, read with raw system
 * calls (open and read are cancellation points).  Without /proc, only the
 * first and last criteria remain and the switch waits for reports. */

static bool barrier(void) {
  for (unsigned tries = 0;; tries++) {
    int e = rm_membarrier(); /* retries EINTR */
    if (RM_LIKELY(e == 0)) return true;
    if ((e == ENOMEM || e == EAGAIN) && tries < 1000) {
      rm_sleep_ns(100000);
      continue;
    }
    if (!(rm_atomic_fetch_or_acq_rel(&rm_fcp_mode, RM_FCP_BARRIER_LOST) & RM_FCP_BARRIER_LOST)) {
      char msg[200];
      int n = snprintf(msg, sizeof msg,
                       "readmostly: membarrier() failed after registration (%s); switching "
                       "to fence mode for good (READMOSTLY_NO_MEMBARRIER=1 avoids this)\n",
                       strerror(e));
      if (n > 0) (void)!syscall(SYS_write, 2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    }
    return false;
  }
}

/* The thread's state and context-switch count, from /proc.  SCHED_OK;
 * SCHED_GONE: the thread no longer exists (it passed its last barrier);
 * SCHED_UNKNOWN: /proc cannot tell. */
enum { SCHED_OK, SCHED_GONE, SCHED_UNKNOWN };
static int thread_sched(uint32_t tid, char *state, uint64_t *switches) {
  char path[64], buf[2048];
  if (!tid) return SCHED_UNKNOWN;
  snprintf(path, sizeof path, "/proc/self/task/%u/status", tid);
  long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    uint32_t me = (uint32_t)gettid();
    return errno == ENOENT && me != tid && thread_sched(me, state, switches) == SCHED_OK
               ? SCHED_GONE /* /proc works, the thread is not there */
               : SCHED_UNKNOWN;
  }
  long n = syscall(SYS_read, (int)fd, buf, sizeof buf - 1);
  syscall(SYS_close, (int)fd);
  if (n <= 0) return SCHED_UNKNOWN;
  buf[n] = '\0';
  const char *st = strstr(buf, "\nState:\t");
  const char *vol = strstr(buf, "\nvoluntary_ctxt_switches:");
  const char *inv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
  if (!st || !vol || !inv) return SCHED_UNKNOWN;
  *state = st[8];
  *switches = strtoull(strchr(vol, ':') + 1, NULL, 10) + strtoull(strchr(inv, ':') + 1, NULL, 10);
  return st[8] == 'Z' || st[8] == 'X' ? SCHED_GONE : SCHED_OK;
}

/* Has the owner of r passed a full barrier since *sw0 was read (sched:
 * what thread_sched said then)?  True also when it exited (an orphan's
 * owner is 0) or the record is free. */
static bool passed_barrier(const struct rm_fcp_reader *r, uint32_t tid, int sched, uint64_t sw0) {
  if (!rm_atomic_load_acquire(&r->in_use) || rm_atomic_load_acquire(&r->owner) == 0) return true;
  if (sched == SCHED_GONE) return true;
  if (sched != SCHED_OK) return false;
  char st;
  uint64_t sw;
  int now = thread_sched(tid, &st, &sw);
  return now == SCHED_GONE || (now == SCHED_OK && (st != 'R' || sw != sw0));
}

static void barrier_by_threads(void) {
  uint64_t self = (uint64_t)rm_thread_identity();
  pthread_mutex_lock(&domains_lock);
  for (struct rm_fcp_domain *d = domains; d; d = d->dnext) {
    /* A version after the switch (seq_cst: after the mode RMW). */
    uint64_t vs = rm_atomic_fetch_add_seq_cst(&d->version, (uint64_t)1) + 1;
    for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&d->head); r; r = r->next) {
      if (rm_atomic_load_relaxed(&r->owner) == self) continue; /* program order */
      uint32_t tid = rm_atomic_load_relaxed(&r->tid);
      char st;
      uint64_t sw0 = 0;
      int sched = thread_sched(tid, &st, &sw0);
      rm_backoff_t b = RM_BACKOFF_INIT;
      while (rm_atomic_load_acquire(&r->seen) < vs && !passed_barrier(r, tid, sched, sw0))
        rm_backoff_wait(&b);
    }
  }
  pthread_mutex_unlock(&domains_lock);
  /* What the threads' barriers published, we read from here on. */
  rm_fence_store_load();
}

RM_API void rm_fcp_auto_fence(unsigned per_sec) {
  rm_atomic_store_relaxed(&auto_fence_rate, (uint32_t)per_sec);
}

RM_API bool rm_fcp_rate_note(struct rm_fcp_rate *w, unsigned per_sec, uint64_t min_window_ns) {
  uint64_t n = rm_atomic_fetch_add_relaxed(&w->count, (uint64_t)1) + 1;
  if (n % 64 != 0) return false;
  uint64_t now = rm_now_ns(), w0 = rm_atomic_load_relaxed(&w->window_ns);
  if (w0 != 0 && now >= w0) {
    uint64_t span = now - w0;
    if (span < min_window_ns) return false; /* the window goes on */
    uint64_t events = n - rm_atomic_load_relaxed(&w->window_count);
    if ((double)events * 1e9 > (double)per_sec * (double)span) return true;
  }
  rm_atomic_store_relaxed(&w->window_ns, now);
  rm_atomic_store_relaxed(&w->window_count, n);
  return false;
}

RM_API void rm_fcp_rate_reset(struct rm_fcp_rate *w) {
  rm_atomic_store_relaxed(&w->count, (uint64_t)0);
  rm_atomic_store_relaxed(&w->window_ns, (uint64_t)0);
  rm_atomic_store_relaxed(&w->window_count, (uint64_t)0);
}

/* Called for every membarrier a consensus issues: every 64 of them that
 * took less than 64/rate seconds switch the process (a window of 64, the
 * shortest the watch has). */
static void auto_fence_note(void) {
  uint32_t rate = rm_atomic_load_relaxed(&auto_fence_rate);
  if (rate && rm_fcp_rate_note(&auto_rate, rate, 0)) rm_fcp_switch_to_fence();
}

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

/* Keep a record's passive hold after its thread is gone: owner 0 marks an
 * orphan, which only rm_fcp_release_foreign() frees. */
static void record_orphan(struct rm_fcp_reader *r) {
  /* seq_cst store, then seq_cst load: Dekker with rm_fcp_release_foreign's
   * seq_cst CAS of `passive` and its load of `owner`.  If another thread
   * took the hold meanwhile, at least one of us sees the other's store;
   * `freeing` picks the one that frees the record. */
  rm_atomic_store_seq_cst(&r->owner, (uint64_t)0);
  if (rm_atomic_load_seq_cst(&r->passive) == NULL) {
    uint32_t z = 0;
    if (rm_atomic_cas_acq_rel(&r->freeing, &z, 1u)) record_release(r);
  }
}

static void thread_exit(void *arg) {
  (void)arg;
  struct rm_fcp_reader *r = tls_records;
  tls_records = NULL;
  rm_fcp_tls_default = &rm_fcp_unregistered;
  memset(rm_fcp_tls_cache, 0, sizeof rm_fcp_tls_cache);
  while (r) {
    struct rm_fcp_reader *n = r->tnext;
    if (r->domain->exit_hook) r->domain->exit_hook(r);
    if (rm_atomic_load_relaxed(&r->domain->keep_exit_holds) &&
        rm_atomic_load_relaxed(&r->passive) != NULL)
      record_orphan(r);
    else
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
 * not exist to report); holds of other threads stay held, as with glibc.
 *
 * RM_FCP_NEST_BUSY is cleared in every record, ours included: a releaser
 * (rm_fcp_release_foreign, another thread) that was between its BUSY mark
 * and its clear at the fork does not exist in the child, and the mark
 * would make our next unlock or recursive read of that record, and every
 * later release of an orphan, spin for ever.  Clearing is safe: no other
 * thread runs, and a releaser sets BUSY only over nest == 0 (a recursive
 * level is taken without it), so 0 is the value it would have restored.
 * Whatever it did in between stands: before its CAS of `passive` the hold
 * is still there (the release did not happen: its caller never returns in
 * the child); after it, `passive` is NULL and the hold is gone (the owner's
 * unlock then finds it gone and releases another hold, as a count would),
 * and a `stolen` it had not bumped yet only matters to an owner that
 * watched BUSY, which nobody does in the child.  Our own records also get
 * the child's thread id.  (Model: models/fcp_foreign.pml, FORK.) */
static void fork_child(void) {
  pthread_mutex_init(&domains_lock, NULL);
  /* A switch to fence mode that another thread had begun (SWITCHED) but not
   * finished (WRITERS_FENCE): that thread is gone, and a later switch would
   * wait for it for ever.  Finish it here.  Only this thread runs, so no
   * reader can have skipped a fence that a barrier must now cover: close
   * the gates for good (the switcher may not have got there) and let
   * writers trust their fence. */
  uint32_t m = rm_atomic_load_relaxed(&rm_fcp_mode);
  if ((m & RM_FCP_SWITCHED) && !(m & RM_FCP_WRITERS_FENCE)) {
    for (struct rm_fcp_domain *d = domains; d; d = d->dnext)
      __atomic_fetch_or(&d->gate, RM_FCP_GATE_CLOSED | RM_FCP_GATE_SHUT, __ATOMIC_SEQ_CST);
    rm_atomic_fetch_or_acq_rel(&rm_fcp_mode, RM_FCP_WRITERS_FENCE);
  }
  uint64_t self = (uint64_t)rm_thread_identity();
  for (struct rm_fcp_domain *d = domains; d; d = d->dnext)
    for (struct rm_fcp_reader *r = d->head; r; r = r->next) {
      r->nest &= ~RM_FCP_NEST_BUSY;
      if (!r->in_use) continue;
      if (r->owner == self) {
        r->tid = (uint32_t)gettid();
        continue;
      }
      r->wake = 0;
      if (r->passive == NULL || d->fork_release_holds) record_release(r);
      else record_orphan(r);
    }
}

RM_API struct rm_fcp_reader *rm_fcp_self_find_slowpath(rm_fcp_domain_t *d) {
  for (struct rm_fcp_reader *r = tls_records; r; r = r->tnext)
    if (r->domain == d) return r;
  return NULL;
}

RM_API RM_NOINLINE struct rm_fcp_reader *rm_fcp_self_slowpath(rm_fcp_domain_t *d) {
  pthread_once(&key_once, key_init);
  rm_platform_init();
  mode_init();
  uint64_t self = (uint64_t)rm_thread_identity();
  /* Ours already (the TLS cache was full and evicted it)? */
  struct rm_fcp_reader *r = rm_fcp_self_find_slowpath(d);
  if (r) goto cache;
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
  rm_atomic_store_relaxed(&r->tid, (uint32_t)gettid());
  rm_atomic_store_relaxed(&r->freeing, 0u);
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
  if (d->no_tls_cache) return r;
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
  d->gate = RM_FCP_GATE_CLOSED;
  pthread_mutex_lock(&domains_lock);
  d->uid = next_uid++;
  d->dnext = domains->dnext;
  domains->dnext = d; /* after the default domain, which stays first */
  pthread_mutex_unlock(&domains_lock);
  *out = d;
  return 0;
}

RM_API void rm_fcp_domain_init_static(struct rm_fcp_domain *d) {
  memset(d, 0, sizeof *d);
  d->gate = RM_FCP_GATE_CLOSED;
  pthread_mutex_lock(&domains_lock);
  d->uid = next_uid++;
  d->dnext = domains->dnext;
  domains->dnext = d;
  pthread_mutex_unlock(&domains_lock);
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
  if (d == &rm_fcp_default) rm_fcp_tls_default = &rm_fcp_unregistered;
  for (int i = 0; i < RM_FCP_TLS_CACHE; i++)
    if (rm_fcp_tls_cache[i].uid == d->uid) rm_fcp_tls_cache[i].uid = 0;
  record_release(r);
  return 0;
}

/* ---- holds released by another thread ------------------------------------- */

RM_API void rm_fcp_domain_keep_exit_holds(rm_fcp_domain_t *d, bool keep) {
  rm_atomic_store_relaxed(&d->keep_exit_holds, keep ? 1u : 0u);
}

RM_API bool rm_fcp_held(rm_fcp_domain_t *d, const void *obj) {
  for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&d->head); r; r = r->next)
    if (rm_atomic_load_acquire(&r->in_use) &&
        rm_fcp_obj(rm_atomic_load_acquire(&r->passive)) == obj)
      return true;
  return false;
}

/* The owner counts a recursive hold.  A releaser that marked `nest` BUSY is
 * taking the hold away: wait for it (a few instructions), then report that
 * the hold is gone if it is.  Acquire on `nest`: the releaser stores
 * passive = NULL before it clears BUSY (release), so we then see NULL. */
RM_API bool rm_fcp_nest_add(struct rm_fcp_reader *r, const void *obj) {
  for (;;) {
    uint32_t n = rm_fcp_nest_settled(r);
    if (rm_atomic_load_relaxed(&r->passive) != obj) return false;
    if (n == RM_FCP_NEST_BUSY - 1u) return false; /* full: the caller takes it otherwise */
    if (rm_atomic_cas_acq_rel(&r->nest, &n, n + 1u)) return true;
  }
}

/* The owner drops one recursive hold: true if it did; false when nest is 0
 * (the caller leaves) or the hold is gone (passive is no longer obj). */
RM_API bool rm_fcp_nest_drop(struct rm_fcp_reader *r, const void *obj) {
  for (;;) {
    uint32_t n = rm_fcp_nest_settled(r);
    if (n == 0 || rm_atomic_load_relaxed(&r->passive) != obj) return false;
    /* Release: our section happens before whoever sees the lower count. */
    if (rm_atomic_cas_acq_rel(&r->nest, &n, n - 1u)) return true;
  }
}

/* Wait until the owner of r has passed a full barrier since the call (or
 * is gone).  See barrier_by_threads. */
static void thread_barrier(const struct rm_fcp_reader *r) {
  uint32_t tid = rm_atomic_load_relaxed(&r->tid);
  char st;
  uint64_t sw0 = 0;
  int sched = thread_sched(tid, &st, &sw0);
  if (sched == SCHED_UNKNOWN && rm_atomic_load_acquire(&r->owner) != 0) {
    /* Neither membarrier nor /proc: the one place that falls back on the
     * bounded staleness the paper's fast path assumes (a store reaches
     * other CPUs within far less than a millisecond on every machine). */
    rm_sleep_ns(1000000);
  } else {
    rm_backoff_t b = RM_BACKOFF_INIT;
    while (!passed_barrier(r, tid, sched, sw0)) rm_backoff_wait(&b);
  }
  rm_fence_store_load();
}

/* Release one passive hold of obj that another thread's record (or an
 * orphan) has.  A recursive hold loses one level; a single hold is taken
 * in three steps: nest 0 -> BUSY (so the owner can neither count a new
 * level nor drop one meanwhile), passive obj -> NULL, nest BUSY -> 0. */
RM_API bool rm_fcp_release_foreign(rm_fcp_domain_t *d, const void *obj,
                                   const struct rm_fcp_reader *self) {
  for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&d->head); r; r = r->next) {
    if (r == self || !rm_atomic_load_acquire(&r->in_use)) continue;
    for (;;) {
      if (rm_atomic_load_acquire(&r->passive) != obj) break;
      uint32_t n = rm_atomic_load_acquire(&r->nest);
      if (n & RM_FCP_NEST_BUSY) { /* another releaser: see what it leaves */
        rm_cpu_relax();
        continue;
      }
      if (n > 0) {
        if (rm_atomic_cas_acq_rel(&r->nest, &n, n - 1u)) return true;
        continue;
      }
      if (!rm_atomic_cas_acq_rel(&r->nest, &n, RM_FCP_NEST_BUSY)) continue;
      RM_DEBUG_PAUSE("fcp.release_foreign.busy");
      /* (models/fcp_foreign.pml.)
       * Dekker with the owner's rm_fcp_unlock_own(): BUSY above, then our
       * read of `passive` (the CAS below); the owner stores NULL, then reads
       * `nest`, with no fence of its own while membarrier is registered:
       * the membarrier gives it one.  Then either our CAS fails on its NULL
       * or it sees BUSY and, after we clear it, `stolen`. */
      if (!rm_membarrier_available() || !barrier()) {
        rm_fence_store_load();
        /* No barrier ran: the owner may be in rm_fcp_unlock_own with no
         * fence, relying on one.  Wait until its thread has passed a
         * barrier of its own (see barrier_by_threads), then the Dekker
         * argument above holds with that barrier in place of ours. */
        if (rm_membarrier_available()) thread_barrier(r);
      }
      const void *p = obj;
      /* Release, as the owner's U1: whatever the holder did is ordered
       * before a writer that sees NULL (the owner handed it to us through
       * the program's own synchronisation). */
      bool took = __atomic_compare_exchange_n(&r->passive, &p, (const void *)NULL, false,
                                              __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
      /* Only releasers write `stolen`, one at a time (BUSY); the owner reads
       * it after seeing BUSY cleared (release below, acquire there). */
      if (took) rm_atomic_store_relaxed(&r->stolen, rm_atomic_load_relaxed(&r->stolen) + 1u);
      rm_atomic_store_release(&r->nest, 0u);
      if (!took) break; /* the owner left first */
      if (rm_atomic_load_seq_cst(&r->owner) == 0) { /* an orphan (see record_orphan) */
        uint32_t z = 0;
        if (rm_atomic_cas_acq_rel(&r->freeing, &z, 1u)) record_release(r);
      } else if (rm_atomic_load_relaxed(&r->wake)) {
        rm_fcp_wake_writers(r);
      }
      return true;
    }
  }
  return false;
}

/* ---- the writer's side ---------------------------------------------------- */

RM_API uint64_t rm_fcp_begin(rm_fcp_domain_t *d) {
  /* seq_cst RMW: its release half orders the caller's writer-word store
   * before the new version (a reader that reports this version sees the
   * writer); it is also a full fence (W-fence) that orders that store before
   * every load of reader records below (rm_fence_after_rmw: no second
   * fence where the RMW is a locked instruction). */
  uint64_t v = rm_atomic_fetch_add_seq_cst(&d->version, (uint64_t)1) + 1;
  rm_fence_after_rmw();
  RM_DEBUG_YIELD();
  return v;
}

/* Move the gate up to the current version, while the process is in
 * membarrier mode (fcp.h, "The gate").  Acquire load of the mode: NOFENCE
 * is set only after membarrier registration succeeded.  The CAS never
 * clears SHUT (it expects a value without it) and never moves the gate
 * back (a racing opener with a newer version wins or we retry). */
RM_API void rm_fcp_gate_open(rm_fcp_domain_t *d) {
  if (!(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_NOFENCE)) return;
  uint64_t v = rm_atomic_load_acquire(&d->version);
  uint64_t g = rm_atomic_load_relaxed(&d->gate);
  while (!(g & RM_FCP_GATE_SHUT) && ((g & RM_FCP_GATE_CLOSED) || g < v))
    if (rm_atomic_cas_acq_rel(&d->gate, &g, v)) break;
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
  return rm_fcp_obj(rm_atomic_load_acquire(&r->passive)) != obj || reported(r, v);
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
  bool mb = !writers_fence_only();
  for (;;) {
    if (mode == RM_FCP_TIMED && rm_timespec_expired(clk, abstime)) return ETIMEDOUT;
    /* Announce ourselves, then recheck (Dekker with the reader's U1 store
     * and its plain load of `wake`): in membarrier mode the barrier makes
     * either U1 visible to the recheck or our flag visible to that load; in
     * fence mode the reader has no fence there, so we sleep at most 1 ms. */
    rm_atomic_store_seq_cst(&r->wake, 1u);
    if (!mb || !barrier()) rm_fence_store_load(); /* fence mode, or the barrier failed: */
    if (!mb || (rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_BARRIER_LOST))
      mb = false; /* ... a short sleep is the safety net, as in fence mode */
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
  if (writers_fence_only()) {
    /* Fence mode: every reader fences between R1 and R2, and our fence in
     * rm_fcp_begin() is the other half; `passive` is the truth already. */
    rm_atomic_fetch_add_relaxed(&d->consensus_fenced, (uint64_t)1);
    goto scan;
  }
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
  RM_DEBUG_YIELD();
  rm_atomic_fetch_add_relaxed(&d->consensus_membarrier, (uint64_t)1);
  if (RM_UNLIKELY(!barrier())) {
    /* No barrier ran.  Switch to fence mode for good (it settles every
     * record without one); then, as in fence mode, `passive` is the
     * truth: a reader that began its section before the switch completed
     * has its R1 visible now, one that begins after fences. */
    rm_fcp_switch_to_fence();
    goto scan;
  }
  auto_fence_note();
scan:
  /* Records registered after `head` was read claimed themselves after our
   * fence in rm_fcp_begin (see rm_fcp_self_slowpath) and need no look. */
  for (struct rm_fcp_reader *r = head; r; r = r->next) {
    if (r == self || released(r, v, obj)) continue;
    int e = wait_one(d, r, v, obj, mode, clk, abstime);
    if (e) return e;
  }
  return 0;
}
