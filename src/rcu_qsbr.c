/*
 * rcu_qsbr.c - quiescent-state-based RCU: registration, quiescent states,
 * grace periods, and the call machinery over them (readmostly/rcu_qsbr.h;
 * design and ordering in docs/rcu.md, "QSBR").
 *
 * Invariants:
 *  1. A record of the QSBR domain has `seen` == RM_RCU_SEEN_OFFLINE while
 *     its thread is offline, waits in synchronize or barrier, or the record
 *     is free; otherwise `seen` is the last version the thread reported
 *     (online).  Only the owner writes it (and the core's exit and fork
 *     handlers).  Versions start at 1 and never reach RM_RCU_SEEN_OFFLINE.
 *  2. A grace period for version v is over once every record it found in
 *     the domain's list has `seen` >= v (offline counts: UINT64_MAX).
 *  3. gp_seq is even when no grace period runs and odd while one does; it
 *     changes only under gp_lock (as in rcu.c).
 *  4. Nobody sleeps on a record's `wake` unless it stored 1 there and
 *     then, after a fence, still found `seen` < v; every change of `seen`
 *     by the owner is followed by a fence and a look at `wake`.
 *
 * Ordering points (x86-TSO needs only Q3/W2's fences and the RMWs; the rest
 * are compiler constraints there, and are what C11 asks elsewhere):
 *  Q1 quiescent state: acquire load of the version (readmostly/rcu_qsbr.h).
 *  Q2 report: release store of `seen` = v.  A grace period that reads v
 *     there (acquire, W3) has every load of the thread's sections before
 *     the report ordered before its return, so before the caller's free.
 *  Q3 fence after Q2, then a relaxed load of `wake`.  Pairs with W2: the
 *     waiter stores wake = 1, fences, loads `seen`.  Either the waiter sees
 *     our `seen` (and does not sleep) or we see its 1 (and wake it).
 *     Without Q3 our store of `seen` could still sit in the store buffer
 *     while our load of `wake` reads 0 and the waiter reads the old `seen`:
 *     it would sleep and nobody would wake it.
 *  O1 offline: Q2 and Q3 with RM_RCU_SEEN_OFFLINE.
 *  O2 online: acquire load of the version v, then an exchange (seq_cst RMW)
 *     of `seen` = v, a full fence on x86 (a seq_cst fence elsewhere and
 *     under ThreadSanitizer).  Pairs with W1: a grace period bumps the
 *     version (seq_cst RMW and a fence), then loads `seen`.  Either it
 *     finds our v (older than its own version: it waits for our next
 *     report) or it found RM_RCU_SEEN_OFFLINE before our exchange, and then
 *     every load we make after the exchange sees its updates (store
 *     buffering forbidden by the two fences).  The release half of the
 *     exchange is not needed (an offline thread has no section to order).
 *  W1 grace period: the version bump (rm_fcp_begin: seq_cst RMW, release
 *     of the caller's updates, then a full fence before the record loads).
 *  W2 park: relaxed store wake = 1, seq_cst fence, acquire load of `seen`.
 *  W3 the acquire loads of `seen` by which the wait concludes.
 *  Registration: the core claims the record, reports the current version
 *  and fences (rm_fcp_self_slowpath): a grace period that walked past the
 *  record while it was free (UINT64_MAX) has its updates visible to every
 *  section after the claim (the fence pairs with W1's).
 */
#define _GNU_SOURCE
#include "misuse.h"
#include "rcu_internal.h"
#include <readmostly/rcu_qsbr.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rm_rcu_qsbr_synchronize_as(const char *name);
int rm_rcu_qsbr_barrier_as(const char *name);

/* The stand-in record of unregistered threads: in no domain, never
 * written, `seen` never a version. */
RM_API struct rm_fcp_reader rm_rcu_qsbr_unregistered = {.seen = RM_RCU_SEEN_OFFLINE};
RM_API __thread struct rm_rcu_qsbr_thread rm_rcu_qsbr_tls
    __attribute__((tls_model("initial-exec"))) = {.rec = &rm_rcu_qsbr_unregistered};
RM_API struct rm_fcp_domain rm_rcu_qsbr_dom;

static rm_fcp_domain_t *dom = &rm_rcu_qsbr_dom;
static pthread_once_t dom_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gp_seq; /* invariant 3 */

static struct {
  uint64_t grace_periods, sync_calls, sync_shared, callbacks_run, callback_batches, parks;
} stats;
#define STAT_ADD(f, n) rm_atomic_fetch_add_relaxed(&stats.f, (uint64_t)(n))

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* Store `seen` = v (Q2 / O1), then fence and wake a grace period parked on
 * the record (Q3). */
static void report_store(struct rm_fcp_reader *r, uint64_t v) {
  rm_atomic_store_release(&r->seen, v); /* (Q2) */
  rm_fence_store_load();                /* (Q3) */
  if (rm_atomic_load_relaxed(&r->wake)) rm_fcp_wake_writers(r);
}

static bool is_online(const struct rm_fcp_reader *r) {
  return r != &rm_rcu_qsbr_unregistered && rm_atomic_load_relaxed(&r->seen) != RM_RCU_SEEN_OFFLINE;
}

static void go_offline(struct rm_fcp_reader *r) { report_store(r, RM_RCU_SEEN_OFFLINE); /* (O1) */ }

static void come_online(struct rm_fcp_reader *r) {
  uint64_t v = rm_atomic_load_acquire(&dom->version);
  (void)rm_atomic_xchg_seq_cst(&r->seen, v); /* (O2) */
  rm_fence_after_rmw(); /* the exchange's store before our later loads */
}

/* The core releases the record of an exiting thread next (seen = MAX, and
 * a wake-up without a fence): go offline first, with Q3, so that a grace
 * period parked on the record is surely woken; then forget the record. */
static void thread_exit_hook(struct rm_fcp_reader *r) {
  if (rm_atomic_load_relaxed(&r->seen) != RM_RCU_SEEN_OFFLINE) go_offline(r);
  rm_rcu_qsbr_tls.rec = &rm_rcu_qsbr_unregistered;
  rm_rcu_qsbr_tls.depth = 0;
}

static void dom_init(void) {
  rm_fcp_domain_init_static(dom);
  dom->version = 1; /* invariant 1 */
  dom->no_tls_cache = 1;       /* records live in rm_rcu_qsbr_tls */
  dom->fork_release_holds = 1; /* (no holds: records hold nothing) */
  dom->exit_hook = thread_exit_hook;
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

RM_API rm_fcp_domain_t *rm_rcu_qsbr_domain(void) {
  pthread_once(&dom_once, dom_init);
  return dom;
}

/* ---- registration, quiescent states, offline --------------------------------- */

RM_API RM_NOINLINE void rm_rcu_qsbr_report_slowpath(struct rm_fcp_reader *r, uint64_t v) {
  /* Offline or not registered: stay so (a report would bring the thread
   * online behind the program's back). */
  if (rm_atomic_load_relaxed(&r->seen) == RM_RCU_SEEN_OFFLINE) return;
  report_store(r, v);
}

RM_API int rm_rcu_qsbr_register_thread(void) {
  struct rm_rcu_qsbr_thread *t = &rm_rcu_qsbr_tls;
  if (t->rec != &rm_rcu_qsbr_unregistered) return 0;
  /* Claim a record; the core reports the current version (online) and
   * fences (see "Registration" above). */
  struct rm_fcp_reader *r = rm_fcp_self_slowpath(rm_rcu_qsbr_domain());
  if (!r) return ENOMEM;
  t->depth = 0;
  t->rec = r;
  return 0;
}

static bool in_section_misuse(const char *fn) {
  if (RM_LIKELY(rm_rcu_qsbr_tls.depth == 0)) return false;
  static uint32_t said;
  rm_misuse(&said, "%s inside a read section would wait for itself (refused)", fn);
  return true;
}

RM_API int rm_rcu_qsbr_unregister_thread(void) {
  struct rm_rcu_qsbr_thread *t = &rm_rcu_qsbr_tls;
  struct rm_fcp_reader *r = t->rec;
  if (r == &rm_rcu_qsbr_unregistered) return 0;
  if (in_section_misuse("rm_rcu_qsbr_unregister_thread")) return EBUSY;
  if (is_online(r)) go_offline(r); /* wakes a parked grace period with Q3 */
  t->rec = &rm_rcu_qsbr_unregistered;
  return rm_fcp_domain_leave(dom); /* releases the record */
}

RM_API void rm_rcu_qsbr_thread_offline(void) {
  struct rm_fcp_reader *r = rm_rcu_qsbr_tls.rec;
  if (in_section_misuse("rm_rcu_qsbr_thread_offline")) return;
  if (is_online(r)) go_offline(r);
}

RM_API void rm_rcu_qsbr_thread_online(void) {
  struct rm_fcp_reader *r = rm_rcu_qsbr_tls.rec;
  if (r != &rm_rcu_qsbr_unregistered && !is_online(r)) come_online(r);
}

/* ---- grace periods ----------------------------------------------------------- */

/* Spinning on one record before parking: a busy reader announces within
 * microseconds; one that does not has a sleeping thread or is preempted. */
#define QSBR_SPIN_POLLS 1000u

static bool reported(const struct rm_fcp_reader *r, uint64_t v) {
  return rm_atomic_load_acquire(&r->seen) >= v; /* (W3) */
}

static void wait_record(struct rm_fcp_reader *r, uint64_t v) {
  for (unsigned i = 0; i < QSBR_SPIN_POLLS; i++) {
    if (reported(r, v)) return;
    rm_cpu_relax();
  }
  while (!reported(r, v)) {
    rm_atomic_store_relaxed(&r->wake, 1u);
    rm_fence_store_load(); /* (W2) pairs with Q3 */
    if (reported(r, v)) break;
    STAT_ADD(parks, 1);
    /* Invariant 4: the owner's next change of `seen` finds wake == 1 and
     * wakes us; a wake-up (or a stale 0) returns at once. */
    rm_futex_wait(&r->wake, 1u, CLOCK_MONOTONIC, NULL, false);
  }
  /* Take the flag down, so that the owner's next report makes no futex
   * call for nobody.  Only grace periods (one at a time: gp_lock) set it
   * on this domain's records, and ours is over with this record; a report
   * that still sees 1 makes one useless wake-up, which is harmless. */
  rm_atomic_store_relaxed(&r->wake, 0u);
}

/* One grace period; the caller holds gp_lock. */
static void run_grace_period(void) {
  /* Odd (invariant 3; see rcu.c for why an RMW). */
  rm_atomic_fetch_add_seq_cst(&gp_seq, (uint64_t)1);
  uint64_t v = rm_fcp_begin(dom); /* (W1) */
  /* Records claimed after this load reported a version after our bump or
   * fenced after their claim (see "Registration"): no look needed. */
  for (struct rm_fcp_reader *r = rm_atomic_load_acquire(&dom->head); r; r = r->next)
    if (!reported(r, v)) wait_record(r, v);
  /* Even: the acquire loads above come before this release, so a caller
   * that reads the new value (acquire) has every section it waited for
   * ordered before its return. */
  rm_atomic_fetch_add_seq_cst(&gp_seq, (uint64_t)1);
  STAT_ADD(grace_periods, 1);
}

int rm_rcu_qsbr_synchronize_as(const char *name) {
  if (RM_UNLIKELY(rm_rcu_qsbr_tls.depth != 0)) {
    static uint32_t said_rm, said_other;
    rm_misuse(strcmp(name, "rm_rcu_qsbr_synchronize") == 0 ? &said_rm : &said_other,
              "%s inside a read section would wait for itself (returned EDEADLK)", name);
    return EDEADLK;
  }
  pthread_once(&dom_once, dom_init);
  STAT_ADD(sync_calls, 1);
  /* The snapshot: the end of a grace period that begins after this RMW
   * (rcu_internal.h explains the RMW and the arithmetic). */
  uint64_t s = rm_rcu_gp_snapshot(&gp_seq);
  /* An online caller is offline while it waits (it would wait for itself:
   * it announces nothing meanwhile), and online again after. */
  struct rm_fcp_reader *r = rm_rcu_qsbr_tls.rec;
  bool was_online = is_online(r);
  if (was_online) go_offline(r);
  if (!rm_rcu_gp_wait(&gp_seq, &gp_lock, s, run_grace_period)) STAT_ADD(sync_shared, 1);
  if (was_online) come_online(r);
  return 0;
}

RM_API int rm_rcu_qsbr_synchronize(void) {
  return rm_rcu_qsbr_synchronize_as("rm_rcu_qsbr_synchronize");
}

/* ---- call_rcu ------------------------------------------------------------- */

/* A worker registers on its first batch and is online only while it runs
 * callbacks. */
static void worker_busy(void) {
  if (rm_rcu_qsbr_tls.rec == &rm_rcu_qsbr_unregistered) {
    if (rm_rcu_qsbr_register_thread() != 0) {
      static uint32_t said;
      rm_misuse(&said, "call_rcu worker: cannot register with the qsbr flavor (out of "
                       "memory); its callbacks must not read");
    }
  } else {
    rm_rcu_qsbr_thread_online();
  }
}

static struct rm_fcp_reader *quiesce(void) {
  struct rm_fcp_reader *r = rm_rcu_qsbr_tls.rec;
  if (!is_online(r)) return NULL;
  go_offline(r);
  return r;
}

#define RM_CALL(name) rm_rcu_qsbr_##name
#define CALL_PREFIX "rm_rcu_qsbr_"
#define CALL_FLAVOR_TAG 0x51534252u /* "QSBR" */
#define CALL_TLS_T struct rm_rcu_qsbr_thread
#define CALL_TLS rm_rcu_qsbr_tls
#define CALL_FLAVOR_INIT() pthread_once(&dom_once, dom_init)
/* The library sees the sections its callers count (no NDEBUG there). */
#define CALL_IN_SECTION() (rm_rcu_qsbr_tls.depth != 0)
#define CALL_END_SECTIONS() (rm_rcu_qsbr_tls.depth = 0)
#define CALL_SYNC_AS(name) rm_rcu_qsbr_synchronize_as(name)
#define CALL_QUIESCE() quiesce()
#define CALL_RESUME(r) \
  do {                 \
    if (r) come_online(r); \
  } while (0)
/* An online thread holds off every grace period until its next quiescent
 * state, which rm_rcu_qsbr_call does not announce: the per-CPU object it
 * picks cannot be freed under it.  Offline and unregistered threads take
 * crd_lock instead. */
#define CALL_PIN_BEGIN() is_online(rm_rcu_qsbr_tls.rec)
#define CALL_PIN_END() ((void)0)
#define CALL_WORKER_BUSY() worker_busy()
#define CALL_WORKER_IDLE() rm_rcu_qsbr_thread_offline()
#include "rcu_call_impl.h"

/* ---- fork ------------------------------------------------------------------ */

static void fork_prepare(void) { call_fork_prepare(); }

static void fork_parent(void) { call_fork_parent(); }

/* The core's own fork handler releases the records of the other threads
 * (they never report again).  Here: gp_lock may be held by a thread that
 * is gone; a grace period it ran is over. */
static void fork_child(void) {
  pthread_mutex_init(&gp_lock, NULL);
  if (gp_seq & 1u) gp_seq++;
  call_fork_child();
}
