/*
 * bravo_dyn.pml - BRAVO over the resizable visible-readers table
 * (include/readmostly/bravo_dyn.h, src/bravo_dyn.c): readers publish in
 * the table that `cur` names when they load it, a resize makes another
 * table current and closes the previous one (`old`), and a revoking writer
 * scans `cur` and then `old`.  The property at stake is the header's "WHY
 * A READER PUBLISHED IN THE OLD TABLE IS FOUND": no reader enters through
 * a table that the writer's scan does not cover, however a resize (or two:
 * the second one reuses the first table, closed, and reopens it)
 * interleaves with the reader's load of `cur`, its CAS and its re-check.
 *
 * Memory model: tso.pml (x86-TSO store buffers).  seq_cst loads of `cur`
 * and `old` are plain loads there; seq_cst stores are exchanges (locked
 * instructions, which drain the buffer).
 *
 * Threads: readers 0 .. NR-1 (each with its own slot in each table: a
 * table has NR slots), the writer, the resizer.  Each reader takes the
 * lock RITER times; the writer writes WITER times through the generator's
 * blocking write lock (bravo.pml's base writer: A, then, when the bias or
 * a revocation is there, A given back, the count-in RMW that clears the
 * bias, revoke_pending, the fence, the scan, A again).  The resizer runs
 * RESIZES resizes, each from the current table to the other one (tables 1
 * and 2): finish_old (the sweep that closes every empty slot of `old` by
 * CAS and then stores old = NULL, or EBUSY while a slot holds a reader),
 * old = cur, cur = the other table, the reopening of its CLOSED slots,
 * finish_old again.  Sweeps run under the family's try-lock in the
 * library, by whichever thread holds it; one resizer process stands for
 * them all (their stores are all locked instructions: whose buffer they
 * pass through does not matter).
 *
 * A is a reader-preference lock in one word, as in bravo.pml (its own
 * correctness assumed).  The inhibit window is a nondeterministic choice:
 * any slow reader may find it over and turn the bias back on (S1).
 *
 * Property: mutual exclusion between the writer and every reader (ghost
 * flags rcs[] and wcs); no invalid end state (every thread finishes: a
 * scan never waits for ever, a resize never blocks).
 *
 * Mutants (-DMUTANT_x):
 *  cur_first          the resize stores cur before old (resize_locked):
 *                     a writer loads the new cur, then the old value of
 *                     `old` (NULL), and never scans the table its reader
 *                     published in
 *  writer_old_first   the writer loads old before cur (rm_bravo_dyn_scan):
 *                     a resize between the two loads hides the table that
 *                     became old from both
 *  reopen_first       a reused table's CLOSED slots are reopened before it
 *                     is made cur (resize_locked, RESIZES=2): a reader that
 *                     loaded cur before the first resize publishes in the
 *                     reopened table while it is neither cur nor old
 *  sweep_ignores_readers  finish_old stores old = NULL after a sweep that
 *                     found a slot holding a reader (sweep's `done`)
 *  scan_cur_only      the writer scans cur alone (rm_bravo_dyn_scan)
 */
#ifndef NR
#define NR 1
#endif
#define WT NR            /* the writer's thread */
#define ZT (NR + 1)      /* the resizer's thread */
#define NPROC (NR + 2)
#ifndef RITER
#define RITER 2
#endif
#ifndef WITER
#define WITER 1
#endif
#ifndef RESIZES
#define RESIZES 2
#endif

/* shared words */
#define RB 0             /* rm_bravo_bias.rbias: bit 0 BIAS, writers counted in above */
#define RP 1             /* rm_bravo_bias.revoke_pending */
#define AS 2             /* A: readers, or WA when write-held */
#define CUR 3            /* rm_bravo_dyn.cur: table 1 or 2 */
#define OLD 4            /* rm_bravo_dyn.old: table 1 or 2, 0 for NULL */
#define SLOT(d, i) (5 + ((d) - 1) * NR + (i))  /* slot i of table d */
#define NVAR (5 + 2 * NR)

#define BIAS 1
#define REVOKER 2
#define LK 1             /* the lock's address in a slot */
#define CLOSED 2         /* RM_BRAVO_SLOT_CLOSED */
#define WA 128

#include "tso.pml"

bool rcs[NR];  /* ghost: reader i is inside a read section */
bool wcs;      /* ghost: the writer is inside */
byte done;

inline A_RDLOCK(t) { atomic { sbn[t] == 0 && mem[AS] < WA -> mem[AS]++ } }
inline A_RDUNLOCK(t) { atomic { sbn[t] == 0 -> assert(mem[AS] > 0 && mem[AS] < WA); mem[AS]-- } }
inline A_WRLOCK(t) { atomic { sbn[t] == 0 && mem[AS] == 0 -> mem[AS] = WA } }
inline A_WRUNLOCK(t) { atomic { sbn[t] == 0 -> mem[AS] = 0 } }

/* rm_bravo_read_slow_bias: with A read-held, the bias back on (S1) once
 * the inhibit window is over (a nondeterministic choice), unless a writer
 * is counted in. */
inline SLOW_BIAS(t, b, v) {
  LD(t, RB, b);
  if
  :: b != 0 -> skip
  :: b == 0 ->
     if
     :: skip
     :: CAS(t, RB, 0, BIAS, v)
     fi
  fi
}

proctype Reader(byte t) {
  byte b, v, d, tab, n;
  bool fast;
  n = 0;
  do
  :: n < RITER ->
     /* rm_bravo_dyn_read_fast */
     fast = 0;
     tab = 0;
     LD(t, RB, b);                              /* (R0) */
     if
     :: (b & BIAS) == 0 -> skip                 /* bias off: slow */
     :: else ->
        LD(t, CUR, d);                          /* (Rc) */
        CAS(t, SLOT(d, t), 0, LK, v);           /* (R1) */
        if
        :: v != 0 -> skip                       /* CLOSED (or taken): slow */
        :: else ->
           LD(t, RB, b);                        /* (R2) */
           if
           :: (b & BIAS) != 0 -> fast = 1; tab = d
           :: else -> ST(t, SLOT(d, t), 0)      /* revoked meanwhile: back out */
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
     :: fast -> ST(t, SLOT(tab, t), 0)          /* (R3) release store, the token's slot */
     :: else -> A_RDUNLOCK(t)
     fi;
     d = 0;
     n++
  :: else -> break
  od;
  done++
}

/* scan_slots, mode WAIT, over table d: wait for each slot not to hold the
 * lock. */
inline SCAN(t, d, i) {
  i = 0;
  do
  :: i < NR -> SEEN(t, SLOT(d, i)) != LK; i++
  :: else -> i = 0; break
  od
}

proctype Writer(byte t) {
  byte b, p, c, o, i, n;
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
        /* rm_bravo_dyn_scan: (Wc) cur, then (Wo) old */
#ifndef MUTANT_writer_old_first
        LD(t, CUR, c);
        LD(t, OLD, o);
#else
        LD(t, OLD, o);
        LD(t, CUR, c);
#endif
        SCAN(t, c, i);
#ifndef MUTANT_scan_cur_only
        if
        :: o != 0 && o != c -> SCAN(t, o, i)
        :: else
        fi;
#endif
        A_WRLOCK(t);
        ST(t, RP, 0);                           /* rm_bravo_revoke_finish */
        atomic { sbn[t] == 0 -> mem[RB] = mem[RB] - REVOKER }   /* count_out */
     fi;
     d_step {                                   /* the write section */
       wcs = 1;
       i = 0;
       do
       :: i < NR -> assert(!rcs[i]); i++
       :: else -> i = 0; break
       od
     };
     wcs = 0;
     A_WRUNLOCK(t);
     c = 0; o = 0;
     n++
  :: else -> break
  od;
  done++
}

/* finish_old: sweep old (every empty slot CLOSED by CAS; a slot holding a
 * reader leaves the sweep incomplete), then old = NULL when complete.
 * ok = 1 when no old table remains. */
inline FINISH_OLD(t, o, i, v, ok) {
  LD(t, OLD, o);
  ok = 1;
  if
  :: o == 0 -> skip
  :: else ->
     i = 0;
     do
     :: i < NR ->
        LD(t, SLOT(o, i), v);
        if
        :: v == CLOSED -> skip
        :: v == 0 ->
           CAS(t, SLOT(o, i), 0, CLOSED, v);
           if :: v != 0 -> ok = 0 :: else fi
        :: else -> ok = 0                       /* a reader holds it */
        fi;
        i++
     :: else -> i = 0; break
     od;
#ifdef MUTANT_sweep_ignores_readers
     ok = 1;
#endif
     if
     :: ok -> XCHG(t, OLD, 0, v)                /* seq_cst store */
     :: else
     fi
  fi;
  o = 0; v = 0
}

/* The reopening of table d's CLOSED slots (CAS CLOSED -> 0). */
inline REOPEN(t, d, i, v) {
  i = 0;
  do
  :: i < NR ->
     if
     :: SEEN(t, SLOT(d, i)) == CLOSED -> CAS(t, SLOT(d, i), CLOSED, 0, v)
     :: else
     fi;
     i++
  :: else -> i = 0; break
  od;
  v = 0
}

proctype Resizer(byte t) {
  byte o, c, d, i, v, n;
  bool ok;
  n = 0;
  do
  :: n < RESIZES ->
     /* resize_locked, under the family's try-lock */
     FINISH_OLD(t, o, i, v, ok);
     if
     :: !ok -> skip                             /* EBUSY */
     :: else ->
        LD(t, CUR, c);
        d = 3 - c;                              /* the other table */
#ifdef MUTANT_reopen_first
        REOPEN(t, d, i, v);
#endif
#ifndef MUTANT_cur_first
        XCHG(t, OLD, c, v);                     /* old first, */
        XCHG(t, CUR, d, v);                     /* then cur (seq_cst stores) */
#else
        XCHG(t, CUR, d, v);
        XCHG(t, OLD, c, v);
#endif
#ifndef MUTANT_reopen_first
        REOPEN(t, d, i, v);
#endif
        FINISH_OLD(t, o, i, v, ok)              /* closes c at once if it is empty */
     fi;
     c = 0; d = 0;
     n++
  :: else -> break
  od;
  done++
}

init {
  byte i;
  mem[RB] = BIAS;        /* a slow reader set the bias earlier */
  mem[CUR] = 1;          /* table 1 current; table 2 mapped, never used (slots 0) */
  atomic {
    RUN_DRAINERS();
    i = 0;
    do
    :: i < NR -> run Reader(i); i++
    :: else -> break
    od;
    run Writer(WT);
    run Resizer(ZT)
  }
  done == NPROC;
  assert(!wcs)
}
