/*
 * mode_bravo.c - READMOSTLY_RWLOCK=bravo (the default): BRAVO over futexrw.
 *
 * A reader whose lock has the bias on publishes the lock in a slot of
 * BRAVO's table (rm_bravo_read_fast_shared) and remembers (lock, slot) in
 * its held list (preload_internal.h); later reads of the same lock by that
 * thread count in the slot's nesting bits.  Otherwise it takes futexrw's
 * read lock (a "slow" hold: a count any thread may release).  A writer
 * takes futexrw's write lock, then revokes the bias: it waits until no slot
 * holds the lock.  Because pthread_rwlock_unlock lets any thread release a
 * read hold, the slots follow the contract of bravo.h, "Slots that other
 * threads' unlocks may mark"; the points cited below are that list's.
 *
 * The fast paths (pl_rdlock_fast, pl_unlock_fast) are in
 * preload_internal.h, inlined into the exported functions; this file holds
 * everything they hand over to.
 *
 * READMOSTLY_RWLOCK=bravo2d runs this same code over a BRAVO-2D table
 * (pl_t2d, rows per CPU): a fast hold's slot is in the row of the CPU the
 * reader ran on, in the lock's column.  Nothing here finds a slot from a
 * CPU: the owner keeps its slot in the held list, and a releasing thread
 * (point 2) or a waiting writer looks at the lock's column in every row
 * (rm_bravo_release_foreign, rm_bravo_wait_unheld, rm_bravo_table_holds),
 * which holds every slot a reader of the lock can have published in.
 */
#include "preload_internal.h"

/* ---- the held list ------------------------------------------------------------ */

/* Add an entry; false when memory ran out (the caller then takes A). */
static bool pl_add(struct pl_lock *l, uintptr_t *slot) {
  if (pl_n >= PL_INLINE_HELD && pl_n - PL_INLINE_HELD >= pl_cap) {
    size_t ncap = pl_cap ? pl_cap * 2 : 32;
    struct pl_held *p = (struct pl_held *)realloc(pl_heap, ncap * sizeof *p);
    if (!p) return false;
    if (pl_key_ok) pthread_setspecific(pl_key, p); /* freed at thread exit */
    pl_heap = p;
    pl_cap = ncap;
  }
  struct pl_held *h = pl_at(pl_n++);
  h->l = l;
  h->slot = slot;
  return true;
}

/* ---- releasing holds -------------------------------------------------------- */

/* Release a fast read hold of another thread (bravo.h, "Slots that other
 * threads' unlocks may mark", point 2), and never bias this lock again:
 * later holds are slow ones, which any thread can release (the count is
 * the truth). */
static bool pl_release_foreign_fast(struct pl_lock *l) {
  if (!rm_bravo_release_foreign(&l->bias, pl_table(), NULL)) return false;
  rm_atomic_fetch_or_acq_rel(&l->fx.reserved[0], PL_NOBIAS);
  return true;
}

/* Our reader backed out of a slot that another thread's unlock had marked
 * (point 4 of the contract; models/bravo.pml with SHARED checks it): that
 * unlock meant to release a real hold and took our transient slot for it.
 * Release one in its place, as it would have: a slow hold, else another
 * thread's fast one.  Returns the reason
 * the read goes to the slow path. */
RM_NOINLINE int pl_pass_release(struct pl_lock *l) {
  if (!pl_release_slow(l)) (void)pl_release_foreign_fast(l);
  return RM_BRAVO_SLOW_RACED;
}

/* Give back a slot we installed but cannot keep (no memory for its entry),
 * by CAS for the same reason as the fast path's back-out. */
static void pl_give_back(struct pl_lock *l, uintptr_t *slot) {
  uintptr_t v = (uintptr_t)l;
  if (__atomic_compare_exchange_n(slot, &v, (uintptr_t)0, false, __ATOMIC_RELEASE,
                                  __ATOMIC_RELAXED))
    return;
  rm_atomic_store_release(slot, (uintptr_t)0);
  pl_pass_release(l);
}

/* A held-list entry whose slot no longer holds l (v, just loaded): another
 * thread released the hold and marked the slot (point 5: we clear it), or
 * it is already clear.  Forget the entry. */
static void pl_drop_dead(struct pl_held *h, const struct pl_lock *l, uintptr_t v) {
  if (v == ((uintptr_t)l | RM_BRAVO_SLOT_RELEASED))
    __atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
  pl_remove(h);
}

/* ---- the read lock after the fast path -------------------------------------- */

/* After a read hold taken through futexrw on a private lock: count it, and
 * let BRAVO turn the bias on again once the inhibit window is over (unless
 * another thread once released one of this lock's fast holds). */
static RM_NOINLINE void pl_slow_read_done_stats(struct pl_lock *l, int why) {
  pl_count(l, why, 1);
  if (!(rm_atomic_load_relaxed(&l->fx.reserved[0]) & PL_NOBIAS))
    rm_bravo_read_slow_done(&l->bias, pl_table(), why);
}
RM_INLINE void pl_slow_read_done(struct pl_lock *l, int why) {
  /* With statistics off, no call on the common path (the clock read needs
   * none where the TSC is usable), so callers save no registers for it. */
  if (PL_STATS_ON()) {
    pl_slow_read_done_stats(l, why);
    return;
  }
  if (RM_LIKELY(!(rm_atomic_load_relaxed(&l->fx.reserved[0]) & PL_NOBIAS)))
    rm_bravo_read_slow_bias(&l->bias, pl_table());
}

/* The read lock when pl_rdlock_fast found the bias off (or lost its slot):
 * one attempt at futexrw's reader entry, inlined, for the write-heavy
 * locks whose bias stays off.  It is what pl_rdlock would do next with the
 * same answer, minus the checks the attempt makes redundant: a thread that
 * write-holds l finds WRITER set and goes to pl_rdlock, which reports
 * EDEADLK; pl_rdlock_fast already found no fast hold of l in the thread's
 * list (it answered >= 0).  false: nothing taken; pl_rdlock decides (it
 * blocks, retries, or fails as the mode says).  A try-lock that loses the
 * CAS to another reader also ends up there, and does not fail for it. */
RM_INLINE bool pl_rdlock_futex_fast(struct pl_lock *l, int why) {
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  /* (A) of futexrw: acquire, pairs with the last writer's release. */
  if (!rm_futexrw_reader_may_enter(&l->fx, s) ||
      (s & RM_FUTEXRW_READERS_MAX) == RM_FUTEXRW_READERS_MAX ||
      !rm_atomic_cas_acquire(&l->fx.state, &s, s + RM_FUTEXRW_READER))
    return false;
  if (RM_LIKELY(!l->fx.pshared)) pl_slow_read_done(l, why); /* shared: never biased */
  return true;
}

/* A recursive read of a fast hold never touches the lock: the slot we
 * already own keeps every writer out (a revoking writer waits for it), so
 * we only count the extra hold in the slot's nesting bits.  Only this
 * thread adds nesting; another thread's unlock may remove it, hence CAS.
 * PL_NESTED: counted.  PL_NEST_FULL: 32767 extra holds already (take A like
 * a new reader).  PL_NOT_HELD: no live fast hold of l. */
enum { PL_NESTED, PL_NEST_FULL, PL_NOT_HELD };
static int pl_nest(struct pl_lock *l) {
  struct pl_held *h = pl_n ? pl_find(l) : NULL;
  if (!h) return PL_NOT_HELD;
  uintptr_t v = rm_atomic_load_relaxed(h->slot);
  while (rm_bravo_slot_holds(v, l)) {
    if ((v & RM_BRAVO_SLOT_NEST_MASK) == RM_BRAVO_SLOT_NEST_MASK) return PL_NEST_FULL;
    if (rm_atomic_cas_acq_rel(h->slot, &v, v + RM_BRAVO_SLOT_NEST_ONE)) return PL_NESTED;
  }
  pl_drop_dead(h, l, v); /* another thread released this hold */
  return PL_NOT_HELD;
}

/* A new fast hold of l, for a thread that has none: RM_BRAVO_FAST with
 * the entry added, or why the read must take futexrw. */
static int pl_take_fast(struct pl_lock *l) {
  rm_token_t tok;
  struct rm_bravo_table *t = pl_table();
  int why = t == &pl_t2d ? rm_bravo2d_read_fast_shared(&l->bias, t, &tok)
                         : rm_bravo_read_fast_shared(&l->bias, t, &tok);
  if (RM_LIKELY(why == RM_BRAVO_FAST)) {
    if (RM_LIKELY(pl_add(l, (uintptr_t *)tok))) {
      if (PL_STATS_ON()) pl_count(l, PS_FAST_READS, 1);
      return why;
    }
    pl_give_back(l, (uintptr_t *)tok); /* no memory for the entry */
    return RM_BRAVO_SLOW_COLLISION;
  }
  return why == RM_BRAVO_SLOW_RACED_MARKED ? pl_pass_release(l) : why;
}

/* The general read lock.  mode: 0 block, 1 try, 2 timed.  why: PL_UNTRIED,
 * or the reason pl_rdlock_fast gave for not taking a fast hold (it then
 * also found no hold of l in the thread's list, so there is nothing to
 * nest and no new fast hold to try). */
RM_NOINLINE int pl_rdlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                          int why) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  if (RM_UNLIKELY(l->fx.pshared)) /* never biased: the table is per process */
    return pl_futex_read(l, mode, clk, abs);
  if (why == PL_UNTRIED) {
    switch (pl_nest(l)) {
      case PL_NESTED: return 0;
      case PL_NEST_FULL: why = RM_BRAVO_SLOW_COLLISION; break;
      default:
        why = pl_take_fast(l);
        if (why == RM_BRAVO_FAST) return 0;
    }
  }
  int e = pl_futex_read(l, mode, clk, abs);
  if (e) return e;
  pl_slow_read_done(l, why);
  return 0;
}

/* pthread_rwlock_rdlock (mode 0) and tryrdlock (1) after pl_rdlock_fast
 * took no fast hold: first the inlined futexrw attempt, when it tried.  Out
 * of line, so that the exported function's fast path saves no registers
 * for it. */
RM_NOINLINE int pl_rdlock_other(struct pl_lock *l, int mode, int why) {
  if (why != PL_UNTRIED && pl_rdlock_futex_fast(l, why)) return 0;
  return pl_rdlock(l, mode, CLOCK_REALTIME, NULL, why);
}

RM_NOINLINE int pl_rdlock2d(struct pl_lock *l, int mode) {
  int why = pl_rdlock_fast2d(l);
  if (RM_LIKELY(why == RM_BRAVO_FAST)) return 0;
  return pl_rdlock_other(l, mode, why);
}

/* ---- the write lock ------------------------------------------------------------ */

/* The nonrecursive writer-preference kind keeps new readers out while a
 * writer waits (futexrw counts waiting writers), but fast readers do not
 * look at futexrw.  So a writer about to wait for futexrw turns the bias off
 * first: new readers take the slow path, where futexrw holds them back
 * (glibc's tst-rwlock15 and gnulib's test-rwlock1 check this; with the bias
 * on, their second reader got in).  Not the revocation: we do not hold A.
 * The writer counts itself in the bias word (rm_bravo_count_in: bias off,
 * revoke_pending = 1), so that whichever writer takes A next scans for the
 * fast holds taken before, and so that a slow reader that gets in before
 * futexrw counts us as waiting cannot turn the bias on again (a test saw
 * fast readers keep coming for 5 s that way).  The writer counts out once
 * it holds the lock, or when it gives up; while any such writer waits the
 * bias stays off, and when the last one is done the inhibit window (set by
 * the revocation under A) decides as usual. */
/* true if it counted in (the caller must count out). */
RM_INLINE bool pl_keep_readers_out(struct pl_lock *l) {
  /* Only when we are about to wait: futexrw is held (by slow readers; no
   * writer holds it while the bias is on). */
  if ((rm_atomic_load_relaxed(&l->bias.rbias) & RM_BRAVO_BIAS) && !l->fx.pshared &&
      (rm_atomic_load_relaxed(&l->fx.state) & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX))) {
    rm_bravo_count_in(&l->bias);
    return true;
  }
  return false;
}

/* BRAVO's revocation under futexrw's write lock.  0: done; EBUSY,
 * ETIMEDOUT: gave up; EAGAIN: readers are parked behind us (the caller
 * gives way).  The revocation's give-up leaves the bias off and the
 * revocation pending, so no fast hold starts meanwhile and the next attempt
 * scans again. */
static int pl_revoke(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                     long *slice) {
  bool stats = PL_STATS_ON();
  /* Acquire, then the second load, as in rm_bravo_write_clear. */
  bool revoking = (rm_atomic_load_acquire(&l->bias.rbias) & RM_BRAVO_BIAS) != 0;
  revoking = revoking || rm_atomic_load_acquire(&l->bias.revoke_pending) != 0;
  uint64_t t0 = stats && revoking ? rm_ticks() : 0;
  int e;
  if (!revoking || mode == 1 || !pl_gives_way(l)) {
    e = rm_bravo_write_acquired(&l->bias, pl_table(),
                                mode == 1 ? RM_BRAVO_REVOKE_TRY
                                : mode == 2 ? RM_BRAVO_REVOKE_TIMED : RM_BRAVO_REVOKE_WAIT,
                                (int)clk, abs);
  } else {
    for (;;) {
      struct timespec end;
      bool last;
      clockid_t c = pl_slice_end(mode, clk, abs, slice, &end, &last);
      e = rm_bravo_write_acquired(&l->bias, pl_table(), RM_BRAVO_REVOKE_TIMED, (int)c, &end);
      if (e != ETIMEDOUT || last) break;
      if (pl_readers_parked(l)) {
        e = EAGAIN;
        break;
      }
    }
  }
  if (stats && e == 0) {
    pl_count(l, PS_WRITES, 1);
    if (revoking) {
      pl_count(l, PS_REVOCATIONS, 1);
      pl_count(l, PS_REVOKE_TICKS, rm_ticks() - t0);
    }
  }
  return e;
}

/* After giving way: wait, holding nothing, until no slot of BRAVO's table
 * holds l (the fast holds the revocation waited for, and any taken since if
 * the bias came back): the revocation's scan (W2/W3) without touching the
 * bias; in a 2D table, l's columns only.  The slots' owners need nothing
 * from us. */
static int pl_wait_fast_holds(struct pl_lock *l, int mode, clockid_t clk,
                              const struct timespec *abs) {
  return rm_bravo_wait_unheld(&l->bias, pl_table(),
                              mode == 2 ? RM_BRAVO_REVOKE_TIMED : RM_BRAVO_REVOKE_WAIT, (int)clk,
                              abs);
}

int pl_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  /* We read-hold it through the table: we would wait for ourselves forever
   * (glibc hangs here; we say so).  Unless another thread released that
   * hold meanwhile (marked our slot): then the entry is dead, and the lock
   * is ours to take as with glibc. */
  if (pl_n && mode != 1) {
    struct pl_held *h = pl_find(l);
    if (h) {
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      if (rm_bravo_slot_holds(v, l)) return EDEADLK;
      pl_drop_dead(h, l, v);
    }
  }
  bool held_out = RM_UNLIKELY(l->fx.kind == RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE) &&
                  mode != 1 && pl_keep_readers_out(l);
  long slice = PL_SLICE_FIRST_NS;
  int e;
  for (;;) {
    e = pl_futex_write(l, mode, clk, abs);
    if (e) break;
    if (l->fx.pshared) break;
    e = pl_revoke(l, mode, clk, abs, &slice);
    if (e == 0) break;
    rm_futexrw_write_unlock(&l->fx);
    if (e != EAGAIN) break;
    /* Gave way to parked readers (pl_gives_way, preload_internal.h). */
    e = pl_wait_fast_holds(l, mode, clk, abs);
    if (e) break;
  }
  /* Done keeping readers out: we hold the lock (our revocation under A
   * cleared revoke_pending and set the inhibit window) or gave up (the
   * pending flag stays for the next writer). */
  if (held_out) rm_bravo_count_out(&l->bias);
  if (e) return e;
  /* Relaxed: read only by threads comparing it with their own id; only the
   * holder stores its own id, so a stale value never equals theirs. */
  rm_atomic_store_relaxed(&l->fx.owner, me);
  return 0;
}

/* ---- the unlock and destroy ------------------------------------------------- */

/* Every unlock but the two common ones (below): the write hold, a
 * recursive or older fast hold of ours, a slow hold, another thread's
 * fast hold. */
static RM_NOINLINE int pl_unlock(struct pl_lock *l) {
  uint32_t me = pl_owner_id(l);
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  if ((s & RM_FUTEXRW_WRITER) && rm_atomic_load_relaxed(&l->fx.owner) == me) {
    rm_atomic_store_relaxed(&l->fx.owner, 0u);
    return rm_futexrw_write_unlock(&l->fx);
  }
  if (!l->fx.pshared && pl_n) {
    struct pl_held *h = pl_find(l);
    if (h) {
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      while (rm_bravo_slot_holds(v, l)) {
        uintptr_t nv = (v & RM_BRAVO_SLOT_NEST_MASK) ? v - RM_BRAVO_SLOT_NEST_ONE : 0;
        /* Release: the critical section happens before a writer that sees
         * the slot change (the reader's R3). */
        if (__atomic_compare_exchange_n(h->slot, &v, nv, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
          if (nv == 0) pl_remove(h);
          return 0;
        }
      }
      /* Another thread released our hold already; clean up, then treat
       * this unlock like theirs: release some other hold. */
      pl_drop_dead(h, l, v);
    }
  }
  /* A slow read hold (ours, or one another thread took: POSIX leaves that
   * undefined, glibc counts it), else another thread's fast hold. */
  if (pl_release_slow(l)) return 0;
  if (!l->fx.pshared && pl_release_foreign_fast(l)) return 0;
  /* Write-held by another thread, or not held at all. */
  return EPERM;
}

/* Every unlock but that of the thread's most recent fast hold.  First the
 * common one on locks whose bias stays off (written often): a thread with
 * no fast hold at all releases a slow hold, which is what pl_unlock would
 * come to after finding no write hold of ours (pl_release_slow sees WRITER
 * clear) and nothing in the held list.  Out of line, so that the exported
 * function's fast path saves no registers for it. */
RM_NOINLINE int pl_unlock_other(struct pl_lock *l) {
  if (pl_n == 0 && pl_release_slow(l)) return 0;
  return pl_unlock(l);
}

/* pthread_rwlock_destroy's BRAVO part (see there): the caller's fast hold
 * is dropped, another thread's in BRAVO's table gives EBUSY. */
int pl_destroy(struct pl_lock *l) {
  if (!l->fx.pshared && pl_n) {
    struct pl_held *h = pl_find(l);
    if (h) {
      /* Release, as an unlock's (R3).  A RELEASED mark (another thread
       * released our hold) is cleared the same way. */
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      while (RM_BRAVO_SLOT_LOCK(v) == (uintptr_t)l &&
             !__atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED)) {
      }
      pl_remove(h);
    }
  }
  if (!l->fx.pshared && rm_bravo_table_holds(&l->bias, pl_table())) return EBUSY;
  return 0;
}
