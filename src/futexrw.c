/*
 * futexrw.c - slow paths of the compact futex rwlock (readmostly/futexrw.h).
 *
 * Invariants:
 *  1. WRITER set => readers inside == 0.
 *  2. The waiting-writers count equals the number of writers between
 *     registration and acquisition (or time-out) in the slow path.
 *  3. A parked reader set RPARKED in a state where it could not enter, and
 *     read rseq before doing so.  Every transition that may let a parked
 *     reader in (a writer leaving; the last waiting writer giving up under
 *     writer preference) clears RPARKED in the same RMW and then bumps rseq
 *     and wakes all readers.
 *  4. A parked writer is counted in the waiting-writers count and read wseq
 *     before its last look at the state.  Every transition that may let a
 *     writer in (the last reader leaving, a writer leaving, a woken writer
 *     giving up while the lock is free) bumps wseq after its RMW and wakes
 *     one writer while the count is nonzero.
 *  From 3 and 4: no waiter stays parked while the lock is free to it.
 *
 * Ordering points (A-D are in the header):
 *  (E) waiter: load of rseq/wseq, acquire, before the state RMW/load that
 *      decides to park.  Pairs with (F): if the waiter's state access came
 *      before the waker's RMW, the waker's later bump (F) is not yet visible
 *      to (E), so the kernel sees the sequence changed or wakes the sleeper.
 *  (F) waker: bump of rseq/wseq, release, after its state RMW.
 */
#define _GNU_SOURCE
#include <readmostly/futexrw.h>

#include <errno.h>

#define SPINS 100

static bool shared(const rm_futexrw_t *l) { return l->pshared != 0; }

RM_API int rm_futexrw_init_kind(rm_futexrw_t *l, int kind, int pshared) {
  if (!l) return EINVAL;
  if (kind != RM_FUTEXRW_PREFER_READER && kind != RM_FUTEXRW_PREFER_WRITER &&
      kind != RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE)
    return EINVAL;
  l->state = 0;
  l->rseq = l->wseq = 0;
  l->owner = 0;
  l->reserved[0] = l->reserved[1] = l->reserved[2] = 0;
  l->kind = (uint32_t)kind;
  l->pshared = pshared ? 1u : 0u;
  return 0;
}

RM_API int rm_futexrw_destroy(rm_futexrw_t *l) {
  if (!l) return EINVAL;
  uint64_t s = rm_atomic_load_acquire(&l->state);
  if (s & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX)) return EBUSY;
  return 0;
}

static void wake_readers(rm_futexrw_t *l) {
  rm_atomic_fetch_add_release(&l->rseq, 1u); /* (F) */
  rm_futex_wake(&l->rseq, INT32_MAX, shared(l));
}

static void wake_writer(rm_futexrw_t *l) {
  rm_atomic_fetch_add_release(&l->wseq, 1u); /* (F) */
  rm_futex_wake(&l->wseq, 1, shared(l));
}

/* One attempt to enter as a reader from the state *s: 0 (in), EBUSY (a
 * reader may not enter now), EAGAIN (reader count full) or -1 (the CAS lost
 * a race; *s holds the new state, try again). */
static int reader_try_enter(rm_futexrw_t *l, uint64_t *s) {
  if (!rm_futexrw_reader_may_enter(l, *s)) return EBUSY;
  if ((*s & RM_FUTEXRW_READERS_MAX) == RM_FUTEXRW_READERS_MAX) return EAGAIN;
  return rm_atomic_cas_acquire(&l->state, s, *s + RM_FUTEXRW_READER) ? 0 : -1; /* (A) */
}

/* 0 while the (validated) deadline has not passed; EINVAL for a bad clock
 * or timeout; ETIMEDOUT once it passed (a negative tv_sec always has). */
static int deadline_status(int clk, const struct timespec *abstime) {
  if (!abstime) return 0;
  int e = rm_timespec_check(clk, abstime);
  if (e) return e;
  return abstime->tv_sec < 0 || rm_timespec_expired(clk, abstime) ? ETIMEDOUT : 0;
}

RM_API int rm_futexrw_read_trylock_slowpath(rm_futexrw_t *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->state);
  int r;
  while ((r = reader_try_enter(l, &s)) < 0) {
  }
  return r;
}

RM_API int rm_futexrw_read_lock_slowpath(rm_futexrw_t *l, int clk, const struct timespec *abstime) {
  unsigned spins = 0;
  for (;;) {
    uint64_t s = rm_atomic_load_relaxed(&l->state);
    int in = reader_try_enter(l, &s);
    if (in != EBUSY) {
      if (in < 0) continue; /* lost a race: look again */
      return in;            /* 0 or EAGAIN */
    }
    if (spins < SPINS) {
      spins++;
      rm_cpu_relax();
      continue;
    }
    int e = deadline_status(clk, abstime);
    if (e) return e;
    uint32_t seq = rm_atomic_load_acquire(&l->rseq); /* (E) */
    /* Look at the state again *after* reading the sequence: a waker that
     * cleared RPARKED before this load bumped rseq after it (F). */
    s = rm_atomic_load_relaxed(&l->state);
    if (rm_futexrw_reader_may_enter(l, s)) continue;
    if (!(s & RM_FUTEXRW_RPARKED) &&
        !rm_atomic_cas_acq_rel(&l->state, &s, s | RM_FUTEXRW_RPARKED))
      continue; /* the state moved: look again */
    RM_DEBUG_YIELD();
    int r = rm_futex_wait(&l->rseq, seq, clk, abstime, shared(l));
    if (r == ETIMEDOUT) {
      /* One last look: the lock may have become free as we timed out. */
      s = rm_atomic_load_relaxed(&l->state);
      return reader_try_enter(l, &s) == 0 ? 0 : ETIMEDOUT;
    }
    if (r == EINVAL) return EINVAL;
  }
}

/* A registered writer leaves without the lock (time-out): unregister, and
 * pass on what it may have been given. */
static void writer_give_up(rm_futexrw_t *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->state), n;
  bool wake_r;
  do {
    n = s - RM_FUTEXRW_WWAIT_ONE;
    wake_r = false;
    /* Under writer preference readers may have parked only because writers
     * waited; if we were the last one and no writer holds, let them in. */
    if ((n & RM_FUTEXRW_RPARKED) && !(n & RM_FUTEXRW_WRITER) && !(n & RM_FUTEXRW_WWAIT_MASK)) {
      n &= ~RM_FUTEXRW_RPARKED;
      wake_r = true;
    }
  } while (!rm_atomic_cas_acq_rel(&l->state, &s, n));
  if (wake_r) wake_readers(l);
  /* We may have consumed a wake meant for a writer: hand it on. */
  if ((n & RM_FUTEXRW_WWAIT_MASK) && !(n & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX)))
    wake_writer(l);
}

RM_API int rm_futexrw_write_lock_slowpath(rm_futexrw_t *l, int clk, const struct timespec *abstime) {
  bool registered = false;
  unsigned spins = 0;
  for (;;) {
    uint64_t s = rm_atomic_load_relaxed(&l->state);
    if (!(s & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX))) {
      uint64_t n = (s | RM_FUTEXRW_WRITER) - (registered ? RM_FUTEXRW_WWAIT_ONE : 0);
      if (rm_atomic_cas_acquire(&l->state, &s, n)) return 0; /* (C) */
      continue;
    }
    if (spins < SPINS) {
      spins++;
      rm_cpu_relax();
      continue;
    }
    int e = deadline_status(clk, abstime);
    if (e) {
      if (registered) writer_give_up(l);
      return e;
    }
    if (!registered) {
      /* Count ourselves: under writer preference new readers now wait. */
      if (rm_atomic_cas_acq_rel(&l->state, &s, s + RM_FUTEXRW_WWAIT_ONE)) registered = true;
      continue;
    }
    uint32_t seq = rm_atomic_load_acquire(&l->wseq); /* (E) */
    s = rm_atomic_load_acquire(&l->state);
    if (!(s & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX))) continue;
    RM_DEBUG_YIELD();
    int r = rm_futex_wait(&l->wseq, seq, clk, abstime, shared(l));
    if (r == EINVAL) {
      writer_give_up(l);
      return EINVAL;
    }
    /* 0, EAGAIN, EINTR, ETIMEDOUT: loop; the deadline check above decides. */
  }
}

RM_API int rm_futexrw_read_unlock_slowpath(rm_futexrw_t *l, uint64_t old) {
  (void)old;
  /* We were the last reader and writers wait: wake one. */
  wake_writer(l);
  return 0;
}

RM_API int rm_futexrw_write_unlock_slowpath(rm_futexrw_t *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->state), n;
  bool wake_r;
  do {
    /* The inline half saw WRITER; only a racing unlock of another thread
     * (misuse) can have cleared it since. */
    if (RM_UNLIKELY(!(s & RM_FUTEXRW_WRITER))) {
      RM_ASSERT(0, "write unlock of %p, which is not write-held", (void *)l);
      return EPERM;
    }
    n = s & ~RM_FUTEXRW_WRITER;
    wake_r = false;
    if ((n & RM_FUTEXRW_RPARKED) &&
        (l->kind != RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE || !(n & RM_FUTEXRW_WWAIT_MASK))) {
      n &= ~RM_FUTEXRW_RPARKED;
      wake_r = true;
    }
    /* (D) release, as in the fast path. */
  } while (!__atomic_compare_exchange_n(&l->state, &s, n, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  if (wake_r) wake_readers(l);
  if (n & RM_FUTEXRW_WWAIT_MASK) wake_writer(l);
  return 0;
}
