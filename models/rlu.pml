/*
 * rlu.pml - read-log-update (src/rlu.c, include/readmostly/rlu.h): section
 * entry (run counter odd, the gate, the clock load, the local clock),
 * dereference (steal the copy when its writer's write clock is at or below
 * the section's local clock), a writer's section (try_lock of two objects,
 * the copies), its commit (the clock step under clock_lock, the fence W3,
 * synchronize, write-back, unlocks, the write clock reset W4), and the
 * fence-free entry: readers skip the fence while RLU's gate is open, a
 * synchronize settles a context before its membarrier only by a local
 * clock at or past its write clock, and the automatic close (gate shut,
 * one membarrier, fence_free = 0) at any moment.
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).
 *
 * Threads: readers 0 .. NR-1, then writers (NW), then with CLOSE a thread
 * that closes the fence-free entry.  Every reader and writer is a context
 * (a run counter and a local clock); every synchronize scans every other
 * context.  Objects A and B start at 1; writer 0 locks both in one section
 * and its copies hold 2.  With NW = 2, writer 1 commits a section of its
 * own on an object no reader reads (it only steps the clock and
 * synchronizes).  Each reader runs RITER sections that read A, then B.
 * FF: the fence-free entry (the gate open, fence_free = 1); without it the
 * paper's fenced entry (the gate closed, fence_free = 0).
 *
 * Property: no torn view (a section reads A and B both old or both new:
 * the assertion at its end), and no invalid end state (every section
 * ends, every synchronize returns).
 *
 * LIVE: readers run sections for ever (their run counters count modulo 4,
 * which keeps the parity that marks a section), and the LTL property
 * writers_finish (<> every writer wrote back and unlocked) is checked
 * with pan -a -f: under weak fairness every synchronize returns however
 * the readers' sections interleave with it.
 *
 * Mutants (-DMUTANT_x):
 *  naive_clock          the paper's and the reference's commit: read the
 *                       clock, publish write clock + 1, then increment the
 *                       clock, without clock_lock (the write-clock race,
 *                       docs/rlu.md; needs NW = 2)
 *  no_gate              the fence-free entry tests the fence_free word
 *                       instead of the gate (needs CLOSE): an entry that
 *                       read 1 after the close's membarrier skips its
 *                       fence, and writers that read 0 trust its stale
 *                       run counter
 *  sync_trusts_counter  the fence-free synchronize trusts run counters
 *                       before its membarrier (the fenced rule, with FF)
 *  moved_settles        the fence-free synchronize settles a context
 *                       whose run counter moved since its first look,
 *                       before the membarrier (the torn section of
 *                       docs/rlu.md; needs FF and RITER = 2)
 *  sync_before_step     synchronize loads the run counters before the
 *                       clock step and its fence (fenced entry)
 *  no_entry_fence       the fenced entry without its fence (R1)
 *  wait_outside (LIVE)  synchronize waits until it sees the reader between
 *                       two sections (an even run counter) instead of for
 *                       a counter that moved or a clock that caught up: a
 *                       reader that runs sections for ever is between two
 *                       only for a moment, which weak fairness does not
 *                       promise the writer will see (an acceptance cycle)
 */
#ifndef NR
#define NR 2
#endif
#ifndef NW
#define NW 1
#endif
#ifdef CLOSE
#define NCL 1
#ifndef FF
#define FF
#endif
#else
#define NCL 0
#endif
#define NCTX (NR + NW)
#define NPROC (NCTX + NCL)
#ifndef RITER
#define RITER 1
#endif

/* shared words */
#define CLK 0          /* rm_rlu_global.clock */
#define CLKLOCK 1      /* g.clock_lock */
#define GATE 2         /* rm_rlu_dom.gate: 0 open, 1 closed */
#define FFW 3          /* rm_rlu_global.fence_free */
#define VA 4           /* object A */
#define VB 5           /* object B */
#define HA 6           /* A's header: 0 unlocked, else the locking thread + 1 */
#define HB 7
#define CA 8           /* writer 0's copies of A and B */
#define CB 9
#define RC(i) (10 + (i))              /* context i: run counter */
#define LC(i) (10 + NCTX + (i))       /* ... local clock */
#define WC(j) (10 + 2 * NCTX + (j))   /* writer j: write clock */
#define NVAR (10 + 2 * NCTX + NW)

#define INF 255

#include "tso.pml"

byte done;
byte wdone;        /* writers that finished (LIVE) */
#ifdef LIVE
ltl writers_finish { <> (wdone == NW) }
#define NEXT(n) skip                 /* sections for ever */
#define RCINC(rc) rc = (rc + 1) & 3  /* the parity is what counts */
#else
#define NEXT(n) n++
#define RCINC(rc) rc++
#endif

/* rm_rlu_reader_lock: R1 (run counter odd), the gate, R2 (clock), R4. */
inline ENTER(t, rc, g, l) {
  RCINC(rc);
  ST(t, RC(t), rc);                          /* R1: run counter odd */
#ifndef MUTANT_no_gate
  LD(t, GATE, g);                            /* the gate */
  if
  :: g != 0 ->
#ifndef MUTANT_no_entry_fence
     FENCE(t)
#else
     skip
#endif
  :: else
  fi;
#else
  LD(t, FFW, g);                             /* the option word instead */
  if
  :: g == 0 -> FENCE(t)
  :: else
  fi;
#endif
  LD(t, CLK, l);                             /* R2 */
  ST(t, LC(t), l)                            /* R4 */
}

/* rm_rlu_dereference + rm_rlu_deref_slowpath for object (H, V, C). */
inline DEREF(t, H, V, C, l, h, w, v) {
  LD(t, H, h);                               /* L1 */
  if
  :: h == 0 -> LD(t, V, v)
  :: else ->
     LD(t, WC(h - 1 - NR), w);               /* D1: the owner's write clock */
     if
     :: w <= l -> LD(t, C, v)                /* steal the copy */
     :: else -> LD(t, V, v)
     fi
  fi
}

proctype Reader(byte t) {
  byte rc, g, l, h, w, va, vb, n;
  n = 0;
  do
  :: n < RITER ->
     ENTER(t, rc, g, l);
     DEREF(t, HA, VA, CA, l, h, w, va);
     DEREF(t, HB, VB, CB, l, h, w, vb);
     assert(va == vb);                       /* no torn view */
     RCINC(rc);
     ST(t, RC(t), rc);                       /* R3: rm_rlu_reader_unlock */
     NEXT(n)
  :: else -> break
  od;
  done++
}

/* report_clock (R5): the writer's own local clock. */
inline REPORT(t, v, mylc) {
  LD(t, CLK, v);
  if
  :: v > mylc -> mylc = v; ST(t, LC(t), v)
  :: else
  fi
}

/* wait_section: for context o with run counter r. */
inline WAITSEC(t, o, r, wc) {
  if
  :: (r & 1) != 0 && SEEN(t, LC(o)) < wc ->
#ifndef MUTANT_wait_outside
     (SEEN(t, RC(o)) != r || SEEN(t, LC(o)) >= wc)   /* S1, S2 */
#else
     ((SEEN(t, RC(o)) & 1) == 0)
#endif
  :: else
  fi
}

/* clock_step: W1, W2 under clock_lock. */
inline CLOCK_STEP(t, j, v, wc) {
#ifndef MUTANT_naive_clock
  atomic { sbn[t] == 0 && mem[CLKLOCK] == 0 -> mem[CLKLOCK] = 1 };
  LD(t, CLK, v);
  wc = v + 1;
  ST(t, WC(j), wc);                          /* W1 */
  ST(t, CLK, wc);                            /* W2 */
  ST(t, CLKLOCK, 0)
#else
  LD(t, CLK, v);
  wc = v + 1;
  ST(t, WC(j), wc);
  XADD(t, CLK, 1, v)
#endif
}

proctype Writer(byte t) {
  byte j, rc, g, l, v, wc, o, r, ff, unsure, mb, mylc;
#if defined(MUTANT_sync_before_step) || defined(MUTANT_moved_settles)
  byte rs[NCTX];
#endif
  j = t - NR;
  /* the section: lock A and B, write the copies */
  ENTER(t, rc, g, l);
  mylc = l;
  if
  :: j == 0 ->
     CAS(t, HA, 0, t + 1, v); assert(v == 0); /* L2: rm_rlu_try_lock */
     ST(t, CA, 2);
     CAS(t, HB, 0, t + 1, v); assert(v == 0);
     ST(t, CB, 2)
  :: else                                     /* an object no reader reads */
  fi;
  rc++;
  ST(t, RC(t), rc);                           /* R3, then the commit */
#ifdef MUTANT_sync_before_step
  o = 0;
  do
  :: o < NCTX -> if :: o != t -> LD(t, RC(o), rs[o]) :: else fi; o++
  :: else -> o = 0; break
  od;
#endif
  CLOCK_STEP(t, j, v, wc);
  FENCE(t);                                   /* W3 */
  /* synchronize */
  REPORT(t, v, mylc);
  LD(t, FFW, ff);                             /* readers_unfenced */
#ifdef MUTANT_sync_trusts_counter
  ff = 0;
#endif
  unsure = 0;
  o = 0;
  do
  :: o < NCTX ->
     if
     :: o == t -> skip
     :: o != t && ff != 0 ->
#ifdef MUTANT_moved_settles
        LD(t, RC(o), rs[o]);
#endif
        if
        :: SEEN(t, LC(o)) < wc -> unsure = unsure | (1 << o)   /* not reported */
        :: else
        fi
     :: o != t && ff == 0 ->
#ifndef MUTANT_sync_before_step
        LD(t, RC(o), r);                      /* S1 */
#else
        r = rs[o];
#endif
        WAITSEC(t, o, r, wc)
     fi;
     o++
  :: else -> o = 0; break
  od;
  if
  :: unsure != 0 ->
     REPORT(t, v, mylc);                      /* a polling round */
     o = 0;
     do
     :: o < NCTX ->
        if
        :: (unsure & (1 << o)) != 0 && SEEN(t, LC(o)) >= wc -> unsure = unsure & ~(1 << o)
#ifdef MUTANT_moved_settles
        :: (unsure & (1 << o)) != 0 && SEEN(t, RC(o)) != rs[o] -> unsure = unsure & ~(1 << o)
#endif
        :: else
        fi;
        o++
     :: else -> o = 0; break
     od;
     if
     :: unsure != 0 ->
        MEMBARRIER(t, mb);                    /* W5 */
        o = 0;
        do
        :: o < NCTX ->
           if
           :: (unsure & (1 << o)) != 0 -> LD(t, RC(o), r); WAITSEC(t, o, r, wc)
           :: else
           fi;
           o++
        :: else -> o = 0; break
        od
     :: else
     fi
  :: else
  fi;
  /* write-back and unlock (L3), then W4 */
  if
  :: j == 0 ->
     ST(t, VA, 2); ST(t, HA, 0);
     ST(t, VB, 2); ST(t, HB, 0)
  :: else
  fi;
  ST(t, WC(j), INF);                          /* W4 */
  wdone++;
  done++
}

/* close_fence_free: the gate shut (RMW), one membarrier, fence_free = 0. */
proctype Closer(byte t) {
  byte mb;
  OR(t, GATE, 1);
  MEMBARRIER(t, mb);
  ST(t, FFW, 0);
  done++
}

init {
  byte i;
  mem[VA] = 1;
  mem[VB] = 1;
  i = 0;
  do
  :: i < NW -> mem[WC(i)] = INF; i++
  :: else -> i = 0; break
  od;
#ifdef FF
  mem[GATE] = 0;
  mem[FFW] = 1;
#else
  mem[GATE] = 1;
  mem[FFW] = 0;
#endif
  atomic {
    RUN_DRAINERS();
    i = 0;
    do
    :: i < NR -> run Reader(i); i++
    :: i >= NR && i < NCTX -> run Writer(i); i++
    :: else -> break
    od;
#ifdef CLOSE
    run Closer(NCTX);
#endif
  }
  done == NPROC
}
