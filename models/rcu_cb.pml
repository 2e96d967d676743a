/*
 * rcu_cb.pml - call_rcu and rcu_barrier (src/rcu_call_impl.h, used by
 * src/rcu.c and src/rcu_qsbr.c): a callback is pushed onto a call_rcu data
 * object's queue (the tail exchange, then the link of the previous node,
 * then the `queued` count); the object's worker takes every linked node
 * (waiting for a producer between its exchange and its link), waits for
 * a grace period and runs the batch in order; rm_rcu_barrier asks every
 * object for its marker (bar_want, bar_queued, bar_done under crd_lock;
 * one marker per object, queued again by bar_run when a newer barrier
 * asked while it was queued) and waits until each marker has served it.
 *
 * Memory model: tso.pml (x86-TSO store buffers).  crd_lock is a word
 * changed only by RMWs (glibc's lock and unlock are locked instructions);
 * the barrier fields are read and written under it, so they are plain
 * variables here.  The link store (release) and the loads of links and
 * `queued` go through the store buffers.
 *
 * Threads: 0 calls rm_rcu_call(cb0) on its own object T (call_data_set_
 * thread), then rm_rcu_barrier; 1 calls rm_rcu_call(cb1) on the default
 * object D, then rm_rcu_barrier; 2 is D's worker, 3 is T's.  Workers idle
 * (a blocking guard, a valid end state) until callbacks are pending or a
 * barrier's marker is queued.
 *
 * Property: when a barrier returns, every callback whose rm_rcu_call
 * returned before the barrier began has run (ghosts `called`, `ran`);
 * every callback runs after a grace period that began after it was
 * queued; no invalid end state (every barrier returns).
 *
 * Mutants (-DMUTANT_x):
 *  done_newest   bar_run marks the newest barrier that asked (bar_want) as
 *                served, instead of the one its marker was queued for
 *                (bar_queued): a barrier that asked while the marker was
 *                queued returns before callbacks queued behind the marker
 *  default_only  the barrier asks only the default object, not the
 *                thread's own (a per-thread or per-CPU object)
 *  gp_before_take the worker's grace period comes before take_all: a
 *                callback queued in between runs with no grace period
 *                after its call
 */
#define NPROC 4
#define NOBJ 2
#define QCAP 4
#define OD 0           /* the default object */
#define OT 1           /* thread 0's object */
#define MARK 7         /* the marker's id in a queue */

/* shared words */
#define LINK(o, k) ((o) * QCAP + (k))   /* node k of object o is linked */
#define QUEUED(o) (NOBJ * QCAP + (o))
#define NVAR (NOBJ * QCAP + NOBJ)

#include "tso.pml"

/* queues: qid = what node k is, qn = nodes exchanged (the tail), qh = the
 * consumer's head (worker-local in C) */
byte qid[NOBJ * QCAP];
byte qn[NOBJ];
byte qh[NOBJ];
/* barrier state, under crd_lock */
bit lk;               /* crd_lock */
byte bargen;
byte bwant[NOBJ], bq[NOBJ], bdone[NOBJ];
/* ghosts */
byte called;          /* callbacks whose rm_rcu_call returned (bit per callback) */
byte ran;             /* callbacks that ran */
byte gps;             /* grace periods begun */
byte cbgp[2];         /* grace periods begun when callback i was queued */
byte done;

inline LOCK(t) { atomic { sbn[t] == 0 && lk == 0 -> lk = 1 } }
inline UNLOCK(t) { atomic { sbn[t] == 0 -> lk = 0 } }

/* q_push, then crd_push's count: the exchange of `tail` (an RMW: node k
 * is the k-th in the object's order), the release store that links it,
 * the seq_cst increment of `queued`. */
inline PUSH(t, o, id, k, x) {
  atomic { sbn[t] == 0 -> k = qn[o]; qid[(o) * QCAP + k] = id; qn[o]++ };
  ST(t, LINK(o, k), 1);
  XADD(t, QUEUED(o), 1, x)
}

/* bar_ask (crd_lock held) */
inline BAR_ASK(t, o, g, k, x) {
  bwant[o] = g;
  if
  :: bq[o] == 0 -> bq[o] = g; PUSH(t, o, MARK, k, x)
  :: else
  fi
}

proctype Caller(byte t; byte o; byte id) {
  byte k, x, g;
  byte must;
  /* rm_rcu_call */
  d_step { cbgp[id] = gps };
  PUSH(t, o, id, k, x);
  called = called | (1 << id);
  /* rm_rcu_barrier */
  LOCK(t);
  bargen++;
  g = bargen;
  must = called;
#ifndef MUTANT_default_only
  BAR_ASK(t, OD, g, k, x);
  BAR_ASK(t, OT, g, k, x);
#else
  BAR_ASK(t, OD, g, k, x);
#endif
  UNLOCK(t);
  /* wait for every object whose marker has not served us */
  atomic { lk == 0 && !(bwant[OD] >= g && bdone[OD] < g) -> skip };
  atomic { lk == 0 && !(bwant[OT] >= g && bdone[OT] < g) -> skip };
  assert((ran & must) == must);
  done++
}

/* worker_main: take_all, run_batch (a grace period, then the batch). */
proctype Worker(byte t; byte o) {
  byte taken, b, e, k, x, gstart;
  byte batch[QCAP];
end_idle:
  do
  :: atomic { SEEN(t, QUEUED(o)) > taken || bq[o] != 0 -> skip };   /* pending, or a barrier waits */
#ifdef MUTANT_gp_before_take
     if
     :: SEEN(t, QUEUED(o)) > taken -> gps++; gstart = gps
     :: else
     fi;
#endif
     /* take_all */
     b = 0;
     do
     :: qh[o] < qn[o] ->
        SEEN(t, LINK(o, qh[o])) == 1;          /* a push is linking: wait */
        batch[b] = qid[(o) * QCAP + qh[o]];
        b++;
        qh[o]++
     :: else -> break
     od;
     taken = taken + b;
     /* run_batch: the grace period, then the callbacks in order */
     if
     :: b > 0 ->
#ifndef MUTANT_gp_before_take
        gps++;
        gstart = gps;
#endif
        e = 0;
        do
        :: e < b ->
           if
           :: batch[e] == MARK ->                  /* bar_run */
              LOCK(t);
              if
#ifndef MUTANT_done_newest
              :: bq[o] > bdone[o] -> bdone[o] = bq[o]
#else
              :: bq[o] > bdone[o] -> bdone[o] = bwant[o]
#endif
              :: else
              fi;
              if
              :: bwant[o] > bdone[o] -> bq[o] = bwant[o]; PUSH(t, o, MARK, k, x)
              :: else -> bq[o] = 0
              fi;
              UNLOCK(t)
           :: else ->
              assert(cbgp[batch[e]] < gstart);     /* a grace period began after the call */
              ran = ran | (1 << batch[e])
           fi;
           batch[e] = 0;
           e++
        :: else -> break
        od
     :: else
     fi;
     gstart = 0
  od
}

init {
  atomic {
    RUN_DRAINERS();
    run Caller(0, OT, 0);
    run Caller(1, OD, 1);
    run Worker(2, OD);
    run Worker(3, OT)
  }
  done == 2
}
