/*
 * bravo.pml - BRAVO (include/readmostly/bravo.h, src/bravo.c) over an
 * abstract underlying lock A: the reader fast path (R0 bias check, R1
 * publish by CAS, R2 re-check, back-out), the fast unlock (R3), the slow
 * path through A that turns the bias back on once the inhibit window is
 * over (S1), and the writers' revocation: without A, counted in the bias
 * word (the generator's blocking write lock), or under A (the try-lock and
 * the preload library).  With SHARED, the preload library's slots that
 * other threads' unlocks may mark (bravo.h "Slots that other threads'
 * unlocks may mark"): a thread releases a read hold it does not own
 * (pthread_rwlock_unlock lets it), and the back-out subtracts its address
 * so that it never erases such a release.
 *
 * Memory model: tso.pml (x86-TSO store buffers).  BRAVO uses no membarrier.
 *
 * Threads: readers 0 and 1 (slot i of a 2-slot table: the hash of lock and
 * thread; with COLLIDE both readers hash to slot 0), then with SHARED a
 * releaser, then the writer.  Each reader takes the lock RITER times.  With
 * SHARED, reader 1 takes the lock once and passes the hold on to the
 * releaser, which unlocks it (glibc counts read holds; any thread may
 * release one).  The writer writes WITER times; with TRY its first attempt
 * is a write_trylock (a revocation under A that gives up with EBUSY and
 * leaves revoke_pending set), then the blocking lock.  With MIXED, two
 * writers, each of whose WITER attempts is, at random, write_lock,
 * write_timedlock or write_trylock; a timed attempt may time out waiting
 * for A, give up its scan while a slot still holds the lock (counted out,
 * revoke_pending left set) or, its scan done, time out taking A again
 * (rm_bravo_revoke_abandon): every way a writer can leave the bias word
 * and revoke_pending, met by the other writer's.  With WM, the same two
 * writers go through readmostly/bravo_wm.h instead: the writer mutex
 * first (blocking, timed or try), then either A directly when neither the
 * bias nor revoke_pending is set (and A again checked), or a revocation
 * without A in the attempt's mode (a try scan gives up with EBUSY), then
 * A; every failure releases what was taken, the mutex last.
 *
 * A is a reader-preference lock in one word (readers count, WA the writer)
 * changed only by atomic read-modify-writes; its own correctness is
 * assumed.  The inhibit window is a nondeterministic choice: any slow
 * reader may find it over.
 *
 * Property: mutual exclusion between the writer and every reader, fast or
 * slow (ghost flags rcs[] and wcs); every unlock finds a hold to release;
 * no invalid end state (every thread finishes: a lost release would leave
 * a slot holding the lock and the writer waiting for ever).
 *
 * Mutants (-DMUTANT_x):
 *  backout_store  the shared-slot back-out stores 0 (the native back-out)
 *                 instead of subtracting its address
 *                 (rm_bravo_read_fast_body): it erases a foreign release
 *                 that marked the transient slot, and the hold that
 *                 release meant stays in the table for ever (SHARED)
 *  no_recheck     the reader does not re-check the bias after publishing
 *                 itself (R2)
 *  scan_first     the writer scans the table before it clears the bias
 *                 (W2 before W1)
 *  clear_plain    the writer clears the bias with a plain store and no
 *                 fence (Listing 1's `RBias = false` as written)
 *  rebias_counted a slow reader sets the bias bit whatever the count of
 *                 writers revoking without A (S1 as a CAS of the bit, not
 *                 of the whole word from 0)
 *  giveup_clears  a writer whose scan gives up stores revoke_pending = 0
 *                 as it counts out (MIXED or WM): the next writer finds
 *                 the bias off and nothing pending, and enters beside
 *                 the fast reader the scan gave up on
 *  pending_first  rm_bravo_count_in stores revoke_pending = 1 before its
 *                 RMW (MIXED, WITER=2): another writer's finish stores 0
 *                 after it, a slow reader turns the bias on, a fast
 *                 reader enters, our RMW clears the bias, and our scan
 *                 gives up: we count out leaving nothing that tells the
 *                 next writer of that reader
 *  clear_ignores_count  rm_bravo_write_clear tests only the bias bit, not
 *                 the count of writers revoking without A (MIXED,
 *                 WITER=2): between a writer's count-in RMW and its
 *                 revoke_pending store, a writer holding A finds the bias
 *                 off and nothing pending, and enters beside a fast reader
 *                 that the first one's RMW found there
 */
#ifdef SHARED
#define NREL 1
#else
#define NREL 0
#endif
#if defined(MIXED) || defined(WM)
#define NW 2
#else
#define NW 1
#endif
#define NR 2
#define WT (NR + NREL)        /* the (first) writer's thread */
#define NPROC (NR + NREL + NW)
#ifndef RITER
#define RITER 1
#endif
#ifndef WITER
#define WITER 1
#endif

/* shared words */
#define RB 0           /* rm_bravo_bias.rbias: bit 0 BIAS, count of revokers above */
#define RP 1           /* rm_bravo_bias.revoke_pending */
#define AS 2           /* A: readers, or WA when write-held */
#define NB 3           /* preload: PL_NOBIAS in the lock's reserved word */
#define SL(i) (4 + (i)) /* the table's slots */
#define NSLOT 2
#ifdef WM
#define WMX 6          /* readmostly/bravo_wm.h: the writer mutex */
#define NVAR 7
#else
#define NVAR 6
#endif

#define BIAS 1
#define REVOKER 2
#define LK 1           /* the lock's address in a slot */
#define REL 2          /* RM_BRAVO_SLOT_RELEASED */
#define WA 128

#include "tso.pml"

/* rm_bravo_write_clear: nothing in the bias word (neither the bias nor a
 * writer counted in, revoking without A) and no revocation pending. */
#ifndef MUTANT_clear_ignores_count
#define CLEAR(b, p) ((b) == 0 && (p) == 0)
#else
#define CLEAR(b, p) (((b) & BIAS) == 0 && (p) == 0)
#endif
/* A give-up (a scan that ends with EBUSY or ETIMEDOUT): the writer counts
 * out, leaving revoke_pending as its count_in set it. */
#ifndef MUTANT_giveup_clears
#define GIVEUP(t) COUNT_OUT(t)
#else
#define GIVEUP(t) ST(t, RP, 0); COUNT_OUT(t)
#endif

#ifdef COLLIDE
#define MYSLOT(t) 0
#else
#define MYSLOT(t) (t)
#endif

bool rcs[NR];  /* ghost: reader i is inside a read section */
bool wcs;      /* ghost: the writer is inside */
bool handed;   /* ghost: reader 1 passed its hold on to the releaser */
byte done;

/* A: all read-modify-writes (the lock's own ordering is assumed). */
inline A_RDLOCK(t) { atomic { sbn[t] == 0 && mem[AS] < WA -> mem[AS]++ } }
inline A_RDUNLOCK(t) { atomic { sbn[t] == 0 -> assert(mem[AS] > 0 && mem[AS] < WA); mem[AS]-- } }
inline A_WRLOCK(t) { atomic { sbn[t] == 0 && mem[AS] == 0 -> mem[AS] = WA } }
inline A_WRUNLOCK(t) { atomic { sbn[t] == 0 -> mem[AS] = 0 } }

/* preload: pl_release_slow, a read unlock of A that refuses to go below
 * zero or past a writer. */
inline RELEASE_SLOW(t, ok) {
  atomic {
    sbn[t] == 0 ->
    if
    :: mem[AS] > 0 && mem[AS] < WA -> mem[AS]--; ok = 1
    :: else -> ok = 0
    fi
  }
}

/* rm_bravo_release_foreign (the CAS loop on one slot is one RMW: a CAS that
 * fails reloads and tries again), then pl_release_foreign_fast's PL_NOBIAS. */
inline RELEASE_FOREIGN(t, ok, i) {
  ok = 0;
  i = 0;
  do
  :: i < NSLOT && ok == 0 ->
     atomic {
       sbn[t] == 0 ->
       if
       :: mem[SL(i)] == LK -> mem[SL(i)] = LK + REL; ok = 1
       :: else
       fi
     };
     i++
  :: else -> i = 0; break
  od;
  if
  :: ok -> OR(t, NB, 1)
  :: else
  fi
}

/* pl_pass_release: a slow hold, else another thread's fast one. */
inline PASS_RELEASE(t, ok, i) {
  RELEASE_SLOW(t, ok);
  if
  :: !ok -> RELEASE_FOREIGN(t, ok, i)
  :: else
  fi
}

/* rm_bravo_read_slow_bias (preload: unless PL_NOBIAS). */
inline SLOW_BIAS(t, b, v) {
#ifdef SHARED
  LD(t, NB, v);
  if
  :: v != 0 -> goto nobias
  :: else
  fi;
#endif
  LD(t, RB, b);
#ifndef MUTANT_rebias_counted
  if
  :: b != 0 -> skip                  /* on, or a writer keeps it off */
  :: b == 0 ->
     if
     :: skip                         /* the inhibit window is still open */
     :: CAS(t, RB, 0, BIAS, v)       /* (S1) the window is over */
     fi
  fi;
#else
  if
  :: (b & BIAS) != 0 -> skip
  :: else ->
     if
     :: skip
     :: CAS(t, RB, b, b | BIAS, v)
     fi
  fi;
#endif
nobias: skip
}

proctype Reader(byte t) {
  byte b, v, was, ok, i, n;
  bool fast;
  n = 0;
  do
  :: n < RITER ->
     /* rm_bravo_read_fast_body */
     fast = 0;
     LD(t, RB, b);                              /* (R0) */
     if
     :: (b & BIAS) == 0 -> skip                 /* bias off: slow */
     :: else ->
        CAS(t, SL(MYSLOT(t)), 0, LK, v);        /* (R1) */
        if
        :: v != 0 -> skip                       /* collision: slow */
        :: else ->
#ifndef MUTANT_no_recheck
           LD(t, RB, b);                        /* (R2) */
#endif
           if
           :: (b & BIAS) != 0 -> fast = 1
           :: else ->                           /* revoked meanwhile: back out */
#if defined(SHARED) && !defined(MUTANT_backout_store)
              atomic { sbn[t] == 0 -> was = mem[SL(MYSLOT(t))]; mem[SL(MYSLOT(t))] = was - LK };
              if
              :: was == LK -> skip
              :: else ->
                 assert(was == LK + REL);       /* marked by a foreign unlock */
                 ST(t, SL(MYSLOT(t)), 0);
                 PASS_RELEASE(t, ok, i)         /* pl_pass_release */
              fi
#else
              ST(t, SL(MYSLOT(t)), 0)           /* release store */
#endif
           fi
        fi
     fi;
     if
     :: fast -> skip
     :: else ->                                 /* A's read lock, then the bias */
        A_RDLOCK(t);
        SLOW_BIAS(t, b, v)
     fi;
     d_step { rcs[t] = 1; assert(!wcs) };       /* the read section */
#ifdef SHARED
     if
     :: t == 1 -> handed = 1; break             /* the releaser unlocks it */
     :: else
     fi;
#endif
     rcs[t] = 0;
     /* read unlock */
#ifdef SHARED
     ok = 0;
     if
     :: fast ->                                 /* pl_unlock_fast: CAS LK -> 0 */
        CAS(t, SL(MYSLOT(t)), LK, 0, v);
        if
        :: v == LK -> ok = 1
        :: else ->                              /* pl_unlock: pl_drop_dead */
           CAS(t, SL(MYSLOT(t)), LK + REL, 0, v)
        fi
     :: else
     fi;
     if
     :: !ok -> PASS_RELEASE(t, ok, i); assert(ok)   /* pl_unlock: slow, else foreign */
     :: else
     fi;
#else
     if
     :: fast -> ST(t, SL(MYSLOT(t)), 0)         /* (R3) rm_bravo_read_unlock_fast */
     :: else -> A_RDUNLOCK(t)
     fi;
#endif
     n++
  :: else -> break
  od;
  done++
}

#ifdef SHARED
/* Another thread's pthread_rwlock_unlock of reader 1's hold (pl_unlock
 * with no hold of its own). */
proctype Releaser(byte t) {
  byte ok, i;
  handed;
  rcs[1] = 0;                                  /* reader 1's section is over */
  PASS_RELEASE(t, ok, i);
  assert(ok);
  done++
}
#endif

/* scan_table, mode WAIT: W2 and W3 as one wait per slot. */
inline SCAN(t, i) {
  i = 0;
  do
  :: i < NSLOT -> SEEN(t, SL(i)) != LK; i++
  :: else -> i = 0; break
  od
}

/* scan_table, mode TRY: busy (EBUSY) if some slot holds the lock. */
inline SCAN_TRY(t, i, busy) {
  busy = 0;
  i = 0;
  do
  :: i < NSLOT && !busy -> if :: SEEN(t, SL(i)) == LK -> busy = 1 :: else fi; i++
  :: else -> i = 0; break
  od
}

/* W1 under A: fetch_and, a locked RMW, which is the full fence on x86
 * (rm_fence_after_rmw issues no second one) */
inline CLEAR_UNDER_A(t, b) {
#ifndef MUTANT_clear_plain
  atomic { sbn[t] == 0 -> mem[RB] = mem[RB] & ~BIAS }
#else
  LD(t, RB, b);
  ST(t, RB, b & ~BIAS)
#endif
}

proctype Writer(byte t) {
  byte b, p, i, n, busy;
  n = 0;
#ifdef TRY
  /* write_trylock: A's trylock, then rm_bravo_write_acquired(TRY) */
  if
  :: atomic { sbn[t] == 0 && mem[AS] == 0 -> mem[AS] = WA } ->
     LD(t, RB, b); LD(t, RP, p);                /* rm_bravo_write_clear */
     if
     :: CLEAR(b, p) -> goto trywrite
     :: else
     fi;
     CLEAR_UNDER_A(t, b);                       /* rm_bravo_revoke_slowpath */
     SCAN_TRY(t, i, busy);
     ST(t, RP, busy);
     if
     :: !busy -> goto trywrite
     :: else -> A_WRUNLOCK(t)                   /* EBUSY */
     fi
  :: else                                       /* A busy: EBUSY */
  fi;
  goto blocking;
trywrite: skip;
  d_step { wcs = 1; assert(!rcs[0] && !rcs[1]) };
  wcs = 0;
  A_WRUNLOCK(t);
blocking:
#endif
  do
  :: n < WITER ->
     A_WRLOCK(t);
     LD(t, RB, b); LD(t, RP, p);                /* rm_bravo_write_clear (acquire) */
     if
     :: CLEAR(b, p) -> skip
     :: else ->
#ifdef SHARED
        /* preload: rm_bravo_write_acquired(WAIT) under A */
#ifdef MUTANT_scan_first
        SCAN(t, i);
#endif
        CLEAR_UNDER_A(t, b);
#ifndef MUTANT_scan_first
        SCAN(t, i);
#endif
        ST(t, RP, 0)
#else
        /* the generator: give A back, rm_bravo_revoke_unlocked, A again */
        A_WRUNLOCK(t);
#ifdef MUTANT_scan_first
        SCAN(t, i);
#endif
#ifndef MUTANT_clear_plain                      /* rm_bravo_count_in */
        atomic { sbn[t] == 0 -> mem[RB] = (mem[RB] & ~BIAS) + REVOKER };
        ST(t, RP, 1);                           /* no fence: see COUNT_IN */
#else
        LD(t, RB, b);
        ST(t, RB, (b & ~BIAS) + REVOKER);
        ST(t, RP, 1);
#endif
#ifndef MUTANT_scan_first
        SCAN(t, i);
#endif
        A_WRLOCK(t);
        ST(t, RP, 0);                           /* rm_bravo_revoke_finish */
        atomic { sbn[t] == 0 -> mem[RB] = mem[RB] - REVOKER }   /* count_out */
#endif
     fi;
     d_step { wcs = 1; assert(!rcs[0] && !rcs[1]) };   /* the write section */
     wcs = 0;
     A_WRUNLOCK(t);
     n++
  :: else -> break
  od;
  done++
}

#if defined(MIXED) || defined(WM)
/* scan_table, mode TIMED: wait for each slot, or give up (ETIMEDOUT) while
 * one still holds the lock. */
inline SCAN_TIMED(t, i, gaveup) {
  gaveup = 0;
  i = 0;
  do
  :: i < NSLOT && !gaveup ->
     if
     :: SEEN(t, SL(i)) != LK -> i++
     :: SEEN(t, SL(i)) == LK -> gaveup = 1
     fi
  :: else -> i = 0; break
  od
}

/* rm_bravo_count_in: the CAS that clears the bias and counts the writer (a
 * locked RMW), then revoke_pending = 1 (relaxed).  No fence follows on x86
 * (rm_fence_after_rmw): the RMW is one, and the pending store may still be
 * in the store buffer while the scan reads the slots. */
inline COUNT_IN(t) {
#ifndef MUTANT_pending_first
  atomic { sbn[t] == 0 -> mem[RB] = (mem[RB] & ~BIAS) + REVOKER };
  ST(t, RP, 1)
#else
  ST(t, RP, 1);
  atomic { sbn[t] == 0 -> mem[RB] = (mem[RB] & ~BIAS) + REVOKER }
#endif
}
inline COUNT_OUT(t) { atomic { sbn[t] == 0 -> mem[RB] = mem[RB] - REVOKER } }

/* One of two writers: each attempt a write_lock, write_timedlock or
 * write_trylock of the generator (bravo.h RM_BRAVO_DEFINE_WRITE and
 * _WRITE_TIMED). */
proctype WriterM(byte t) {
  byte b, p, i, n, busy, gaveup;
  bool timed;
  n = 0;
  do
  :: n < WITER ->
     if
     :: /* write_trylock: A's trylock, then rm_bravo_write_acquired(TRY) */
        if
        :: atomic { sbn[t] == 0 && mem[AS] == 0 -> mem[AS] = WA } ->
           LD(t, RB, b); LD(t, RP, p);
           if
           :: CLEAR(b, p) -> goto m_write
           :: else
           fi;
           CLEAR_UNDER_A(t, b);                 /* rm_bravo_revoke_slowpath */
           SCAN_TRY(t, i, busy);
           ST(t, RP, busy);
           if
           :: !busy -> goto m_write
           :: else -> A_WRUNLOCK(t); goto m_next   /* EBUSY */
           fi
        :: else -> goto m_next                  /* A busy: EBUSY */
        fi
     :: timed = 0
     :: timed = 1
     fi;
     /* write_lock / write_timedlock: A, rm_bravo_write_clear */
     if
     :: A_WRLOCK(t)
     :: timed -> goto m_next                    /* ETIMEDOUT waiting for A */
     fi;
     LD(t, RB, b); LD(t, RP, p);
     if
     :: CLEAR(b, p) -> goto m_write
     :: else
     fi;
     /* give A back, rm_bravo_revoke_unlocked, A again */
     A_WRUNLOCK(t);
     COUNT_IN(t);
     if
     :: !timed -> SCAN(t, i)
     :: timed ->
        SCAN_TIMED(t, i, gaveup);
        if
        :: gaveup -> GIVEUP(t); goto m_next     /* ETIMEDOUT */
        :: else
        fi
     fi;
     if
     :: A_WRLOCK(t)
     :: timed ->                                /* rm_bravo_revoke_abandon */
        ST(t, RP, 0);
        COUNT_OUT(t);
        goto m_next
     fi;
     ST(t, RP, 0);                              /* rm_bravo_revoke_finish */
     COUNT_OUT(t);
m_write: skip;
     d_step { assert(!wcs); wcs = 1; assert(!rcs[0] && !rcs[1]) };
     wcs = 0;
     A_WRUNLOCK(t);
m_next:
     n++
  :: else -> break
  od;
  done++
}
#endif

#ifdef WM
/* One of two writers of readmostly/bravo_wm.h (RM_BRAVOWM_WRITE_BODY):
 * mode 0 write_lock, 1 write_timedlock, 2 write_trylock. */
proctype WriterW(byte t) {
  byte b, p, i, n, busy, gaveup, mode;
  n = 0;
  do
  :: n < WITER ->
     if
     :: mode = 0
     :: mode = 1
     :: mode = 2
     fi;
     /* the writer mutex (a CAS; a failed try or a timeout: EBUSY, ETIMEDOUT) */
     if
     :: atomic { sbn[t] == 0 && mem[WMX] == 0 -> mem[WMX] = 1 }
     :: mode != 0 -> goto w_next
     fi;
     LD(t, RB, b); LD(t, RP, p);                /* rm_bravo_wm_must_revoke */
     if
     :: (b & BIAS) == 0 && p == 0 ->            /* (a): A, then check under A */
        if
        :: A_WRLOCK(t)
        :: mode != 0 -> goto w_out
        fi;
        LD(t, RB, b); LD(t, RP, p);             /* rm_bravo_write_clear */
        if
        :: CLEAR(b, p) -> goto w_write
        :: else -> A_WRUNLOCK(t)                /* a slow reader set the bias (S1) */
        fi
     :: else
     fi;
     /* (b): rm_bravo_revoke_unlocked in the attempt's mode */
     COUNT_IN(t);
     if
     :: mode == 0 -> SCAN(t, i)
     :: mode == 1 ->
        SCAN_TIMED(t, i, gaveup);
        if
        :: gaveup -> GIVEUP(t); goto w_out      /* ETIMEDOUT */
        :: else
        fi
     :: mode == 2 ->
        SCAN_TRY(t, i, busy);
        if
        :: busy -> GIVEUP(t); goto w_out        /* EBUSY */
        :: else
        fi
     fi;
     if
     :: A_WRLOCK(t)
     :: mode != 0 ->                            /* rm_bravo_revoke_abandon */
        ST(t, RP, 0);
        COUNT_OUT(t);
        goto w_out
     fi;
     ST(t, RP, 0);                              /* rm_bravo_revoke_finish */
     COUNT_OUT(t);
w_write: skip;
     d_step { assert(!wcs); wcs = 1; assert(!rcs[0] && !rcs[1]) };
     wcs = 0;
     A_WRUNLOCK(t);
w_out:                                          /* rm_bravo_wmutex_unlock */
     atomic { sbn[t] == 0 -> mem[WMX] = 0 };
w_next:
     n++
  :: else -> break
  od;
  done++
}
#endif

init {
  mem[RB] = BIAS;                              /* a slow reader set the bias earlier */
  atomic {
    RUN_DRAINERS();
    run Reader(0);
    run Reader(1);
#ifdef SHARED
    run Releaser(NR);
#endif
#if defined(MIXED)
    run WriterM(WT);
    run WriterM(WT + 1)
#elif defined(WM)
    run WriterW(WT);
    run WriterW(WT + 1)
#else
    run Writer(WT)
#endif
  }
  done == NPROC;
  assert(!wcs)
}
