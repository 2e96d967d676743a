/*
 * fcp.pml - the FCP consensus core (src/fcp.c, include/readmostly/fcp.h)
 * as a passive reader-writer lock uses it: fence-free readers publish
 * `passive` (R1) and read the writer word (R2); a writer sets its word,
 * bumps the version (rm_fcp_begin), counts reports, issues ONE membarrier
 * for stragglers and waits for records that still hold the lock.  Also: a
 * membarrier that fails after registration (the writer switches the
 * process to fence mode and settles records by barrier_by_threads), and a
 * voluntary switch to fence mode (rm_fcp_switch_to_fence) by another
 * thread at any moment.
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).
 *
 * Threads: readers 0 .. NR-1 (NR = 2), writers NR .. NR+NW-1, and with
 * SWITCH a thread that switches to fence mode.  Each reader takes the lock
 * RITER times, each writer WITER times.
 *
 * Property: mutual exclusion between writers and passive readers (the
 * ghost flags rcs[] and wcs), and no invalid end state (every thread
 * finishes: no deadlock, no lost wake-up of a waiting writer).
 *
 * Mutants (-DMUTANT_x), each a one-statement change of the protocol:
 *  no_membarrier     the writer trusts `passive` after polling reports,
 *                    without the membarrier (rm_fcp_wait)
 *  bump_first        the version bump and its fence come before the writer
 *                    word store (prwlock's writer / rm_fcp_begin)
 *  report_inside     the reader reports its version inside the section
 *                    (before U1; rm_fcp_leave)
 *  lost_trusts       a failed membarrier is treated as done, without the
 *                    switch to fence mode (barrier() in rm_fcp_wait)
 *  switch_no_barrier the switch to fence mode sets WRITERS_FENCE without
 *                    its membarrier (rm_fcp_switch_to_fence)
 *  by_threads_trusts barrier_by_threads skips records (trusts every
 *                    record without a report or a barrier moment)
 *  backout_no_report (LIVE) the reader's back-out gives up its hold
 *                    without a report: a writer whose membarrier came
 *                    before the back-out can only see the record
 *                    released at a moment between two retries, and under
 *                    weak fairness it never has to (an acceptance cycle)
 *
 * LIVE: readers take the lock for ever (a reader that backs out retries
 * at once: wait_writer's spinning), and the LTL property writers_finish
 * (<> every writer finished) is checked with pan -a -f: under weak
 * fairness every writer finishes however readers interleave.
 */
#ifndef NW
#define NW 1
#endif
#define NR 2
#ifdef SWITCH
#define NSW 1
#else
#define NSW 0
#endif
#define NPROC (NR + NW + NSW)
#ifndef RITER
#define RITER 2
#endif
#ifndef WITER
#define WITER 1
#endif

/* shared words */
#define W 0          /* the lock's writer word (prwlock) */
#define VER 1        /* domain version */
#define MODE 2       /* rm_fcp_mode */
#define P(i) (3 + (i)) /* record i: passive */
#define S(i) (5 + (i)) /* record i: seen */
#define NVAR 7

#define NOFENCE 1
#define SWITCHED 2
#define WFENCE 4
#define LOST 16

#include "tso.pml"

bool rcs[NR];  /* ghost: reader i is inside its passive section */
bool wcs;      /* ghost: a writer is inside */
byte done;     /* threads finished */
byte wdone;    /* writers finished */

#ifdef LIVE
/* Liveness (run with pan -a -f, weak fairness): every writer finishes,
 * although readers take the lock for ever. */
ltl writers_finish { <> (wdone == NW) }
#endif

inline reader_fence(t, m) {   /* rm_fcp_reader_fence */
  LD(t, MODE, m);
  if
  :: (m & NOFENCE) == 0 -> FENCE(t)
  :: else
  fi
}

inline report(t, v, s) {      /* rm_fcp_report */
  LD(t, VER, v);
  LD(t, S(t), s);
  if
  :: s != v -> ST(t, S(t), v)
  :: else
  fi
}

proctype Reader(byte t) {
  byte m, w, v, s, n;
  n = 0;
  do
  :: n < RITER ->
     ST(t, P(t), 1);                    /* rm_fcp_enter: R1 */
     reader_fence(t, m);
     LD(t, W, w);                       /* prwlock read lock: R2 */
     if
     :: w == 0 ->
        d_step { rcs[t] = 1; assert(!wcs) };   /* the read section begins */
#ifdef MUTANT_report_inside
        report(t, v, s);
#endif
        rcs[t] = 0;                     /* ... and ends */
        ST(t, P(t), 0);                 /* rm_fcp_leave: U1 */
#ifndef MUTANT_report_inside
        report(t, v, s);
#endif
     :: else ->
        ST(t, P(t), 0);                 /* back out: rm_fcp_leave, then wait_writer */
#ifndef MUTANT_backout_no_report
        report(t, v, s)                 /* (the active path is not modelled) */
#else
        skip
#endif
     fi;
#ifndef LIVE
     n++
#else
     skip
#endif
  :: else -> break
  od;
  done++
}

/* rm_fcp_switch_to_fence: one way.  barrier_ok: whether membarrier still
 * works (else barrier_by_threads). */
inline switch_to_fence(t, m, vs, mb, i) {
  atomic {
    sbn[t] == 0 ->
    m = mem[MODE];
    if
    :: (m & SWITCHED) == 0 -> mem[MODE] = (m | SWITCHED) & ~NOFENCE
    :: else
    fi
  };
  if
  :: (m & SWITCHED) != 0 ->
     (SEEN(t, MODE) & WFENCE) != 0         /* someone else switches: wait for it */
  :: else ->
#ifndef MUTANT_switch_no_barrier
     if
     :: (SEEN(t, MODE) & LOST) == 0 -> MEMBARRIER(t, mb)
     :: else ->                            /* barrier_by_threads */
        XADD(t, VER, 1, vs); vs++;
        i = 0;
        do
        :: i < NR ->
#ifndef MUTANT_by_threads_trusts
           (SEEN(t, S(i)) >= vs || sbn[i] == 0);  /* reported, or passed a barrier */
#endif
           i++
        :: else -> i = 0; break
        od;
        FENCE(t)
     fi;
#endif
     OR(t, MODE, WFENCE)
  fi
}

proctype Writer(byte t) {
  byte v, m, s, p, mb, i, vs, n, pending;
  n = 0;
  do
  :: n < WITER ->
#ifndef MUTANT_bump_first
     atomic { sbn[t] == 0 && mem[W] == 0 -> mem[W] = 1 };   /* take the writer word (RMW) */
#endif
     XADD(t, VER, 1, v); v++;           /* rm_fcp_begin: seq_cst RMW ... */
     FENCE(t);                          /* ... and the fence */
#ifdef MUTANT_bump_first
     atomic { mem[W] == 0 -> skip };    /* the word after the bump: */
     ST(t, W, 1);                       /* a store (the RMW would fence) */
#endif
     /* rm_fcp_wait */
     LD(t, MODE, m);
     if
     :: (m & WFENCE) != 0 -> goto scan  /* writers_fence_only */
     :: else
     fi;
     pending = 0;
     i = 0;
     do
     :: i < NR -> LD(t, S(i), s); if :: s < v -> pending = 1 :: else fi; i++
     :: else -> i = 0; break
     od;
     if
     :: pending == 0 -> goto enter      /* every record reported v */
     :: else
     fi;
#ifndef MUTANT_no_membarrier
     if
     :: (SEEN(t, MODE) & LOST) == 0 -> MEMBARRIER(t, mb)
#ifdef FAIL
     :: OR(t, MODE, LOST);              /* membarrier fails for good (EPERM) */
#ifndef MUTANT_lost_trusts
        switch_to_fence(t, m, vs, mb, i)
#else
        skip
#endif
#endif
     :: (SEEN(t, MODE) & LOST) != 0 ->
        switch_to_fence(t, m, vs, mb, i)
     fi;
#endif
scan:
     i = 0;
     do
     :: i < NR ->
        (SEEN(t, P(i)) == 0 || SEEN(t, S(i)) >= v);   /* released(): wait_one */
        i++
     :: else -> i = 0; break
     od;
enter: skip;
     d_step { wcs = 1; assert(!rcs[0] && !rcs[1]) };   /* the write section */
     wcs = 0;
     ST(t, W, 0);                       /* unlock: release store */
     n++
  :: else -> break
  od;
#ifdef LIVE
  wdone++;
#endif
  done++
}

proctype Switcher(byte t) {
  byte m, vs, mb, i;
  switch_to_fence(t, m, vs, mb, i);
  done++
}

init {
  mem[MODE] = NOFENCE;                  /* membarrier registered */
  atomic {
    RUN_DRAINERS();
    run Reader(0);
    run Reader(1);
    run Writer(NR);
#if NW > 1
    run Writer(NR + 1);
#endif
#ifdef SWITCH
    run Switcher(NR + NW);
#endif
  }
  done == NR + NW + NSW;
  assert(!wcs)
}
