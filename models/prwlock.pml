/*
 * prwlock.pml - the passive reader-writer lock beyond its passive fast
 * path (src/prwlock.c, include/readmostly/prwlock.h): the writer word with
 * LOCKED, HANDOFF and the count of waiting writers, active readers (the
 * `active` count, a Dekker with the writer's word and its wait_active),
 * writer preference (readers stay out while LOCKED is set, also while a
 * waiting writer takes it by passing), passing (a write unlock with
 * waiters sets HANDOFF and the taker runs no consensus), and downgrade
 * (the writer becomes a reader, passive or active, and frees the word
 * without passing it).  The consensus is fcp.pml's (version bump, reports,
 * one membarrier, released()).
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).
 *
 * Threads: reader 0 (passive: R1, R2, back-out and wait), then reader 1
 * (active: TA), then writer 2 (TW2), and with PASS or FULL writer 3 (TW3).
 * PASS leaves the active reader out (passing needs the second writer; all
 * four threads, FULL, are 11.9 million states: too many for CI).  Writer 2
 * either unlocks or downgrades (to a passive hold in its record, or, as
 * when its record holds another lock, to an active one) and then
 * read-unlocks.  Records: reader 0's and writer 2's; a writer's consensus
 * skips its own.  Each thread locks once.
 *
 * Property: mutual exclusion between writers, and between a writer and
 * every reader (passive, active, downgraded), on the ghosts nin (readers
 * inside) and wcs; no invalid end state (no deadlock; every thread finishes).
 *
 * Mutants (-DMUTANT_x):
 *  active_no_recheck      the active reader does not load the word after
 *                         its increment (active_lock)
 *  downgrade_active_late  the downgrade counts itself active after freeing
 *                         the word (rm_prwlock_downgrade; needs PASS)
 *  pass_two_steps         (PASS) the write unlock passes to a waiter in
 *                         two steps, LOCKED cleared, then LOCKED and
 *                         HANDOFF set (rm_prwlock_write_unlock): the word
 *                         is free in between, the waiter takes it there
 *                         with a consensus, and the late HANDOFF is a
 *                         pass nobody takes (readers wait for ever); a
 *                         reader entering in between, whom the taker of
 *                         the pass would not wait for, is the other way
 *                         it fails
 *  downgrade_passes       (PASS) the downgrade passes the word to a
 *                         waiting writer (HANDOFF) instead of freeing it
 *                         unpassed (release_unpassed, invariant 2)
 *  upgrade_counts_self    (UPGRADE) an active upgrader waits for `active`
 *                         to reach 0, counting its own hold: it waits for
 *                         itself for ever
 *  active_no_wait         (LIVE) the active reader that finds LOCKED
 *                         retries at once instead of waiting in
 *                         wait_writer: the writer's wait_active sees
 *                         `active` at 0 only between two retries, and
 *                         under weak fairness it never has to finish
 *  wake_first             (PARK) the write unlock wakes parked readers
 *                         (wake_readers) before the RMW that clears LOCKED:
 *                         a reader woken early reads LOCKED, parks again,
 *                         and the clear that follows wakes nobody
 *
 * UPGRADE: writer 2 read-locks (passively in its record, or actively, as
 * when its record holds another lock) and then upgrades
 * (rm_prwlock_upgrade: LOCKED by CAS, a consensus that skips its own
 * record and leaves its own active count, then its read hold dropped),
 * writes and unlocks.
 *
 * LIVE: both readers take the lock for ever; the LTL property
 * writer_finishes is checked with pan -a -f (weak fairness).
 *
 * PARK: the waits are futex parking instead of blocking guards: a reader
 * in wait_writer loads rseq, sets its rmask bit (RMW), rereads the word and
 * sleeps on rseq; the unlocker (write unlock, downgrade) clears LOCKED,
 * then wake_readers (rmask load, exchange, rseq bumped, futex wake); the
 * writer's wait_active stores `awake`, rereads `active` and sleeps on it,
 * and every active unlock that sees `awake` wakes it.  A futex wait
 * sleeps only if the word still holds the value it was given (checked and
 * queued in one step, as the kernel does under its hash-bucket lock); a
 * wake wakes every sleeper on the word (a group wake-up is one reader,
 * which wakes the rest of its group).  A lost wake-up leaves a thread
 * asleep for ever: an invalid end state.
 */
#if defined(PASS) || defined(FULL)
#define NWR 2
#else
#define NWR 1
#endif
#if defined(PASS)
#define NACT 0
#else
#define NACT 1
#endif
#define NPROC (1 + NACT + NWR)
#define TA 1                /* the active reader (NACT = 1) */
#define TW2 (1 + NACT)      /* writer 2: unlocks or downgrades */
#define TW3 (2 + NACT)      /* writer 3 (NWR = 2) */
#define NREC 2

/* shared words */
#define W 0            /* wstate: LOCKED, HANDOFF, waiting writers above */
#define VER 1          /* the domain's version */
#define ACT 2          /* active */
#define P(i) (3 + (i)) /* record i (0: reader 0's, 1: writer 2's): passive */
#define S(i) (5 + (i)) /* ... seen */
#define RMASK 7        /* rmask (one wake group) */
#define RSEQ 8         /* rseq[0] */
#define AWAKE 9        /* awake */
#define NVAR 10

#define LOCKED 1
#define HANDOFF 2
#define WAITER 4

#include "tso.pml"

#define REC(t) ((t) == 0 -> 0 : 1)   /* a thread's record (reader 0, writer 2) */

byte nin;         /* ghost: readers inside a read section */
byte asleep[4];       /* futex: 1 + the word a thread sleeps on, else 0 */
bool wcs;         /* ghost: a writer is inside */
byte done;
byte wdone;       /* writers finished */

#ifdef LIVE
/* Liveness (pan -a -f, weak fairness): the writer finishes, although
 * both readers take the lock for ever. */
ltl writer_finishes { <> (wdone != 0) }
#endif

inline report(t, v, s) {      /* rm_fcp_report */
  LD(t, VER, v);
  LD(t, S(REC(t)), s);
  if
  :: s != v -> ST(t, S(REC(t)), v)
  :: else
  fi
}

/* rm_futex_wait(addr, val): sleep if the word still holds val (the
 * kernel reads memory, or the caller's own buffered store), until a wake. */
inline FUTEX_WAIT(f_t, f_a, f_v) {
  atomic { if :: SEEN(f_t, f_a) == (f_v) -> asleep[f_t] = (f_a) + 1 :: else fi };
  asleep[f_t] == 0
}
inline FUTEX_WAKE(w_a) {
  d_step {
    if :: asleep[0] == (w_a) + 1 -> asleep[0] = 0 :: else fi;
    if :: asleep[1] == (w_a) + 1 -> asleep[1] = 0 :: else fi;
    if :: asleep[2] == (w_a) + 1 -> asleep[2] = 0 :: else fi;
    if :: asleep[3] == (w_a) + 1 -> asleep[3] = 0 :: else fi
  }
}

/* wait_writer: until LOCKED is clear (w: the word last read). */
inline WAIT_WRITER(t, w, seq) {
#ifndef PARK
  (SEEN(t, W) & LOCKED) == 0
#else
  do
  :: LD(t, RSEQ, seq);
     OR(t, RMASK, 1);                     /* seq_cst RMW, then ... */
     LD(t, W, w);                         /* ... seq_cst load: Dekker with wake_readers */
     if
     :: (w & LOCKED) == 0 -> break
     :: else ->
        FUTEX_WAIT(t, RSEQ, seq);
        FUTEX_WAKE(RSEQ);                 /* my group */
        LD(t, W, w);
        if
        :: (w & LOCKED) == 0 -> break
        :: else
        fi
     fi
  od
#endif
}

/* wake_readers, after the RMW that cleared LOCKED. */
inline WAKE_READERS(t, m) {
#ifdef PARK
  LD(t, RMASK, m);
  if
  :: m != 0 ->
     XCHG(t, RMASK, 0, m);
     XADD(t, RSEQ, 1, m);
     FUTEX_WAKE(RSEQ)
  :: else
  fi
#else
  skip
#endif
}

/* rm_prwlock_active_unlock */
inline ACTIVE_UNLOCK(t, a) {
  XADD(t, ACT, 255, a);                   /* - 1 */
#ifdef PARK
  LD(t, AWAKE, a);
  if
  :: a != 0 -> FUTEX_WAKE(ACT)
  :: else
  fi
#endif
}

/* wait_active: until `active` is tgt. */
inline WAIT_ACTIVE(t, tgt, a) {
#ifndef PARK
  SEEN(t, ACT) == (tgt)
#else
  XCHG(t, AWAKE, 1, a);                   /* seq_cst store */
  do
  :: LD(t, ACT, a);
     if
     :: a == (tgt) -> break
     :: else ->
        FUTEX_WAIT(t, ACT, a);
        LD(t, ACT, a);
        if
        :: a == (tgt) -> break
        :: else
        fi
     fi
  od;
  ST(t, AWAKE, 0)
#endif
}

/* Reader 0: the passive read lock (fcp.pml's reader, mode NOFENCE) and
 * wait_writer. */
proctype Passive() {
  byte w, v, s, seq;
again:
  do
  :: ST(0, P(0), 1);                      /* rm_fcp_enter: R1 */
     LD(0, W, w);                         /* R2 */
     if
     :: (w & LOCKED) == 0 -> break
     :: else ->
        ST(0, P(0), 0);                   /* back out: rm_fcp_leave */
        report(0, v, s);
        WAIT_WRITER(0, w, seq)            /* wait_writer */
     fi
  od;
  skip;
  d_step { nin++; assert(!wcs) };
  nin--;
  ST(0, P(0), 0);                         /* U1 */
  report(0, v, s);
#ifdef LIVE
  goto again;
#endif
  done++
}

/* Reader 1: active_lock, rm_prwlock_active_unlock. */
proctype Active() {
  byte w, a, seq;
again:
  do
  :: XADD(TA, ACT, 1, a);                 /* seq_cst RMW */
#ifndef MUTANT_active_no_recheck
     LD(TA, W, w);                        /* seq_cst load of the word */
#else
     w = 0;
#endif
     if
     :: (w & LOCKED) == 0 -> break
     :: else ->
        ACTIVE_UNLOCK(TA, a);
#ifndef MUTANT_active_no_wait
        WAIT_WRITER(TA, w, seq)           /* wait_writer */
#else
        skip                              /* retry at once */
#endif
     fi
  od;
  skip;
  d_step { nin++; assert(!wcs) };
  nin--;
  ACTIVE_UNLOCK(TA, a);
#ifdef LIVE
  goto again;
#endif
  done++
}

/* consensus(): rm_fcp_begin, rm_fcp_wait (fcp.pml), wait_active. */
inline consensus(t, v, s, i, pending, mb, tgt, a) {
  XADD(t, VER, 1, v); v++;
  FENCE(t);
  pending = 0;
  i = 0;
  do
  :: i < NREC ->
     if
     :: i != REC(t) || t != TW2 ->        /* our own record is skipped */
        LD(t, S(i), s);
        if :: s < v -> pending = 1 :: else fi
     :: else
     fi;
     i++
  :: else -> i = 0; break
  od;
  if
  :: pending != 0 ->
     MEMBARRIER(t, mb);
     i = 0;
     do
     :: i < NREC ->
        if
        :: i != REC(t) || t != TW2 -> (SEEN(t, P(i)) == 0 || SEEN(t, S(i)) >= v)   /* released() */
        :: else
        fi;
        i++
     :: else -> i = 0; break
     od
  :: else
  fi;
  WAIT_ACTIVE(t, tgt, a)                  /* wait_active */
}

proctype Writer(byte t) {
  byte s, v, sv, i, pending, mb, a, m;
  bool passed;
  /* write_wait: take the free word, or count in as a waiter (the spin and
   * the registration are one RMW here) */
  atomic {
    sbn[t] == 0 ->
    s = mem[W];
    if
    :: (s & LOCKED) == 0 -> mem[W] = s | LOCKED; passed = 0
    :: else -> mem[W] = s + WAITER; passed = 1
    fi
  };
  if
  :: passed ->
     do
     :: atomic {
          sbn[t] == 0 && (mem[W] & LOCKED) == 0 ->
          mem[W] = (mem[W] - WAITER) | LOCKED; passed = 0
        } -> break
     :: atomic {
          sbn[t] == 0 && (mem[W] & LOCKED) != 0 && (mem[W] & HANDOFF) != 0 ->
          mem[W] = (mem[W] - WAITER) & ~HANDOFF
        } -> break                        /* passed to us: no consensus */
     od
  :: else
  fi;
  if
  :: !passed -> consensus(t, v, sv, i, pending, mb, 0, a)
  :: else
  fi;
  d_step { assert(!wcs && nin == 0); wcs = 1 };
  if
  :: t == TW2 ->                          /* rm_prwlock_downgrade */
     if
     :: d_step { wcs = 0; nin++ };        /* passive: in our record */
        ST(t, P(1), 1);
#ifndef MUTANT_downgrade_passes
        atomic { sbn[t] == 0 -> mem[W] = mem[W] & ~(LOCKED | HANDOFF) };  /* release_unpassed */
        WAKE_READERS(t, m);
#else
        atomic { sbn[t] == 0 -> if :: mem[W] >= WAITER -> mem[W] = mem[W] | HANDOFF :: else -> mem[W] = mem[W] & ~LOCKED fi };
#endif
        nin--;
        ST(t, P(1), 0);                   /* rm_fcp_leave */
        report(t, v, sv)
     :: d_step { wcs = 0; nin++ };        /* active */
#ifndef MUTANT_downgrade_active_late
        XADD(t, ACT, 1, a);
#endif
        atomic { sbn[t] == 0 -> mem[W] = mem[W] & ~(LOCKED | HANDOFF) };
        WAKE_READERS(t, m);
#ifdef MUTANT_downgrade_active_late
        XADD(t, ACT, 1, a);
#endif
        nin--;
        ACTIVE_UNLOCK(t, a)
     :: goto unlock
     fi;
     goto out
  :: else
  fi;
unlock:
  wcs = 0;
  /* rm_prwlock_write_unlock: pass to a waiter, or free */
#ifndef MUTANT_pass_two_steps
#ifdef MUTANT_wake_first
  WAKE_READERS(t, m);
#endif
  atomic {
    sbn[t] == 0 ->
    s = mem[W];
    if
    :: s >= WAITER -> mem[W] = s | HANDOFF
    :: else -> mem[W] = s & ~LOCKED
    fi
  };
#ifndef MUTANT_wake_first
  if
  :: s < WAITER -> WAKE_READERS(t, m)     /* cleared LOCKED */
  :: else                                 /* passed (the wseq wake-up is not modelled) */
  fi;
#endif
#else
  atomic { sbn[t] == 0 -> s = mem[W]; mem[W] = s & ~LOCKED };
  if
  :: s >= WAITER -> atomic { sbn[t] == 0 -> mem[W] = mem[W] | LOCKED | HANDOFF }
  :: else
  fi;
#endif
out:
#ifdef LIVE
  wdone++;
#endif
  done++
}

#ifdef UPGRADE
/* Writer 2 as a reader that upgrades (rm_prwlock_upgrade). */
proctype Upgrader(byte t) {
  byte s, v, sv, i, pending, mb, a, w, m;
  bool passive;
  /* the read lock: no other writer here, the word is free */
  if
  :: passive = 1; ST(t, P(1), 1); LD(t, W, w)   /* in its record */
  :: passive = 0; XADD(t, ACT, 1, a); LD(t, W, w) /* active */
  fi;
  assert((w & LOCKED) == 0);
  d_step { nin++; assert(!wcs) };
  /* rm_prwlock_upgrade: LOCKED (nobody else takes it here: no EBUSY) */
  atomic { sbn[t] == 0 -> s = mem[W]; assert((s & LOCKED) == 0); mem[W] = s | LOCKED };
  /* the consensus skips our record; an active upgrader leaves its own count */
#ifndef MUTANT_upgrade_counts_self
  consensus(t, v, sv, i, pending, mb, (passive -> 0 : 1), a);
#else
  consensus(t, v, sv, i, pending, mb, 0, a);
#endif
  d_step { nin--; assert(nin == 0 && !wcs); wcs = 1 };   /* a writer now */
  if
  :: passive -> ST(t, P(1), 0); report(t, v, sv)
  :: else -> XADD(t, ACT, 255, a)
  fi;
  wcs = 0;
  atomic { sbn[t] == 0 -> mem[W] = mem[W] & ~LOCKED };  /* rm_prwlock_write_unlock */
  WAKE_READERS(t, m);
  done++
}
#endif

init {
  atomic {
    RUN_DRAINERS();
    run Passive();
#if NACT
    run Active();
#endif
#ifndef UPGRADE
    run Writer(TW2);
#else
    run Upgrader(TW2);
#endif
#if NWR > 1
    run Writer(TW3)
#endif
  }
  done == NPROC;
  assert(!wcs)
}
