/*
 * bravo2d.pml - BRAVO-2D (include/readmostly/bravo2d.h, src/bravo.c
 * scan_table): the visible-readers table split into a row per CPU; a
 * reader publishes in its lock's column of the row of the CPU it believes
 * it runs on (a hint: it may be preempted or migrated at any point, so
 * the row is any row), with the second probe (PROBE2) in any slot of the
 * column's probe group, the thread's own first, then the others, in the
 * same row; the unlock clears the
 * slot its token names, wherever the thread runs by then; a revoking
 * writer scans the lock's column (with PROBE2, its whole group) in every row.
 * The property at stake is docs/bravo-future.md's "The ordering
 * argument": which row a reader picked, and which CPU it unlocks on, do
 * not matter.
 *
 * Memory model: tso.pml (x86-TSO store buffers).
 *
 * Threads: readers 0 .. NR-1 (NR at most 3), each taking the lock RITER
 * times, each time in a row chosen nondeterministically (the CPU number it
 * read: stale or not), then the writer, which writes WITER times through
 * the generator's blocking write lock (bravo.pml's base writer).  The
 * table has 2 rows of 2 columns: column 0 is the lock's; with PROBE2 the
 * two columns are the lock's probe group (RM_BRAVO2D_PROBE_GROUP slots in
 * the code: the argument is the same for each slot), and a reader tries
 * first the column its thread's offset picks (a nondeterministic choice
 * here, `col ^ (offset & probe_mask)`), then the other.  Two readers that
 * pick one row and one first column collide: the second takes the other
 * slot (PROBE2) or A's read lock.
 *
 * A is a reader-preference lock in one word, as in bravo.pml (its own
 * correctness assumed); any slow reader may find the inhibit window over
 * and turn the bias on (S1).
 *
 * Property: mutual exclusion between the writer and every reader (ghost
 * flags rcs[] and wcs), and every thread finishes (a slot left holding the
 * lock would keep the writer waiting for ever: an invalid end state).
 *
 * Mutants (-DMUTANT_x):
 *  scan_own_row       the writer scans the column in its own CPU's row
 *                     only (row 0): a reader whose CPU hint was row 1
 *  probe2_unscanned   (PROBE2) the writer scans the lock's column, not
 *                     the rest of its group
 *  unlock_recomputes  the unlock clears the lock's slot in the row of the
 *                     CPU it runs on then (chosen again), not its token's
 *                     slot: a migrated reader leaves its hold in the table
 *                     and clears nothing, or another reader's hold
 */
#ifndef NR
#define NR 2
#endif
#define WT NR            /* the writer's thread */
#define NPROC (NR + 1)
#ifndef RITER
#define RITER 1
#endif
#ifndef WITER
#define WITER 1
#endif
#ifdef PROBE2
#define HASP2 1
#else
#define HASP2 0
#endif

/* shared words */
#define RB 0             /* rm_bravo_bias.rbias: bit 0 BIAS, writers counted in above */
#define RP 1             /* rm_bravo_bias.revoke_pending */
#define AS 2             /* A: readers, or WA when write-held */
#define SL(r, c) (3 + (r) * 2 + (c))  /* row r, column c */
#define NVAR 7

#define BIAS 1
#define REVOKER 2
#define LK 1             /* the lock's address in a slot */
#define WA 128

#include "tso.pml"

bool rcs[NR];  /* ghost: reader i is inside a read section */
bool wcs;      /* ghost: the writer is inside */
byte done;

inline A_RDLOCK(t) { atomic { sbn[t] == 0 && mem[AS] < WA -> mem[AS]++ } }
inline A_RDUNLOCK(t) { atomic { sbn[t] == 0 -> assert(mem[AS] > 0 && mem[AS] < WA); mem[AS]-- } }
inline A_WRLOCK(t) { atomic { sbn[t] == 0 && mem[AS] == 0 -> mem[AS] = WA } }
inline A_WRUNLOCK(t) { atomic { sbn[t] == 0 -> mem[AS] = 0 } }

inline SLOW_BIAS(t, b, v) {
  LD(t, RB, b);
  if
  :: b != 0 -> skip
  :: b == 0 ->
     if
     :: skip
     :: CAS(t, RB, 0, BIAS, v)                  /* (S1) */
     fi
  fi
}

proctype Reader(byte t) {
  byte b, v, row, tok, n, c;
  bool fast;
  n = 0;
  do
  :: n < RITER ->
     /* rm_bravo2d_read_fast_body */
     fast = 0;
     tok = 0;
     LD(t, RB, b);                              /* (R0) */
     if
     :: (b & BIAS) == 0 -> skip                 /* bias off: slow */
     :: else ->
        if                                      /* rm_bravo2d_row: the CPU hint */
        :: row = 0
        :: row = 1
        fi;
        c = 0;                                  /* the thread's offset in the group */
        if :: HASP2 -> if :: c = 1 :: skip fi :: else fi;
        CAS(t, SL(row, c), 0, LK, v);           /* (R1) */
        if
        :: v == 0 -> tok = SL(row, c)
        :: v != 0 && HASP2 ->
           CAS(t, SL(row, 1 - c), 0, LK, v);    /* (R1') the rest of the group */
           if :: v == 0 -> tok = SL(row, 1 - c) :: else fi
        :: else
        fi;
        if
        :: tok == 0 -> skip                     /* collision: slow */
        :: else ->
           LD(t, RB, b);                        /* (R2) */
           if
           :: (b & BIAS) != 0 -> fast = 1
           :: else -> ST(t, tok, 0); tok = 0    /* revoked meanwhile: back out */
           fi
        fi
     fi;
     if
     :: fast -> skip
     :: else ->
        A_RDLOCK(t);
        SLOW_BIAS(t, b, v)
     fi;
     d_step { rcs[t] = 1; assert(!wcs) };       /* the read section */
     rcs[t] = 0;
     if
     :: fast ->
#ifndef MUTANT_unlock_recomputes
        ST(t, tok, 0)                           /* (R3) the token's slot */
#else
        if                                      /* the CPU it runs on now */
        :: row = 0
        :: row = 1
        fi;
        if
        :: SEEN(t, SL(row, 0)) == LK -> ST(t, SL(row, 0), 0)
        :: else
        fi
#endif
     :: else -> A_RDUNLOCK(t)
     fi;
     row = 0; tok = 0;
     n++
  :: else -> break
  od;
  done++
}

/* scan_table over a 2D table, mode WAIT: the lock's column in every row
 * (its whole group with the probe): one wait per slot while it holds the
 * lock.  The code reads a group in vector loads first and waits slot by
 * slot only on a group with a nonzero slot; a vector load stands for the
 * seq_cst loads modelled here by x86-TSO's ordering of loads after W1's
 * locked instruction (src/bravo.c, the flat scan's ordering note). */
inline SCAN(t, r) {
  r = 0;
  do
#ifndef MUTANT_scan_own_row
  :: r < 2 ->
#else
  :: r < 1 ->
#endif
     SEEN(t, SL(r, 0)) != LK;
#ifndef MUTANT_probe2_unscanned
     if :: HASP2 -> SEEN(t, SL(r, 1)) != LK :: else fi;
#endif
     r++
  :: else -> r = 0; break
  od
}

proctype Writer(byte t) {
  byte b, p, r, n;
  n = 0;
  do
  :: n < WITER ->
     A_WRLOCK(t);
     LD(t, RB, b); LD(t, RP, p);                /* rm_bravo_write_clear */
     if
     :: b == 0 && p == 0 -> skip
     :: else ->
        A_WRUNLOCK(t);                          /* revoke without A */
        atomic { sbn[t] == 0 -> mem[RB] = (mem[RB] & ~BIAS) + REVOKER };  /* count_in (W1) */
        ST(t, RP, 1);                           /* no fence after: the RMW is one (x86) */
        SCAN(t, r);                             /* (W2, W3) */
        A_WRLOCK(t);
        ST(t, RP, 0);                           /* rm_bravo_revoke_finish */
        atomic { sbn[t] == 0 -> mem[RB] = mem[RB] - REVOKER }   /* count_out */
     fi;
     d_step {                                   /* the write section */
       wcs = 1;
       r = 0;
       do
       :: r < NR -> assert(!rcs[r]); r++
       :: else -> r = 0; break
       od
     };
     wcs = 0;
     A_WRUNLOCK(t);
     n++
  :: else -> break
  od;
  done++
}

init {
  byte i;
  mem[RB] = BIAS;        /* a slow reader set the bias earlier */
  atomic {
    RUN_DRAINERS();
    i = 0;
    do
    :: i < NR -> run Reader(i); i++
    :: else -> break
    od;
    run Writer(WT)
  }
  done == NPROC;
  assert(!wcs)
}
