/*
 * rlu_defer.pml - RLU's deferral (src/rlu.c, max_defer > 1): a writer's
 * section ends without a commit, its objects stay locked and its copies
 * private (write clock infinite) in the log; a conflicting writer's
 * try_lock finds an object locked, sets the owner's sync_request and
 * aborts; the owner's next checkpoint flushes (commit: the clock step,
 * the fence W3, synchronize, write-back and unlocks, the write clock
 * reset W4), and the conflicting writer's retry locks the written-back
 * object.  The entry is the fenced one (the fence-free entry and its
 * synchronize are rlu.pml's).
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).
 *
 * Threads (each a context: a run counter and a local clock): reader 0
 * runs RITER sections that read A, then B; writer 1 runs one section that
 * adds 1 to A and to B and defers it (its sync_request not set yet: the
 * section stays in the log), then either its checkpoint sees the request
 * and flushes, or (no request came: the other writer never met its locks)
 * its exit flushes after the other writer is done; writer 2 runs
 * sections that add 2 to A until one commits (a try_lock that finds A
 * locked asks the owner to flush, aborts, waits until A is unlocked and
 * retries; its own section commits at once, rm_rlu_sync).  Objects start
 * at 1.
 *
 * Property: no torn view (a section reads A and B with the same parity:
 * writer 1's section changes both by 1, writer 2's A by 2); nothing
 * committed is lost (A = 4, B = 2 at the end); no invalid end state.
 *
 * Mutants (-DMUTANT_x):
 *  defer_unlocks   the deferral unlocks the section's objects (L3, no
 *                  write-back): writer 2 locks A and copies the original,
 *                  and the two commits overwrite each other (lost update)
 *  flush_wb_first  the flush writes the deferred log back (and unlocks)
 *                  before the clock step and synchronize: a section that
 *                  read the old clock reads A written back and B original
 *  no_request      the conflicting try_lock does not set the owner's
 *                  sync_request: the owner keeps its locks, the
 *                  conflicting writer waits for them for ever
 */
#ifndef RITER
#define RITER 1
#endif
#define NR 1
#define NCTX 3
#define NPROC 3
#define TW1 1
#define TW2 2

/* shared words */
#define CLK 0          /* rm_rlu_global.clock */
#define CLKLOCK 1      /* g.clock_lock */
#define VA 2           /* object A */
#define VB 3           /* object B */
#define HA 4           /* A's header: 0 unlocked, else the locking context + 1 */
#define HB 5
#define CA1 6          /* writer 1's copies of A and B */
#define CB1 7
#define CA2 8          /* writer 2's copy of A */
#define SREQ 9         /* writer 1's sync_request */
#define RC(i) (10 + (i))             /* context i: run counter */
#define LC(i) (10 + NCTX + (i))      /* ... local clock */
#define WC(t) (10 + 2 * NCTX + (t) - 1)   /* writer t: write clock */
#define NVAR (10 + 2 * NCTX + 2)

#define INF 255

#include "tso.pml"

byte done;
bool w2done;      /* ghost: writer 2 has committed (writer 1's exit may come) */

/* rm_rlu_reader_lock, fenced: R1, the fence, R2, R4. */
inline ENTER(t, rc, l) {
  rc++;
  ST(t, RC(t), rc);                          /* R1: run counter odd */
  FENCE(t);
  LD(t, CLK, l);                             /* R2 */
  ST(t, LC(t), l)                            /* R4 */
}

/* rm_rlu_dereference of A or B: the copy of the owner when its write
 * clock is at or below our local clock. */
inline DEREF_A(t, l, h, w, v) {
  LD(t, HA, h);                              /* L1 */
  if
  :: h == 0 -> LD(t, VA, v)
  :: h != 0 ->
     LD(t, WC(h - 1), w);                    /* D1 */
     if
     :: w <= l && h - 1 == TW1 -> LD(t, CA1, v)
     :: w <= l && h - 1 == TW2 -> LD(t, CA2, v)
     :: else -> LD(t, VA, v)
     fi
  fi
}
inline DEREF_B(t, l, h, w, v) {
  LD(t, HB, h);
  if
  :: h == 0 -> LD(t, VB, v)
  :: h != 0 ->
     LD(t, WC(h - 1), w);
     if
     :: w <= l -> LD(t, CB1, v)
     :: else -> LD(t, VB, v)
     fi
  fi
}

proctype Reader(byte t) {
  byte rc, l, h, w, va, vb, n;
  n = 0;
  do
  :: n < RITER ->
     ENTER(t, rc, l);
     DEREF_A(t, l, h, w, va);
     DEREF_B(t, l, h, w, vb);
     assert(((va + vb) & 1) == 0);           /* no torn view */
     rc++;
     ST(t, RC(t), rc);                       /* R3 */
     n++
  :: else -> break
  od;
  done++
}

/* clock_step under clock_lock (W1, W2), then W3. */
inline CLOCK_STEP(t, v, wc) {
  atomic { sbn[t] == 0 && mem[CLKLOCK] == 0 -> mem[CLKLOCK] = 1 };
  LD(t, CLK, v);
  wc = v + 1;
  ST(t, WC(t), wc);                          /* W1 */
  ST(t, CLK, wc);                            /* W2 */
  ST(t, CLKLOCK, 0);
  FENCE(t)                                   /* W3 */
}

/* synchronize, fenced rule: wait for every other context in a section
 * that began before the step (odd run counter, local clock below wc). */
inline SYNC(t, wc, o, r) {
  o = 0;
  do
  :: o < NCTX ->
     if
     :: o != t ->
        LD(t, RC(o), r);                     /* S1 */
        if
        :: (r & 1) != 0 && SEEN(t, LC(o)) < wc ->
           (SEEN(t, RC(o)) != r || SEEN(t, LC(o)) >= wc)   /* wait_section: S1, S2 */
        :: else
        fi
     :: else
     fi;
     o++
  :: else -> o = 0; break
  od
}

/* Writer 1's write-back of its deferred section (entry_write_back: the
 * copy, then L3). */
inline WB1(t, v) {
  LD(t, CA1, v); ST(t, VA, v); ST(t, HA, 0);
  LD(t, CB1, v); ST(t, VB, v); ST(t, HB, 0)
}

/* flush -> commit of writer 1's deferred section. */
inline FLUSH1(t, v, wc, o, r) {
  ST(t, SREQ, 0);                            /* commit clears the request first */
#ifdef MUTANT_flush_wb_first
  WB1(t, v);
#endif
  CLOCK_STEP(t, v, wc);
  SYNC(t, wc, o, r);
#ifndef MUTANT_flush_wb_first
  WB1(t, v);
#endif
  ST(t, WC(t), INF)                          /* W4 */
}

/* try_lock of an object for writer t: c = 0 locked by us, else the old
 * header (the owner + 1). */
inline TRYLOCK(t, H, c) {
  LD(t, H, c);                               /* L1 again */
  if
  :: c == 0 -> CAS(t, H, 0, t + 1, c)        /* L2 */
  :: else
  fi
}

proctype Writer1() {
  byte rc, l, c, v, wc, o, r;
  /* the section: lock A and B, their copies + 1 */
  do
  :: ENTER(TW1, rc, l);
     TRYLOCK(TW1, HA, c);
     if
     :: c == 0 ->
        LD(TW1, VA, v); ST(TW1, CA1, v + 1);   /* the memcpy and the change */
        TRYLOCK(TW1, HB, c); assert(c == 0);   /* nobody else locks B */
        LD(TW1, VB, v); ST(TW1, CB1, v + 1);
        break
     :: else ->                                /* A is writer 2's: abort, wait, retry */
        rc++; ST(TW1, RC(TW1), rc);
        SEEN(TW1, HA) == 0
     fi
  od;
  rc++;
  ST(TW1, RC(TW1), rc);                        /* R3 */
  /* rm_rlu_reader_unlock_slowpath: deferred (1 < max_defer), unless a
   * request came already */
  LD(TW1, SREQ, v);
  if
  :: v != 0 -> FLUSH1(TW1, v, wc, o, r)
  :: else ->
#ifdef MUTANT_defer_unlocks
     ST(TW1, HA, 0); ST(TW1, HB, 0);
#endif
     if
     :: SEEN(TW1, SREQ) != 0 -> skip           /* a checkpoint sees the request */
     :: w2done -> skip                         /* no request came: the thread's exit */
     fi;
     FLUSH1(TW1, v, wc, o, r)
  fi;
  done++
}

proctype Writer2() {
  byte rc, l, c, v, wc, o, r;
  do
  :: ENTER(TW2, rc, l);
     TRYLOCK(TW2, HA, c);
     if
     :: c == 0 -> break
     :: else ->                               /* locked by writer 1 */
#ifndef MUTANT_no_request
        ST(TW2, SREQ, 1);                     /* ask the owner to flush */
#endif
        rc++; ST(TW2, RC(TW2), rc);           /* rm_rlu_abort: R3 */
        SEEN(TW2, HA) == 0                    /* wait for its unlocks, retry */
     fi
  od;
  LD(TW2, VA, v); ST(TW2, CA2, v + 2);
  rc++;
  ST(TW2, RC(TW2), rc);                       /* R3 */
  /* commit at once */
  CLOCK_STEP(TW2, v, wc);
  SYNC(TW2, wc, o, r);
  LD(TW2, CA2, v); ST(TW2, VA, v); ST(TW2, HA, 0);
  ST(TW2, WC(TW2), INF);                      /* W4 */
  FENCE(TW2);
  w2done = 1;
  done++
}

init {
  mem[VA] = 1;
  mem[VB] = 1;
  mem[WC(TW1)] = INF;
  mem[WC(TW2)] = INF;
  atomic {
    RUN_DRAINERS();
    run Reader(0);
    run Writer1();
    run Writer2()
  }
  done == NPROC;
  /* nothing committed is lost (the last stores may still be buffered) */
  sbn[0] == 0 && sbn[1] == 0 && sbn[2] == 0;
  assert(mem[VA] == 4 && mem[VB] == 2)
}
