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
#define NVAR 7

#define LOCKED 1
#define HANDOFF 2
#define WAITER 4

#include "tso.pml"

#define REC(t) ((t) == 0 -> 0 : 1)   /* a thread's record (reader 0, writer 2) */

byte nin;         /* ghost: readers inside a read section */
bool wcs;         /* ghost: a writer is inside */
byte done;

inline report(t, v, s) {      /* rm_fcp_report */
  LD(t, VER, v);
  LD(t, S(REC(t)), s);
  if
  :: s != v -> ST(t, S(REC(t)), v)
  :: else
  fi
}

/* Reader 0: the passive read lock (fcp.pml's reader, mode NOFENCE) and
 * wait_writer. */
proctype Passive() {
  byte w, v, s;
  do
  :: ST(0, P(0), 1);                      /* rm_fcp_enter: R1 */
     LD(0, W, w);                         /* R2 */
     if
     :: (w & LOCKED) == 0 -> break
     :: else ->
        ST(0, P(0), 0);                   /* back out: rm_fcp_leave */
        report(0, v, s);
        (SEEN(0, W) & LOCKED) == 0        /* wait_writer */
     fi
  od;
  skip;
  d_step { nin++; assert(!wcs) };
  nin--;
  ST(0, P(0), 0);                         /* U1 */
  report(0, v, s);
  done++
}

/* Reader 1: active_lock, rm_prwlock_active_unlock. */
proctype Active() {
  byte w, a;
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
        XADD(TA, ACT, 255, a);            /* active_unlock: - 1 */
        (SEEN(TA, W) & LOCKED) == 0       /* wait_writer */
     fi
  od;
  skip;
  d_step { nin++; assert(!wcs) };
  nin--;
  XADD(TA, ACT, 255, a);
  done++
}

/* consensus(): rm_fcp_begin, rm_fcp_wait (fcp.pml), wait_active. */
inline consensus(t, v, s, i, pending, mb) {
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
  SEEN(t, ACT) == 0                       /* wait_active (target 0) */
}

proctype Writer(byte t) {
  byte s, v, sv, i, pending, mb, a;
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
  :: !passed -> consensus(t, v, sv, i, pending, mb)
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
#ifdef MUTANT_downgrade_active_late
        XADD(t, ACT, 1, a);
#endif
        nin--;
        XADD(t, ACT, 255, a)
     :: goto unlock
     fi;
     goto out
  :: else
  fi;
unlock:
  wcs = 0;
  /* rm_prwlock_write_unlock: pass to a waiter, or free */
#ifndef MUTANT_pass_two_steps
  atomic {
    sbn[t] == 0 ->
    s = mem[W];
    if
    :: s >= WAITER -> mem[W] = s | HANDOFF
    :: else -> mem[W] = s & ~LOCKED
    fi
  };
#else
  atomic { sbn[t] == 0 -> s = mem[W]; mem[W] = s & ~LOCKED };
  if
  :: s >= WAITER -> atomic { sbn[t] == 0 -> mem[W] = mem[W] | LOCKED | HANDOFF }
  :: else
  fi;
#endif
out:
  done++
}

init {
  atomic {
    RUN_DRAINERS();
    run Passive();
#if NACT
    run Active();
#endif
    run Writer(TW2);
#if NWR > 1
    run Writer(TW3)
#endif
  }
  done == NPROC;
  assert(!wcs)
}
