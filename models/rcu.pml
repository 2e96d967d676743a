/*
 * rcu.pml - FCP-RCU (src/rcu.c, include/readmostly/rcu.h) on the FCP core
 * (src/fcp.c): the inline read lock and unlock with the gate, nested
 * sections counted in thread-local `depth`, the entry report inside the
 * section,
 * offline/online, the claim of a record, a read section in a signal
 * handler at any point of the thread's own code, grace periods shared by
 * concurrent synchronize callers (gp_seq under gp_lock), and the switch to
 * fence mode (the gate shut for good).
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).  A signal handler runs on its thread's CPU and
 * store buffer; its delivery is not assumed to drain the buffer.
 *
 * Threads: readers 0 and 1, updaters 2 .. 1+NU.  Reader 0 runs what the
 * configuration asks (NEST: an inner section inside its outermost one;
 * SIG: one signal whose handler runs a read section, at any point of
 * reader 0's own RCU code (SIGNEST: at any point of its inner lock and
 * unlock); OFFLINE: offline, a section begun offline, back
 * online; CLAIM: it starts with no record and claims one).  Reader 1 runs
 * RITER plain sections.  Updater u publishes object 2+u with
 * rm_rcu_xchg_pointer, calls rm_rcu_synchronize and frees the old object.
 * FENCEMODE starts the process after a switch to fence mode; SWITCH adds a
 * thread that switches while the others run.
 *
 * Property: no reader uses an object after it was freed (a section that
 * began before a grace period's start ends before the grace period does),
 * and no invalid end state (every section ends, every synchronize returns).
 *
 * LIVE: both readers run sections for ever (reader 0 with what the other
 * options ask), and the LTL property updaters_finish (<> every updater
 * returned from synchronize and freed) is checked with pan -a -f: under
 * weak fairness every grace period ends however the readers' sections
 * interleave with it (a reader's report of the new version, once made,
 * stays, so the updater's wait is not one that readers can keep
 * interrupting).
 *
 * Mutants (-DMUTANT_x):
 *  offline_plain     leaving the offline state is a plain store of 0, not
 *                    an exchange (leave_offline): a report without a
 *                    fence from the offline value
 *  nest_u1_first     the unlock stores NULL into the record's passive (U1)
 *                    before it tests `depth`, and an inner unlock puts
 *                    "in flight" back after counting `depth` down
 *                    (rm_rcu_read_unlock): a handler's lock in between
 *                    takes the outermost path inside the inner unlock
 *  nest_no_offline   the nested branch of the lock counts `depth` without
 *                    looking at `seen` (rm_rcu_read_lock): a handler that
 *                    interrupted the outermost lock before it left the
 *                    offline state nests in a section no grace period
 *                    waits for
 *  claim_no_fence    the claim reports without the fence after it
 *                    (rm_fcp_self_slowpath): a grace period that trusts a
 *                    record not yet claimed
 *  no_gate           the read lock compares the version, not the gate,
 *                    with `seen` (rm_rcu_read_lock): the fence-free entry
 *                    without the gate
 *  gp_round_down     synchronize waits for the end of the grace period
 *                    running at its call, (s + 1) & ~1 instead of
 *                    (s + 3) & ~1 (rm_rcu_synchronize_as)
 *  switch_gate_open  the switch to fence mode leaves the gates open
 *                    (rm_fcp_switch_to_fence)
 *  wait_ignores_reports (LIVE) the grace period waits for each reader to
 *                    be seen outside a section and ignores its reports
 *                    (rm_fcp_wait's released()): a reader that runs
 *                    sections for ever is outside only between two of
 *                    them, which weak fairness does not promise the
 *                    updater will see (an acceptance cycle)
 */
#ifndef NU
#define NU 1
#endif
#ifdef SWITCH
#define NSW 1
#else
#define NSW 0
#endif
#define NR 2
#define NPROC (NR + NU + NSW)
#ifndef RITER
#define RITER 1
#endif
#ifndef R1ITER
#define R1ITER RITER /* reader 1's sections (0: it only holds its record) */
#endif

#define VER 0
#define GATE 1
#define MODE 2
#define PTR 3
#define GPSEQ 4
#define GPLOCK 5
#define P(i) (6 + (i))
#define S(i) (8 + (i))
#define NVAR 10

#define NOFENCE 1
#define SWITCHED 2
#define WFENCE 4
#define CLOSED 128
#define SHUT 64

#define OFF 255   /* RM_RCU_SEEN_OFFLINE (and a free record's UINT64_MAX) */
#define INF 1     /* &rm_rcu_in_flight */

#define M(x) (x)
#ifdef MUTANT_offline_plain
#define M_offline_plain 1
#else
#define M_offline_plain 0
#endif
#ifdef MUTANT_nest_u1_first
#define M_nest_u1_first 1
#else
#define M_nest_u1_first 0
#endif
#ifdef MUTANT_nest_no_offline
#define M_nest_no_offline 1
#else
#define M_nest_no_offline 0
#endif
#ifdef MUTANT_no_gate
#define M_no_gate 1
#else
#define M_no_gate 0
#endif

#include "tso.pml"

byte depth[NR];     /* rm_rcu_tls.depth (thread-local) */
bool freed[2 + NU]; /* ghost: object freed */
byte sigs;          /* signals left to deliver to reader 0 */
byte done;
byte udone;         /* updaters that returned (LIVE) */
#ifdef LIVE
ltl updaters_finish { <> (udone == NU) }
#define NEXT(n) skip   /* sections for ever */
#else
#define NEXT(n) n++
#endif

/* The record's passive and seen, as the thread itself reads them. */
#define PASSIVE(t) SEEN(t, P(t))
#define SEENOF(t) SEEN(t, S(t))
/* The nesting state: depth > 0 only while the record is in flight (the
 * thread's own view). */
#define NEST_INV(t) assert(depth[t] == 0 || PASSIVE(t) == INF)

/* leave_offline: xchg(seen, 0), a full barrier on x86 */
#define LEAVE_OFFLINE(t, x) \
  if \
  :: M_offline_plain -> ST(t, S(t), 0) \
  :: else -> XCHG(t, S(t), 0, x) \
  fi

/* rm_fcp_gate_open */
#define GATE_OPEN(t, m, v, g) \
  LD(t, MODE, m); \
  if \
  :: (m & NOFENCE) != 0 -> \
     LD(t, VER, v); LD(t, GATE, g); \
     do \
     :: (g & SHUT) == 0 && ((g & CLOSED) != 0 || g < v) -> \
        CAS(t, GATE, g, v, m); \
        if :: m == g -> break :: else -> g = m fi \
     :: else -> break \
     od \
  :: else \
  fi; \
  m = 0; g = 0

/* rm_rcu_read_lock_report, after R1 */
#define LOCK_REPORT(t, SP, s, g, v, m) \
  s = SEENOF(t); SP; \
  if \
  :: s == OFF -> LEAVE_OFFLINE(t, v) \
  :: else -> \
     if :: (g & CLOSED) != 0 -> FENCE(t); SP :: else fi; \
     if \
     :: s == 0 -> skip \
     :: else -> \
        LD(t, VER, v); SP; \
        if :: s != v -> ST(t, S(t), v); SP :: else fi; \
        if :: (g & CLOSED) == 0 && g < v -> GATE_OPEN(t, m, v, g) :: else fi \
     fi \
  fi

/* rm_rcu_read_lock (and rm_rcu_read_lock_slowpath): in flight, seen not
 * OFF (a version, or 0): an inner section, `depth` counted up (a
 * read-modify-write a handler may interrupt); OFF: the slow path leaves
 * the offline state, then counts the inner section.  Not in flight: the
 * outermost section. */
#define RLOCK(t, SP, p, s, g, v, m) \
  NEST_INV(t); \
  p = PASSIVE(t); SP; \
  if \
  :: p != 0 -> \
     s = SEENOF(t); SP; \
     if \
     :: s != OFF || M_nest_no_offline -> skip \
     :: else -> LEAVE_OFFLINE(t, v); SP \
     fi; \
     s = depth[t]; SP; depth[t] = s + 1 \
  :: p == 0 -> \
     ST(t, P(t), INF); SP; \
     if \
     :: M_no_gate -> LD(t, VER, g) \
     :: else -> LD(t, GATE, g) \
     fi; SP; \
     if \
     :: g != SEENOF(t) -> LOCK_REPORT(t, SP, s, g, v, m) \
     :: else \
     fi \
  fi; \
  p = 0; s = 0; g = 0; v = 0

/* rm_rcu_read_unlock (and rm_rcu_read_unlock_report): `depth` first; an
 * inner unlock counts it down (a read-modify-write a handler may
 * interrupt) and touches no record; the outermost one stores U1, loads
 * the version and `seen`, and takes the slow path when they differ. */
#define RUNLOCK(t, SP, d, s, v) \
  NEST_INV(t); \
  if :: M_nest_u1_first -> ST(t, P(t), 0); SP :: else fi; \
  d = depth[t]; SP; \
  if \
  :: d != 0 -> \
     depth[t] = d - 1; \
     if :: M_nest_u1_first -> SP; ST(t, P(t), INF) :: else fi \
  :: else -> \
     if :: M_nest_u1_first :: else -> ST(t, P(t), 0); SP fi; \
     LD(t, VER, v); SP; \
     s = SEENOF(t); \
     if \
     :: s != v -> \
        if \
        :: s == 0 -> ST(t, S(t), OFF) \
        :: s != 0 && s != OFF -> ST(t, S(t), v) \
        :: else \
        fi \
     :: else \
     fi \
  fi; \
  d = 0; s = 0; v = 0

#define NOSIG skip

/* A section in a signal handler of reader 0: it uses what it reads. */
inline handler(hr, hp, hs, hg, hv, hm, ho) {
  RLOCK(0, NOSIG, hp, hs, hg, hv, hm);
  LD(0, PTR, ho);
  assert(!freed[ho]);
  RUNLOCK(0, NOSIG, hr, hs, hv);
  ho = 0
}

/* Signal points: SIG puts them in reader 0's outermost lock and unlock and
 * its offline/online code; SIGNEST in its inner lock and unlock (and
 * between them).  (Both at once do not fit the time budget.) */
#define SPX if :: sigs > 0 -> sigs = 0; handler(hr, hp, hs, hg, hv, hm, ho) :: true -> skip fi
#ifdef SIG
#define SP0 SPX
#else
#define SP0 skip
#endif
#ifdef SIGNEST
#define SPN SPX
#else
#define SPN skip
#endif

proctype Reader0() {
  byte r, p, s, g, v, m, o, n;
  byte hr, hp, hs, hg, hv, hm, ho;
#ifdef CLAIM
  /* rm_fcp_self_slowpath: claim (passive NULL), report, fence; then claim()
   * opens the gate.  (Signals are blocked during registration.) */
  LD(0, VER, v); LD(0, S(0), s);
  if :: s != v -> ST(0, S(0), v) :: else fi;
#ifndef MUTANT_claim_no_fence
  FENCE(0);
#endif
  GATE_OPEN(0, m, v, g);
  s = 0; v = 0;
#endif
#ifdef OFFLINE
  ST(0, S(0), OFF); SP0;               /* rm_rcu_thread_offline: go_offline */
#endif
  n = 0;
  do
  :: n < RITER ->
     RLOCK(0, SP0, p, s, g, v, m);
     LD(0, PTR, o); SP0;
#if defined(NEST) || defined(SIGNEST)
     SPN;
     RLOCK(0, SPN, p, s, g, v, m);
     SPN;
     RUNLOCK(0, SPN, r, s, v);
     SPN;
#endif
     assert(!freed[o]);                 /* the section still uses o */
     RUNLOCK(0, SP0, r, s, v);
     o = 0;
     NEXT(n)
  :: else -> break
  od;
#ifdef OFFLINE
  SP0;
  LEAVE_OFFLINE(0, v); SP0;            /* rm_rcu_thread_online: come_online */
  LD(0, VER, v); LD(0, S(0), s);       /* ... rm_fcp_report */
  if :: s != v -> ST(0, S(0), v) :: else fi;
  SP0;
#endif
  done++
}

proctype Reader1() {
  byte r, p, s, g, v, m, o, n;
  n = 0;
  do
  :: n < R1ITER ->
     RLOCK(1, NOSIG, p, s, g, v, m);
     LD(1, PTR, o);
     assert(!freed[o]);
     RUNLOCK(1, NOSIG, r, s, v);
     o = 0;
     NEXT(n)
  :: else -> break
  od;
  done++
}

/* rm_fcp_wait for the in-flight object (RM_FCP_WAIT mode). */
inline fcp_wait(t, v, m, s, i, mb, pending) {
  LD(t, MODE, m);
  if
  :: (m & WFENCE) == 0 ->
     pending = 0;
     i = 0;
     do
     :: i < NR -> LD(t, S(i), s); if :: s < v -> pending = 1 :: else fi; i++
     :: else -> i = 0; break
     od;
     if :: pending -> MEMBARRIER(t, mb) :: else fi
  :: else
  fi;
  i = 0;
  do
#ifndef MUTANT_wait_ignores_reports
  :: i < NR -> (SEEN(t, P(i)) != INF || SEEN(t, S(i)) >= v); i++  /* released() */
#else
  :: i < NR -> (SEEN(t, P(i)) != INF); i++
#endif
  :: else -> i = 0; break
  od;
  pending = 0; m = 0; s = 0
}

proctype Updater(byte t; byte obj) {
  byte old, x, sq, v, m, g, s, i, mb, pending;
  XCHG(t, PTR, obj, old);               /* rm_rcu_xchg_pointer */
  /* rm_rcu_synchronize */
  XADD(t, GPSEQ, 0, x);
#ifdef MUTANT_gp_round_down
  sq = (x + 1) & 254;
#else
  sq = (x + 3) & 254;
#endif
  if
  :: SEEN(t, GPSEQ) < sq ->
     atomic { sbn[t] == 0 && mem[GPLOCK] == 0 -> mem[GPLOCK] = 1 };  /* gp_lock */
     do
     :: SEEN(t, GPSEQ) < sq ->
        XADD(t, GPSEQ, 1, x);           /* run_grace_period: odd */
        XADD(t, VER, 1, v); v++;        /* rm_fcp_begin */
        FENCE(t);
        GATE_OPEN(t, m, x, g);
        fcp_wait(t, v, m, s, i, mb, pending);
        XADD(t, GPSEQ, 1, x)            /* even */
     :: else -> break
     od;
     atomic { sbn[t] == 0 -> mem[GPLOCK] = 0 }   /* unlock */
  :: else
  fi;
  freed[old] = 1;
  udone++;
  done++
}

/* rm_fcp_switch_to_fence (membarrier works) */
proctype Switcher(byte t) {
  byte m, mb;
  atomic {
    sbn[t] == 0 ->
    m = mem[MODE];
    if
    :: (m & SWITCHED) == 0 -> mem[MODE] = (m | SWITCHED) & ~NOFENCE
    :: else
    fi
  };
#ifndef MUTANT_switch_gate_open
  OR(t, GATE, CLOSED | SHUT);
#endif
  MEMBARRIER(t, mb);
  OR(t, MODE, WFENCE);
  done++
}

init {
  byte i;
  mem[VER] = 1;
#ifdef FENCEMODE
  mem[MODE] = SWITCHED | WFENCE;
  mem[GATE] = CLOSED | SHUT;
#else
  mem[MODE] = NOFENCE;
  mem[GATE] = 1;
#endif
  mem[PTR] = 1;
  mem[S(0)] = 1;
  mem[S(1)] = 1;
#ifdef CLAIM
  mem[S(0)] = OFF;                      /* a free record */
#endif
#if defined(SIG) || defined(SIGNEST)
  sigs = 1;
#endif
  atomic {
    RUN_DRAINERS();
    run Reader0();
    run Reader1();
    i = 0;
    do
    :: i < NU -> run Updater(NR + i, 2 + i); i++
    :: else -> break
    od;
#ifdef SWITCH
    run Switcher(NR + NU);
#endif
  }
  done == NR + NU + NSW
}
