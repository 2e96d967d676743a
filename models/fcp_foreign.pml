/*
 * fcp_foreign.pml - FCP holds that another thread releases, and the fork
 * child's release of other threads' records (src/fcp.c,
 * include/readmostly/fcp.h): rm_fcp_release_foreign (nest 0 -> BUSY, one
 * membarrier, the CAS of `passive`, `stolen`, BUSY cleared) against the
 * owner's rm_fcp_unlock_own (settled nest, `stolen`, U1 with no fence of
 * its own, settled nest again, `stolen` compared), and fork_child (BUSY
 * cleared in every record, records of other threads that hold nothing
 * released, holds of other threads kept as orphans).
 *
 * Memory model: tso.pml (x86-TSO store buffers; membarrier as the kernel
 * guarantees it: a full barrier in every thread at some moment between the
 * call and its return).
 *
 * Threads: 0 owns record 0, which holds obj passively once (the preload
 * library's pthread_rwlock read hold); the lock also counts one more hold
 * (CNT: a hold on its slow path).  Thread 1 unlocks a hold of obj that it
 * does not have (pw_unlock once pl_release_slow found nothing of its own:
 * the model starts there): rm_fcp_release_foreign, or the counted hold
 * when that finds nothing.  Thread 0 unlocks its own: rm_fcp_unlock_own,
 * or the counted hold when that says a releaser took the passive one
 * (pw_back_out).  Thread 2 is a writer: it waits until no hold is left
 * (passive NULL and CNT 0).  FAIL: membarrier fails in the releaser (it
 * fences and waits until the owner's thread passed a barrier:
 * thread_barrier).  RELOCK: the owner takes a second passive hold after
 * its unlock and unlocks it too (three holds, three unlocks): a take of
 * either hold must be told apart by `stolen`.
 *
 * FORK: thread 2 forks at any moment instead.  The child gets a copy of
 * memory (cm[]): what sits in the other threads' store buffers is not in
 * it, so the child sees each thread's stores in program order up to some
 * point.  Only the child's thread runs there (plain steps).  It runs
 * fork_child on record 0, releases obj as a foreign hold if record 0
 * still holds it (an orphan), bumps the version and asserts that record 0
 * no longer holds obj.
 *
 * Property: the two unlocks release the two holds, each once: a passive
 * hold counted by both leaves the counted one in place and the writer
 * waiting for ever (an invalid end state); the counted hold released
 * twice trips an assertion.  The child finishes with no hold left.
 *
 * Mutants (-DMUTANT_x):
 *  no_membarrier    the releaser CASes `passive` right after its BUSY
 *                   mark, without the membarrier: the owner's U1 still
 *                   in its store buffer, both count the passive hold as
 *                   theirs and the counted hold leaks (the writer waits
 *                   for ever)
 *  fork_keeps_busy  (FORK) fork_child does not clear RM_FCP_NEST_BUSY: a
 *                   releaser gone between its mark and its clear leaves
 *                   the child's release of the orphan spinning for ever
 *
 * Not a mutant: fork_child keeping records of other threads that hold
 * nothing costs the child's writers a membarrier each (their `seen` never
 * reaches a new version), not a wait: released() counts a record whose
 * `passive` is not obj as done.
 */
#define NPROC 3
#define TO 0          /* the owner of record 0 */
#define TR 1          /* the releaser */
#define TW 2          /* the writer (with FORK: the forking thread) */

/* shared words */
#define P0 0          /* record 0: passive (1: obj) */
#define NEST 1        /* record 0: nest (BUSY) */
#define STOLEN 2      /* record 0: stolen */
#define S0 3          /* record 0: seen */
#define INUSE 4       /* record 0: in_use */
#define VER 5         /* the domain's version */
#define CNT 6         /* the lock's counted holds */
#define NVAR 7

#define BUSY 128
#define INF 255

#include "tso.pml"

byte done;

inline report(t, v, s) {      /* rm_fcp_report (the owner's) */
  LD(t, VER, v);
  LD(t, S0, s);
  if
  :: s != v -> ST(t, S0, v)
  :: else
  fi
}

/* rm_fcp_release_foreign on record 0 (the releaser's own record is
 * skipped: it holds nothing).  took: it released the passive hold. */
inline release_foreign(t, n, took, mb) {
  took = 0;
  do
  :: SEEN(t, INUSE) == 0 || SEEN(t, P0) != 1 -> break
  :: SEEN(t, INUSE) != 0 && SEEN(t, P0) == 1 ->
     LD(t, NEST, n);
     if
     :: (n & BUSY) != 0 -> (SEEN(t, NEST) & BUSY) == 0   /* another releaser */
     :: else ->
        atomic { sbn[t] == 0 -> n = mem[NEST]; if :: n == 0 -> mem[NEST] = BUSY :: else fi };
        if
        :: n == 0 ->
#ifndef MUTANT_no_membarrier
#ifndef FAIL
           MEMBARRIER(t, mb);
#else
           FENCE(t);
           sbn[TO] == 0;             /* thread_barrier: the owner passed one */
#endif
#endif
           atomic { sbn[t] == 0 -> if :: mem[P0] == 1 -> mem[P0] = 0; took = 1 :: else fi };
           if
           :: took -> LD(t, STOLEN, n); ST(t, STOLEN, n + 1)
           :: else
           fi;
           ST(t, NEST, 0);              /* release */
           break
        :: else                       /* lost the race for the mark: look again */
        fi
     fi
  od
}

inline release_counted(t, c) {
  atomic { sbn[t] == 0 -> c = mem[CNT]; assert(c > 0); mem[CNT] = c - 1 }
}

proctype Owner() {
  byte n, s0, p, s, v, c;
  bool mine;
#ifdef RELOCK
  bool again = 1;
unlock:
#endif
  /* rm_fcp_unlock_own(d, r, obj) */
  (SEEN(TO, NEST) & BUSY) == 0;          /* rm_fcp_nest_settled */
  LD(TO, STOLEN, s0);
  LD(TO, P0, p);
  if
  :: p != 1 -> mine = 0
  :: else ->
     ST(TO, P0, 0);                      /* U1; membarrier registered: no fence */
     (SEEN(TO, NEST) & BUSY) == 0;       /* settled */
     LD(TO, STOLEN, s);
     mine = (s == s0);
     report(TO, v, s)
  fi;
  if
  :: !mine -> release_counted(TO, c)   /* some other hold, as a count would */
  :: else
  fi;
#ifdef RELOCK
  if
  :: again ->                          /* a new passive hold, then its unlock */
     again = 0;
     ST(TO, P0, 1);                     /* R1 (the lock's writer word is free) */
     goto unlock
  :: else
  fi;
#endif
  done++
}

proctype Releaser() {
  byte n, mb, c;
  bool took;
  release_foreign(TR, n, took, mb);
  if
  :: !took -> release_counted(TR, c)
  :: else
  fi;
  done++
}

#ifndef FORK
proctype Writer() {
  SEEN(TW, P0) == 0 && SEEN(TW, CNT) == 0;   /* every hold is gone */
  done++
}
#else
/* The forking thread: fork() at any moment, then the child, on its own
 * copy of memory (cm[]: what the other threads' stores had made of memory
 * at the fork; their buffers are not copied).  Only this thread runs
 * there, so the child's accesses are plain. */
byte cm[NVAR];
proctype Forker() {
  byte n, v;
  d_step {                                   /* fork() */
    n = 0;
    do
    :: n < NVAR -> cm[n] = mem[n]; n++
    :: else -> n = 0; break
    od
  };
  /* fork_child, on record 0 (another thread's) */
#ifndef MUTANT_fork_keeps_busy
  cm[NEST] = cm[NEST] & ~BUSY;
#endif
  if
  :: cm[INUSE] != 0 && cm[P0] == 0 ->
     cm[S0] = INF; cm[INUSE] = 0             /* record_release */
  :: else                                    /* an orphan: kept */
  fi;
  /* the child unlocks the orphan's hold (rm_fcp_release_foreign) */
  if
  :: cm[INUSE] != 0 && cm[P0] == 1 ->
     (cm[NEST] & BUSY) == 0;                 /* another releaser: wait */
     cm[NEST] = BUSY;                        /* (its membarrier: only we run) */
     cm[P0] = 0;
     cm[STOLEN] = cm[STOLEN] + 1;
     cm[NEST] = 0;
     cm[S0] = INF; cm[INUSE] = 0             /* an orphan: record_release */
  :: else
  fi;
  /* the child writes: rm_fcp_begin, then wait for record 0 (released()) */
  cm[VER] = cm[VER] + 1;
  v = cm[VER];
  assert(cm[INUSE] == 0 || cm[P0] == 0 || cm[S0] >= v);   /* no hold left */
  done++
}
#endif

init {
  mem[P0] = 1;          /* record 0 holds obj */
  mem[INUSE] = 1;
  mem[CNT] = 1;         /* and the lock counts one more hold */
  atomic {
    RUN_DRAINERS();
    run Owner();
    run Releaser();
#ifndef FORK
    run Writer();
#else
    run Forker();
#endif
  }
  done == 3
}
