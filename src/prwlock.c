/*
 * prwlock.c - slow paths of the passive reader-writer lock
 * (readmostly/prwlock.h; design and ordering in docs/fcp.md).
 * Model: the passive reader's R1/R2 and back-out against the writer word
 * are in models/fcp.pml; the writer word (LOCKED, HANDOFF, waiters),
 * passing, downgrade, upgrade, the active path and the futex parking
 * (rmask/rseq, awake) in models/prwlock.pml (docs/models-fcp.md).
 *
 * Invariants:
 *  1. LOCKED is set from the moment a writer takes the word until it
 *     releases it; with HANDOFF set it belongs to whichever waiting writer
 *     clears HANDOFF.  Readers enter only while LOCKED is clear.
 *  2. A writer that took the word from the unlocked state (not by handoff)
 *     owns nothing until its consensus and the active count say no reader is
 *     inside; if it gives up (try, timeout) it frees the word without passing
 *     it, since a pass would skip a consensus that did not finish.
 *  3. rmask bit g set => readers may be parked on rseq[g]; the unlocker that
 *     clears LOCKED clears rmask and wakes those groups.
 */
#define _GNU_SOURCE
#include <readmostly/prwlock.h>

#include <limits.h>
#include <string.h>

#define PRW_SPINS 2000u

RM_API int rm_prwlock_init(rm_prwlock_t *l) { return rm_prwlock_init_domain(l, NULL, 0); }

RM_API int rm_prwlock_init_domain(rm_prwlock_t *l, rm_fcp_domain_t *d, unsigned flags) {
  if (!l || (flags & ~RM_PRWLOCK_BROADCAST_WAKE)) return EINVAL;
  memset(l, 0, sizeof *l);
  l->domain = d == &rm_fcp_default ? NULL : d;
  /* Readers of other domains leave the inline path at R2 (prwlock.h). */
  l->wstate = l->domain ? RM_PRWLOCK_DOMAIN : 0u;
  l->flags = flags;
  return 0;
}

RM_API int rm_prwlock_destroy(rm_prwlock_t *l) {
  if (!l) return EINVAL;
  if (rm_atomic_load_acquire(&l->wstate) & RM_PRWLOCK_LOCKED) return EBUSY;
  if (rm_atomic_load_acquire(&l->active)) return EBUSY;
  rm_fcp_domain_t *d = rm_prwlock_domain(l);
  for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&d->head); r; r = r->next)
    if (rm_fcp_obj(rm_atomic_load_acquire(&r->passive)) == (const void *)l) return EBUSY;
  return 0;
}

/* ---- waiting for the writer word ------------------------------------------ */

/* Wake readers parked behind the writer that just cleared LOCKED.  The xchg
 * is seq_cst, after the seq_cst RMW that cleared LOCKED: a reader that set
 * its group bit after our xchg reads the word after our clear (both RMWs
 * and its load are in the single total order), so it does not sleep. */
static void wake_readers(rm_prwlock_t *l) {
  /* seq_cst, not relaxed: on arm64 a relaxed load could be satisfied before
   * the store half of our clearing RMW, and miss a reader's bit. */
  if (!rm_atomic_load_seq_cst(&l->rmask)) return;
  uint32_t m = rm_atomic_xchg_seq_cst(&l->rmask, 0u);
  bool bcast = (l->flags & RM_PRWLOCK_BROADCAST_WAKE) != 0;
  for (unsigned g = 0; m; g++, m >>= 1) {
    if (!(m & 1u)) continue;
    rm_atomic_fetch_add_release(&l->rseq[g], 1u);
    /* Parallel: one reader per group; it wakes the rest of its group. */
    rm_futex_wake(&l->rseq[g], bcast ? INT32_MAX : 1, false);
  }
}

/* Wait until LOCKED is clear.  0, EBUSY (try), ETIMEDOUT.
 * r: the caller's record when it holds nothing passively, else NULL.  Such a
 * record reports on every spin, and is "offline" while parked.
 *
 * Reporting: a writer that bumped the version after our last report would
 * otherwise need a membarrier to learn that we are outside, and the writer
 * we wait for sets its word before it bumps the version, so the report on
 * our way in often came too early for it.  The version load hits the cache
 * until a writer bumps it, so reporting on every spin costs nothing.
 *
 * Offline: seen = UINT64_MAX, so no writer waits for the record or issues a
 * membarrier for it.  Coming back online costs a report and a fence (the
 * paper's domain online), which pairs with the fence in rm_fcp_begin: a
 * writer that skipped us as offline has its writer word visible to our next
 * R2. */
static int wait_writer(rm_prwlock_t *l, struct rm_fcp_reader *r, int mode, int clk,
                       const struct timespec *abstime) {
  rm_fcp_domain_t *d = rm_prwlock_domain(l);
  for (unsigned i = 0; i < PRW_SPINS; i++) {
    if (!(rm_atomic_load_acquire(&l->wstate) & RM_PRWLOCK_LOCKED)) return 0;
    if (mode == RM_FCP_TRY) return EBUSY;
    if (r) rm_fcp_report(d, r); /* stores only if a writer came since */
    rm_cpu_relax();
  }
  bool bcast = (l->flags & RM_PRWLOCK_BROADCAST_WAKE) != 0;
  unsigned g = bcast ? 0u : rm_current_cpu() % RM_PRWLOCK_WAKE_GROUPS;
  int e = 0;
  if (r) rm_atomic_store_release(&r->seen, UINT64_MAX); /* offline */
  for (;;) {
    uint32_t seq = rm_atomic_load_acquire(&l->rseq[g]);
    /* seq_cst RMW then seq_cst load: Dekker with wake_readers(). */
    __atomic_fetch_or(&l->rmask, 1u << g, __ATOMIC_SEQ_CST);
    RM_DEBUG_YIELD();
    if (!(rm_atomic_load_seq_cst(&l->wstate) & RM_PRWLOCK_LOCKED)) break;
    e = rm_futex_wait(&l->rseq[g], seq, clk, mode == RM_FCP_TIMED ? abstime : NULL, false);
    if (!bcast && e == 0) rm_futex_wake(&l->rseq[g], INT32_MAX, false); /* my group */
    if (!(rm_atomic_load_acquire(&l->wstate) & RM_PRWLOCK_LOCKED)) {
      e = 0;
      break;
    }
    if (e == ETIMEDOUT || e == EINVAL) break;
    e = 0;
  }
  if (r) { /* online again */
    rm_fcp_report(d, r);
    rm_fence_store_load();
  }
  return e;
}

/* ---- readers ---------------------------------------------------------------- */

static int active_lock(rm_prwlock_t *l, int mode, int clk, const struct timespec *abstime) {
  /* Our record may wait "offline" only if it holds nothing passively. */
  struct rm_fcp_reader *r = rm_fcp_self_find(rm_prwlock_domain(l));
  if (r && rm_atomic_load_relaxed(&r->passive) != NULL) r = NULL;
  for (;;) {
    /* seq_cst RMW, then seq_cst load of the word: Dekker with the writer's
     * seq_cst CAS of the word and its seq_cst loads of `active`. */
    uint32_t old = rm_atomic_fetch_add_seq_cst(&l->active, 1u);
    if (RM_UNLIKELY(old == UINT32_MAX)) {
      rm_atomic_fetch_sub_release(&l->active, 1u);
      return EAGAIN;
    }
    RM_DEBUG_YIELD();
    if (!(rm_atomic_load_seq_cst(&l->wstate) & RM_PRWLOCK_LOCKED)) return 0;
    rm_prwlock_active_unlock(l);
    int e = wait_writer(l, r, mode, clk, abstime);
    if (e) return e;
  }
}

RM_API int rm_prwlock_read_lock_active(rm_prwlock_t *l) {
  return active_lock(l, RM_FCP_WAIT, 0, NULL);
}

RM_API int rm_prwlock_active_unlock(rm_prwlock_t *l) {
  uint32_t a = rm_atomic_load_relaxed(&l->active);
  do {
    if (RM_UNLIKELY(a == 0)) {
      RM_ASSERT(0, "prwlock %p: read unlock without a read hold", (void *)l);
      return EPERM;
    }
  } while (!__atomic_compare_exchange_n(&l->active, &a, a - 1, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED));
  /* seq_cst: Dekker with a writer that sets `awake` then rereads `active`.
   * We do not clear `awake` (see wait_active): while a writer waits, every
   * active unlock wakes it to recount. */
  if (rm_atomic_load_seq_cst(&l->awake)) rm_futex_wake(&l->active, INT32_MAX, false);
  return 0;
}

RM_API int rm_prwlock_read_unlock_slowpath(rm_prwlock_t *l) {
  rm_fcp_domain_t *d = l->domain;
  struct rm_fcp_reader *r;
  if (d == NULL) {
    d = &rm_fcp_default;
    r = rm_fcp_tls_default; /* rm_fcp_unregistered holds nothing */
  } else {
    r = rm_fcp_self_find(d); /* even if evicted from the cache; claims none */
  }
  if (r) {
    const void *p = rm_atomic_load_relaxed(&r->passive);
    if (p == rm_fcp_nested(l)) {
      /* A recursive level: the last one clears the mark.  Relaxed: a writer
       * reads either value as "holds l", and only the owner writes them. */
      if (--r->nest == 0) rm_atomic_store_relaxed(&r->passive, (const void *)l);
      return 0;
    }
    if (p == (const void *)l) { /* the hold in another domain's record */
      rm_fcp_leave(d, r);
      return 0;
    }
  }
  return rm_prwlock_active_unlock(l);
}

/* r: the caller's default-domain record (or rm_fcp_unregistered);
 * published: the fast path stored l in it and R2 found LOCKED or DOMAIN. */
RM_API int rm_prwlock_read_slowpath(rm_prwlock_t *l, struct rm_fcp_reader *r, int published,
                                    int mode, int clk, const struct timespec *abstime) {
  rm_fcp_domain_t *d = &rm_fcp_default;
  if (RM_UNLIKELY(l->domain != NULL)) {
    /* A lock of another domain: withdraw from the default record, use
     * ours of l's domain (claimed now if need be; NULL without memory). */
    if (published) rm_fcp_leave(d, r);
    d = l->domain;
    r = rm_fcp_self(d);
    published = 0;
  } else if (RM_UNLIKELY(r == &rm_fcp_unregistered)) {
    /* The thread's first read lock of the domain: claim a record. */
    r = rm_fcp_self_slowpath(d);
  }
  if (!published) {
    if (r == NULL) return active_lock(l, mode, clk, abstime);
    const void *p = rm_atomic_load_relaxed(&r->passive);
    if (rm_fcp_obj(p) == (const void *)l) {
      /* Recursive: our passive hold keeps every writer out already.  The
       * mark sends our next unlock to the slow path, which counts down.
       * Relaxed: l and its marked form mean the same to writers. */
      if (RM_UNLIKELY(r->nest == UINT32_MAX)) return EAGAIN;
      r->nest++;
      rm_atomic_store_relaxed(&r->passive, rm_fcp_nested(l));
      return 0;
    }
    /* Our record holds another lock of the domain: be active. */
    if (p != NULL) return active_lock(l, mode, clk, abstime);
    rm_fcp_enter(r, l);
    if (!(rm_atomic_load_acquire(&l->wstate) & RM_PRWLOCK_LOCKED)) return 0; /* (R2) */
  }
  for (;;) {
    /* A writer holds or is taking the word: withdraw and report (the writer
     * may be waiting for exactly that), wait, retry. */
    rm_fcp_leave(d, r);
    int e = wait_writer(l, r, mode, clk, abstime);
    if (e) return e;
    rm_fcp_enter(r, l);
    if (!(rm_atomic_load_acquire(&l->wstate) & RM_PRWLOCK_LOCKED)) return 0; /* (R2) */
  }
}

/* ---- writers ---------------------------------------------------------------- */

/* Free the word without passing it (invariant 2), waking every waiter. */
static void release_unpassed(rm_prwlock_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  while (!rm_atomic_cas_seq_cst(&l->wstate, &s, s & ~(RM_PRWLOCK_LOCKED | RM_PRWLOCK_HANDOFF))) {
  }
  if (s >= RM_PRWLOCK_WAITER) {
    rm_atomic_fetch_add_release(&l->wseq, 1u);
    rm_futex_wake(&l->wseq, INT32_MAX, false);
  }
  wake_readers(l);
}

/* Wait for active readers to leave: `target` of them may stay (upgrade). */
static int wait_active(rm_prwlock_t *l, uint32_t target, int mode, int clk,
                       const struct timespec *abstime) {
  for (unsigned i = 0; i < PRW_SPINS; i++) {
    if (rm_atomic_load_seq_cst(&l->active) == target) return 0;
    if (mode == RM_FCP_TRY) return EBUSY;
    rm_cpu_relax();
  }
  /* `awake` is set and cleared by the waiting writer only (one writer owns
   * the consensus of a lock at a time); unlockers just read it.  If an
   * unlocker cleared it, a reader that came and went (increment, see the
   * writer, decrement) could clear it between our store and our sleep, and
   * the last real reader would then leave without waking us: the futex
   * value check does not catch that, the count is back where we read it. */
  int e = 0;
  rm_atomic_store_seq_cst(&l->awake, 1u);
  for (;;) {
    uint32_t a = rm_atomic_load_seq_cst(&l->active);
    if (a == target) break;
    e = rm_futex_wait(&l->active, a, clk, mode == RM_FCP_TIMED ? abstime : NULL, false);
    if (rm_atomic_load_seq_cst(&l->active) == target) {
      e = 0;
      break;
    }
    if (e == ETIMEDOUT || e == EINVAL) break;
    e = 0;
  }
  rm_atomic_store_relaxed(&l->awake, 0u);
  return e;
}

static int consensus(rm_prwlock_t *l, const struct rm_fcp_reader *self, uint32_t active_target,
                     int mode, int clk, const struct timespec *abstime) {
  rm_fcp_domain_t *d = rm_prwlock_domain(l);
  uint64_t v = rm_fcp_begin(d);
  int e = rm_fcp_wait(d, v, l, self, mode, clk, abstime);
  if (!e) e = wait_active(l, active_target, mode, clk, abstime);
  return e;
}

RM_API int rm_prwlock_write_consensus(rm_prwlock_t *l, int mode, int clk,
                                      const struct timespec *abstime) {
  /* Our own record is skipped: we cannot be inside a passive section of l
   * (that would be a deadlock, or an upgrade), and its `seen` is usually one
   * version old, which would cost a membarrier for nothing. */
  struct rm_fcp_reader *self = rm_fcp_self_find(rm_prwlock_domain(l));
  int e = self && rm_fcp_obj(rm_atomic_load_relaxed(&self->passive)) == (const void *)l
              ? EDEADLK /* we read-hold it: use rm_prwlock_upgrade */
              : consensus(l, self, 0, mode, clk, abstime);
  if (RM_UNLIKELY(e)) release_unpassed(l);
  return e;
}

/* A writer waiting for the writer word.  r: the caller's record if it holds
 * nothing passively (else NULL).  As readers do in wait_writer, r reports
 * while we spin and is offline while we sleep: the writer we wait for then
 * settles its consensus without a membarrier for our sake.  Without this,
 * two threads that both write often (rwbench with P = 9/10 at 2 threads)
 * paid a membarrier for nearly every write lock (75 000 a second), since
 * the waiting writer never reported: 120 000 operations a second against
 * pthread's 6.3 million.  Reporting is safe only because r holds nothing
 * (released() counts a record that reported as done with every object). */
static int write_wait(rm_prwlock_t *l, rm_fcp_domain_t *d, struct rm_fcp_reader *r, int mode,
                      int clk, const struct timespec *abstime) {
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  /* Spin a little before registering. */
  for (unsigned i = 0; i < PRW_SPINS / 4; i++) {
    if (!(s & RM_PRWLOCK_LOCKED) && rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_LOCKED))
      return rm_prwlock_write_consensus(l, mode, clk, abstime);
    if (r) rm_fcp_report(d, r); /* stores only if a writer came since */
    rm_cpu_relax();
    s = rm_atomic_load_relaxed(&l->wstate);
  }
  if (r) rm_atomic_store_release(&r->seen, UINT64_MAX); /* offline */
  rm_atomic_fetch_add_seq_cst(&l->wstate, RM_PRWLOCK_WAITER);
  for (;;) {
    uint32_t seq = rm_atomic_load_acquire(&l->wseq);
    s = rm_atomic_load_seq_cst(&l->wstate);
    if (!(s & RM_PRWLOCK_LOCKED)) {
      if (rm_atomic_cas_seq_cst(&l->wstate, &s, (s - RM_PRWLOCK_WAITER) | RM_PRWLOCK_LOCKED))
        return rm_prwlock_write_consensus(l, mode, clk, abstime);
      continue;
    }
    if (s & RM_PRWLOCK_HANDOFF) {
      /* Passed by a writer that finished its consensus: ours, no new one. */
      if (rm_atomic_cas_seq_cst(&l->wstate, &s, (s - RM_PRWLOCK_WAITER) & ~RM_PRWLOCK_HANDOFF))
        return 0;
      continue;
    }
    int e = rm_futex_wait(&l->wseq, seq, clk, mode == RM_FCP_TIMED ? abstime : NULL, false);
    if (e == ETIMEDOUT || e == EINVAL) {
      /* Leave; a handoff meant for "some waiter" may be ours to take. */
      s = rm_atomic_load_relaxed(&l->wstate);
      for (;;) {
        if ((s & RM_PRWLOCK_LOCKED) && (s & RM_PRWLOCK_HANDOFF)) {
          if (rm_atomic_cas_seq_cst(&l->wstate, &s, (s - RM_PRWLOCK_WAITER) & ~RM_PRWLOCK_HANDOFF)) {
            rm_prwlock_write_unlock(l); /* a valid write hold: pass it on */
            return e;
          }
        } else if (!(s & RM_PRWLOCK_LOCKED)) {
          if (rm_atomic_cas_seq_cst(&l->wstate, &s, (s - RM_PRWLOCK_WAITER) | RM_PRWLOCK_LOCKED)) {
            /* Free after all: our own write lock, if it comes at once. */
            int c = rm_prwlock_write_consensus(l, RM_FCP_TRY, 0, NULL);
            return c == 0 ? 0 : e;
          }
        } else if (rm_atomic_cas_seq_cst(&l->wstate, &s, s - RM_PRWLOCK_WAITER)) {
          return e;
        }
      }
    }
  }
}

RM_API int rm_prwlock_write_slowpath(rm_prwlock_t *l, int mode, int clk,
                                     const struct timespec *abstime) {
  rm_fcp_domain_t *d = rm_prwlock_domain(l);
  struct rm_fcp_reader *r = mode == RM_FCP_TRY ? NULL : rm_fcp_self_find(d);
  if (r && rm_atomic_load_relaxed(&r->passive) != NULL) r = NULL;
  int e = write_wait(l, d, r, mode, clk, abstime);
  if (r) { /* online again, if we went offline: a report, then a fence that
            * orders it before our next R2 (as in wait_writer) */
    rm_fcp_report(d, r);
    rm_fence_store_load();
  }
  return e;
}

RM_API int rm_prwlock_write_unlock(rm_prwlock_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  for (;;) {
    if (RM_UNLIKELY(!(s & RM_PRWLOCK_LOCKED) || (s & RM_PRWLOCK_HANDOFF))) {
      RM_ASSERT(0, "prwlock %p: write unlock without the write lock", (void *)l);
      return EPERM;
    }
    if (s >= RM_PRWLOCK_WAITER) {
      /* Pass to a waiting writer: LOCKED stays, readers stay out. Release
       * (seq_cst): our critical section happens before the taker's. */
      if (rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_HANDOFF)) {
        rm_atomic_fetch_add_release(&l->wseq, 1u);
        rm_futex_wake(&l->wseq, 1, false);
        return 0;
      }
    } else if (rm_atomic_cas_seq_cst(&l->wstate, &s, s & ~RM_PRWLOCK_LOCKED)) {
      /* Release half: readers that see LOCKED clear (acquire) see our writes. */
      wake_readers(l);
      return 0;
    }
  }
}

RM_API int rm_prwlock_downgrade(rm_prwlock_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  if (!(s & RM_PRWLOCK_LOCKED) || (s & RM_PRWLOCK_HANDOFF)) return EPERM;
  struct rm_fcp_reader *r = rm_fcp_self(rm_prwlock_domain(l));
  if (r && rm_atomic_load_relaxed(&r->passive) == NULL) {
    /* Ordered before the release of the word below: the next writer (which
     * takes the word after us and then runs its consensus) sees it.  That
     * writer's released() trusts our `seen` once it is at least its new
     * version; it is never the offline value here: a record goes offline
     * only while it waits (wait_writer, write_wait), and both bring it
     * back online (a report, then a fence) before their thread can hold
     * the write lock we are downgrading.  (models/prwlock.pml, the
     * downgrade mutants.) */
    rm_atomic_store_relaxed(&r->passive, (const void *)l);
  } else {
    rm_atomic_fetch_add_seq_cst(&l->active, 1u);
  }
  /* Not passed: the next writer must run a consensus that sees our hold. */
  release_unpassed(l);
  return 0;
}

RM_API int rm_prwlock_upgrade(rm_prwlock_t *l) {
  struct rm_fcp_reader *r = rm_fcp_self_find(rm_prwlock_domain(l));
  const void *p = r ? rm_atomic_load_relaxed(&r->passive) : NULL;
  bool passive = rm_fcp_obj(p) == (const void *)l;
  if (passive && p != (const void *)l) return EDEADLK; /* held more than once */
  if (!passive && rm_atomic_load_relaxed(&l->active) == 0) return EPERM;
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  do {
    if (s & RM_PRWLOCK_LOCKED) return EBUSY; /* a writer waits for us */
  } while (!rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_LOCKED));
  /* Count one reader less: ourselves (our record, or one active count).
   * Our record is skipped either way: it holds l, or nothing of l. */
  int e = consensus(l, r, passive ? 0u : 1u, RM_FCP_WAIT, 0, NULL);
  (void)e; /* RM_FCP_WAIT does not fail */
  if (passive) {
    rm_atomic_store_release(&r->passive, (const void *)NULL);
    rm_fcp_report(rm_prwlock_domain(l), r);
  } else {
    rm_atomic_fetch_sub_release(&l->active, 1u);
  }
  return 0;
}
