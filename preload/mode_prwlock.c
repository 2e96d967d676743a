/*
 * mode_prwlock.c - READMOSTLY_RWLOCK=prwlock: passive readers on the FCP
 * consensus.
 *
 * The same 56 bytes, the same futexrw as BRAVO mode, but readers hold the
 * lock passively in their record of the (preload's own) default FCP domain
 * instead of in BRAVO's table: R1 publishes the lock in the record, R2
 * reads futexrw's state word; if a writer holds it (or, for the
 * nonrecursive writer-preference kind, waits) the reader backs out and
 * takes futexrw like any other reader.  A writer takes futexrw's write lock
 * (so writers, active readers and the kinds' preferences are futexrw's),
 * then reaches consensus on the passive readers of this lock:
 * rm_fcp_begin() / rm_fcp_wait().  The futexrw CAS that sets WRITER is the
 * writer word of docs/fcp.md; the version bump that follows it is a
 * release and a full fence.
 *
 * Holds other threads may release follow fcp.h, "HOLDS RELEASED BY ANOTHER
 * THREAD": records keep their hold when their thread exits (glibc keeps the
 * count; preload.c asks for it with rm_fcp_domain_keep_exit_holds), another
 * thread's unlock releases a passive hold with rm_fcp_release_foreign(),
 * recursion counts go through rm_fcp_nest_add/drop, and the owner unlocks
 * with rm_fcp_unlock_own().  Bytes 0-15 of the lock stay zero.
 *
 * The fast paths (pw_rdlock_fast, and the unlock in preload.c's
 * pl_unlock_mode) are inlined into the exported functions; this file holds
 * everything they hand over to.
 */
#include "preload_internal.h"

/* ---- records while blocked, and backing out ------------------------------- */

/* While a thread blocks in futexrw, its record (holding nothing passively)
 * is "offline": seen = UINT64_MAX, so writers neither wait for it nor issue
 * a membarrier because of it.  Coming back costs a report and a fence, which
 * pairs with the fence in rm_fcp_begin(): a writer that skipped the record
 * as offline has its writer word visible to our next R2 (as prwlock's
 * wait_writer does, see src/prwlock.c). */
RM_INLINE struct rm_fcp_reader *pw_offline(struct rm_fcp_reader *r, int mode) {
  if (!r || mode == 1 || rm_atomic_load_relaxed(&r->passive) != NULL) return NULL;
  rm_atomic_store_release(&r->seen, UINT64_MAX);
  return r;
}
RM_INLINE void pw_online(struct rm_fcp_reader *r) {
  if (!r) return;
  rm_fcp_report(PW_DOMAIN, r);
  rm_fence_store_load();
}

/* Give up a passive hold that a reader took and must not keep (a writer
 * came).  An unlock of another thread may have taken it meanwhile, meaning
 * to release a real hold: that release is then passed on, so that the
 * count comes out as glibc's would. */
RM_NOINLINE void pw_back_out(struct rm_fcp_reader *r, struct pl_lock *l) {
  if (rm_fcp_unlock_own(PW_DOMAIN, r, l)) return;
  if (!pl_release_slow(l)) (void)rm_fcp_release_foreign(PW_DOMAIN, l, r);
}

/* ---- the read lock after the fast path -------------------------------------- */

/* tried: pw_rdlock_fast's answer (PW_BUSY when it was not called). */
RM_NOINLINE int pw_rdlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                          int tried) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  if (RM_UNLIKELY(l->fx.pshared)) return pl_futex_read(l, mode, clk, abs);
  struct rm_fcp_reader *r = rm_fcp_self(PW_DOMAIN); /* claims a record on first use */
  if (RM_UNLIKELY(r == NULL)) r = &rm_fcp_unregistered; /* no memory: futexrw only */
  while (tried != PW_RACED) {
    tried = pw_try_passive(l, r);
    if (tried == PW_HELD) return 0;
    if (tried == PW_RACED || rm_atomic_load_acquire(&r->passive) != l) break;
    /* Recursive: count it; never blocks, even while a writer waits for us. */
    if (rm_fcp_nest_add(r, l)) return 0;
    /* The count is full (take futexrw), or another thread released our
     * hold meanwhile (try again). */
    if (rm_atomic_load_relaxed(&r->passive) == l) break;
  }
  int why = tried == PW_RACED ? PS_SLOW_RACED : PS_SLOW_COLLISION; /* record missing or busy */
  struct rm_fcp_reader *off = pw_offline(r, mode);
  int e = pl_futex_read(l, mode, clk, abs);
  pw_online(off);
  if (e == 0 && PL_STATS_ON()) pl_count(l, why, 1);
  return e;
}

/* ---- the write lock ------------------------------------------------------------ */

/* The writer's consensus on the passive readers of l, after futexrw's write
 * lock and rm_fcp_begin().  0: none left; EBUSY, ETIMEDOUT: gave up; EAGAIN:
 * readers are parked behind us and the kind prefers readers (the caller
 * gives way, see pl_gives_way).  The common case is the first, untimed
 * call: no reader inside, or one that leaves within the spin, and no clock
 * read. */
static int pw_consensus(struct pl_lock *l, rm_fcp_domain_t *d, uint64_t v,
                        struct rm_fcp_reader *r, int mode, clockid_t clk,
                        const struct timespec *abs, long *slice) {
  if (mode == 1 || !pl_gives_way(l))
    return rm_fcp_wait(d, v, l, r, mode == 1 ? RM_FCP_TRY : mode == 2 ? RM_FCP_TIMED : RM_FCP_WAIT,
                       (int)clk, abs);
  int e = rm_fcp_wait(d, v, l, r, RM_FCP_TRY, 0, NULL);
  while (e == EBUSY) {
    struct timespec end;
    bool last;
    clockid_t c = pl_slice_end(mode, clk, abs, slice, &end, &last);
    e = rm_fcp_wait(d, v, l, r, RM_FCP_TIMED, (int)c, &end);
    if (e != ETIMEDOUT || last) return e;
    e = pl_readers_parked(l) ? EAGAIN : EBUSY;
  }
  return e;
}

int pw_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  rm_fcp_domain_t *d = PW_DOMAIN;
  struct rm_fcp_reader *r = NULL;
  if (!l->fx.pshared) {
    /* We hold it passively: we would wait for ourselves (glibc hangs). */
    r = rm_fcp_self_cached(d);
    if (r && rm_atomic_load_relaxed(&r->passive) == l) return mode == 1 ? EBUSY : EDEADLK;
  }
  long slice = PL_SLICE_FIRST_NS;
  for (;;) {
    struct rm_fcp_reader *off = pw_offline(r, mode);
    int e = pl_futex_write(l, mode, clk, abs);
    pw_online(off);
    if (e) return e;
    if (l->fx.pshared) break;
    uint64_t v = rm_fcp_begin(d);
    e = pw_consensus(l, d, v, r, mode, clk, abs, &slice);
    if (e == 0) {
      if (PL_STATS_ON()) pl_count(l, PS_WRITES, 1);
      break;
    }
    rm_futexrw_write_unlock(&l->fx);
    if (e != EAGAIN) return e;
    /* Gave way to parked readers (pl_gives_way): wait, holding nothing, for
     * the passive holds of this version (rm_fcp_wait only reads records). */
    e = rm_fcp_wait(d, v, l, r, mode == 2 ? RM_FCP_TIMED : RM_FCP_WAIT, (int)clk, abs);
    if (e) return e;
  }
  rm_atomic_store_relaxed(&l->fx.owner, me); /* as in pl_wrlock */
  return 0;
}

/* ---- the unlock and destroy ------------------------------------------------- */

/* After rm_fcp_unlock_own() found no hold of the caller's (r may be
 * rm_fcp_unregistered): the write hold, else a hold taken through futexrw
 * (ours or another thread's), else another thread's passive hold (glibc
 * lets any thread release a read hold). */
RM_NOINLINE int pw_unlock(struct pl_lock *l, struct rm_fcp_reader *r) {
  uint32_t me = pl_owner_id(l);
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  if ((s & RM_FUTEXRW_WRITER) && rm_atomic_load_relaxed(&l->fx.owner) == me) {
    rm_atomic_store_relaxed(&l->fx.owner, 0u);
    return rm_futexrw_write_unlock(&l->fx);
  }
  if (pl_release_slow(l)) return 0;
  if (!l->fx.pshared && rm_fcp_release_foreign(PW_DOMAIN, l, r)) return 0;
  return EPERM;
}

int pw_destroy(struct pl_lock *l) {
  /* As pthread_rwlock_destroy's comment says: the caller's passive hold
   * (every recursive level) is dropped, another thread's gives EBUSY. */
  if (l->fx.pshared) return 0;
  struct rm_fcp_reader *r = rm_fcp_self_find(PW_DOMAIN);
  while (r && rm_fcp_obj(rm_atomic_load_relaxed(&r->passive)) == (const void *)l &&
         rm_fcp_unlock_own(PW_DOMAIN, r, l)) {
  }
  return rm_fcp_held(PW_DOMAIN, l) ? EBUSY : 0;
}
