/*
 * rcu.c - FCP-RCU: registration, grace periods, call_rcu workers
 * (readmostly/rcu.h; design and ordering in docs/rcu.md).
 * Model: models/rcu.pml (x86-TSO, membarrier; docs/models.md).
 *
 * Invariants:
 *  1. The RCU domain's records hold nothing but &rm_rcu_in_flight, and only
 *     while their thread is inside a read section (rm_rcu_read_ongoing()).
 *  2. gp_seq is even when no grace period runs and odd while one does; it
 *     changes only under gp_lock.  A caller that read gp_seq = s0 needs the
 *     end of a grace period that began after its read: gp_seq reaching
 *     (s0 + 3) & ~1.
 *  3. A record whose `seen` is RM_RCU_SEEN_OFFLINE ("never wait for me":
 *     its thread is offline, or waits in synchronize or barrier) has no
 *     section whose loads have begun: every lock that finds its record in
 *     that state leaves it (leave_offline: `seen` = 0 and a full fence, one
 *     instruction) before the section's first load, be it the outermost
 *     lock (rm_rcu_read_lock_report) or an inner one, in a signal handler
 *     that interrupted the outermost lock before it got there
 *     (rm_rcu_read_lock_slowpath).  The state is entered only outside any
 *     section (go_offline).
 *  4. A callback is in exactly one place: a call data object's queue, its
 *     worker's current batch (crd->batch), or running.
 *  5. A section that begins while its thread is offline runs with `seen`
 *     0 (never a version: the domain's versions start at 1), which grace
 *     periods wait for as for any section that has not reported; its
 *     outermost unlock finds 0 and puts the record offline again.  So an
 *     offline thread stays offline across the sections it runs, its own or
 *     its signal handlers'.
 */
#define _GNU_SOURCE
#include "misuse.h"
#include "rcu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The stand-in record of threads without one (not registered), shared by
 * all of them and in no domain.  Its `passive` starts as its own address
 * (not NULL: a read lock goes to rm_rcu_read_lock_slowpath()); a misplaced
 * unlock stores NULL there, and a lock that then finds NULL stores "in
 * flight" (both relaxed atomics, harmless): such a lock finds `seen`
 * (RM_RCU_SEEN_OFFLINE, never written, never a version) different from
 * the gate and its slow path sees the stand-in; a lock that finds "in
 * flight" finds `seen` offline and goes to the slow path too.
 * rm_rcu_read_ongoing() never trusts its `passive`. */
RM_API struct rm_fcp_reader rm_rcu_unregistered = {.passive = &rm_rcu_unregistered,
                                                    .seen = RM_RCU_SEEN_OFFLINE};
RM_API __thread struct rm_rcu_thread rm_rcu_tls
    __attribute__((tls_model("initial-exec"))) = {.rec = &rm_rcu_unregistered};
RM_API const uint64_t rm_rcu_in_flight = 0x52435500u; /* its address is what counts */
RM_API struct rm_fcp_domain rm_rcu_dom;

static rm_fcp_domain_t *dom = &rm_rcu_dom;
static pthread_once_t dom_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gp_seq; /* invariant 2 */

static struct {
  uint64_t grace_periods, sync_calls, sync_shared, callbacks_run, callback_batches;
} stats;
#define STAT_ADD(f, n) rm_atomic_fetch_add_relaxed(&stats.f, (uint64_t)(n))

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* Signals are blocked while a thread registers or unregisters: a read
 * lock in a handler would otherwise find the thread's state half made (or
 * allocate inside the allocator the thread is in). */
static void signals_block(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, old);
}
static void signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* Forget the thread's record (the record itself is released by the
 * caller or the core).  Signals are blocked. */
static void tls_reset(struct rm_rcu_thread *t) {
  t->rec = &rm_rcu_unregistered;
  t->own = NULL;
  t->depth = 0;
}

/* The thread has record r from now on, outside any section.  Signals are
 * blocked. */
static void tls_attach(struct rm_rcu_thread *t, struct rm_fcp_reader *r) {
  t->own = r;
  t->depth = 0;
  t->rec = r;
}

static void thread_exit_hook(struct rm_fcp_reader *r) {
  (void)r;
  /* The core releases the record next (a section left open ends there).
   * Forget it, so that a later destructor of this thread that reads
   * registers afresh instead of writing into a record another thread may
   * own by then. */
  sigset_t old;
  signals_block(&old);
  tls_reset(&rm_rcu_tls);
  signals_restore(&old);
}

static void dom_init(void) {
  rm_fcp_domain_init_static(dom);
  /* Versions start at 1: a `seen` of 0 marks a section begun offline
   * (invariant 5), never a version reported. */
  dom->version = 1;
  dom->no_tls_cache = 1;       /* records live in rm_rcu_tls */
  dom->fork_release_holds = 1; /* sections of threads gone at fork() end there */
  dom->exit_hook = thread_exit_hook;
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

RM_API rm_fcp_domain_t *rm_rcu_domain(void) {
  pthread_once(&dom_once, dom_init);
  return dom;
}

/* ---- registration ---------------------------------------------------------- */

static struct rm_fcp_reader *claim(void) {
  rm_fcp_domain_t *d = rm_rcu_domain();
  /* The core claims a record, reports the current version and fences: a
   * synchronize that counted the record as free (seen == UINT64_MAX) before
   * the claim has its updates visible to every section we begin.  */
  struct rm_fcp_reader *r = rm_fcp_self_slowpath(d);
  if (r == NULL) return NULL;
  /* The claim set the mode up (membarrier registration): open the gate,
   * so that our sections take the fast path even if no grace period ever
   * runs. */
  rm_fcp_gate_open(d);
  return r;
}

/* Leave the offline state (invariant 3): `seen` = 0 and a full fence, in
 * one instruction (an exchange) on x86, so that no signal handler of this
 * thread can run between the two.  Dekker with a grace period, which bumps
 * the version (seq_cst RMW and a fence, rm_fcp_begin) and then loads
 * `seen`: either it sees 0 and treats the record as a straggler
 * (membarrier, then the truth of `passive`), or it saw UINT64_MAX before
 * our exchange, and then every load we make after it sees its version and
 * every update made before it. */
static void leave_offline(struct rm_fcp_reader *r) {
  (void)rm_atomic_xchg_seq_cst(&r->seen, (uint64_t)0);
  rm_fence_after_rmw(); /* the exchange's store before our later loads */
}

/* Come back online: leave the offline state, then report the version
 * (its acquire load comes after the fence).  A signal handler's section
 * between the two finds `seen` 0, begins and ends as a section begun
 * offline (invariant 5), and leaves the record offline; the report then
 * stores the version over that. */
static void come_online(struct rm_fcp_reader *r) {
  leave_offline(r);
  RM_DEBUG_YIELD();
  rm_fcp_report(r->domain, r);
}

/* Enter the offline state, outside any section: a release store, so that
 * everything this thread did before (its sections included) happens before
 * a grace period that reads UINT64_MAX and concludes without it.  One
 * store: a signal handler sees the record online or offline.  Parked
 * grace periods are woken as by a report (none should be: we are in no
 * section). */
static void go_offline(struct rm_fcp_reader *r) { rm_fcp_report_store(r, RM_RCU_SEEN_OFFLINE); }

static bool is_offline(const struct rm_fcp_reader *r) {
  return rm_atomic_load_relaxed(&r->seen) == RM_RCU_SEEN_OFFLINE;
}

/* Register the calling thread (the read lock of a thread without a
 * record), with signals blocked.  Returns its record, outside any
 * section.  A handler may have registered the thread since the caller
 * looked: then that record. */
static struct rm_fcp_reader *attach(struct rm_rcu_thread *t) {
  sigset_t old;
  signals_block(&old);
  struct rm_fcp_reader *r = t->own;
  if (!r) {
    r = claim();
    if (!r) {
      fprintf(stderr, "readmostly: rcu_read_lock: cannot allocate this thread's RCU record "
                      "(out of memory); call rm_rcu_register_thread() to get an error instead\n");
      abort();
    }
    tls_attach(t, r);
  }
  signals_restore(&old);
  return r;
}

/* The read lock's slow path, before R1: the lock found `passive` not NULL
 * and not a nested section the inline code can begin by itself.
 *  - The stand-in: the thread is not registered.  Register it (or find
 *    that a signal handler did meanwhile) and return its record, for the
 *    inline code to begin the outermost section on.
 *  - The thread's record, in flight with `seen` offline: this lock runs in
 *    a signal handler that interrupted the thread's outermost lock between
 *    R1 and the slow path in which it leaves the offline state
 *    (rm_rcu_read_lock_report).  Leave it here, then begin an inner
 *    section; return NULL (the lock is done). */
RM_API RM_NOINLINE struct rm_fcp_reader *rm_rcu_read_lock_slowpath(void) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  struct rm_fcp_reader *r = t->rec;
  if (r == &rm_rcu_unregistered) return attach(t);
  if (rm_atomic_load_relaxed(&r->passive) == NULL) return r; /* a handler registered us */
  RM_ASSERT(r == t->own && is_offline(r), "read lock slow path on record %p (own %p)",
            (void *)r, (void *)t->own);
  leave_offline(r);
  RM_DEBUG_YIELD();
  t->depth++; /* an inner section of the interrupted one */
  return NULL;
}

/* The read lock's slow path, inside the section (R1 is stored): the gate
 * g differed from `seen`.
 *
 * On the stand-in (its `passive` was NULL after a misplaced unlock): get a
 * record and begin the section on it, as the inline code would have.
 *
 * On the thread's record, offline (rm_rcu_thread_offline, or waiting in
 * synchronize or barrier: a section of the thread, or of a signal handler):
 * leave the offline state for this section only (invariant 5).
 * leave_offline's full fence also orders R1 before the section's loads.
 * A `seen` of 0 is a section begun offline whose state a signal handler
 * finds: inside the thread's come_online (between leaving the offline
 * state and reporting), inside the unlock of such a section (between U1
 * and its slow path), or after an inner lock of a handler that left the
 * offline state for this lock (rm_rcu_read_lock_slowpath).  This section
 * runs as one begun offline too; the fence already ran, and the closed
 * gate of fence mode asks for one more for R1.
 *
 * On the thread's record, online: a closed gate means fence mode (or
 * membarrier not set up yet): the fence orders R1 before the section's
 * loads (Dekker with the writer's fence after its version bump).  An open
 * one means membarrier mode: no fence, as on the fast path.  Then report
 * the version, although R1 is already stored: a synchronize that bumped
 * the version to v and reads seen >= v does not wait for this record,
 * which is sound because this section's loads all come after our acquire
 * load of v (the body runs after we return), so they see every update made
 * before that bump.  A synchronize parked on this record (for an earlier
 * version) is woken as an unlock's report would wake it.
 *
 * A gate that lags the version (a grace period bumped it and has not
 * opened the gate yet, or something bumped the version without opening
 * it) is moved up, so that later sections find it equal again. */
RM_API RM_NOINLINE void rm_rcu_read_lock_report(struct rm_fcp_reader *r, uint64_t g) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  if (RM_UNLIKELY(r == &rm_rcu_unregistered)) {
    r = attach(t);
    rm_atomic_store_relaxed(&r->passive, (const void *)&rm_rcu_in_flight); /* (R1) */
    rm_compiler_barrier();
    g = rm_atomic_load_relaxed(&rm_rcu_dom.gate);
    if (g == rm_atomic_load_relaxed(&r->seen)) return;
  }
  RM_ASSERT(r == t->own, "read lock on record %p, not the thread's own %p", (void *)r,
            (void *)t->own);
  uint64_t s = rm_atomic_load_relaxed(&r->seen);
  if (s == RM_RCU_SEEN_OFFLINE) {
    leave_offline(r);
    return;
  }
  if (g & RM_FCP_GATE_CLOSED) rm_fence_store_load();
  if (s == 0) return;
  RM_DEBUG_YIELD();
  uint64_t v = rm_atomic_load_acquire(&rm_rcu_dom.version);
  if (s != v) rm_fcp_report_store(r, v);
  if (!(g & RM_FCP_GATE_CLOSED) && g < v) rm_fcp_gate_open(&rm_rcu_dom);
}

static void unlock_misuse(void) {
  static uint32_t said;
  rm_misuse(&said, "rm_rcu_read_unlock without a matching rm_rcu_read_lock (ignored)");
}

/* The read unlock's slow path (U1 is stored): `seen` differed from v (the
 * inline code ends inner sections without storing to any record).
 *  - The thread's record: report v, exactly as rm_fcp_report() does (a
 *    release store; wake a synchronize parked on the record).  After a
 *    section begun offline (`seen` 0), put the record offline again
 *    instead (invariant 5).  Already offline: a signal handler that
 *    interrupted this unlock did that for us; or an unlock without a lock
 *    while offline (debug builds assert that in the inline code).
 *  - The stand-in: an unlock without a lock (asserts in debug builds). */
RM_API RM_NOINLINE void rm_rcu_read_unlock_report(struct rm_fcp_reader *r, uint64_t v) {
  if (RM_LIKELY(r == rm_rcu_tls.own)) {
    uint64_t s = rm_atomic_load_relaxed(&r->seen);
    if (s == 0) go_offline(r);
    else if (s != RM_RCU_SEEN_OFFLINE) rm_fcp_report_store(r, v);
  } else {
    unlock_misuse();
  }
}

RM_API int rm_rcu_register_thread(void) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  int e = 0;
  sigset_t old;
  signals_block(&old);
  if (!t->own) {
    struct rm_fcp_reader *r = claim();
    if (r) tls_attach(t, r);
    else e = ENOMEM;
  }
  signals_restore(&old);
  return e;
}

RM_API int rm_rcu_unregister_thread(void) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  if (rm_rcu_read_ongoing()) {
    RM_ASSERT(false, "rm_rcu_unregister_thread inside a read section");
    return EBUSY;
  }
  int e = 0;
  sigset_t old;
  signals_block(&old);
  if (t->own) {
    /* The thread's state first, then the record: never a moment in which
     * the thread would write into a record that is free again. */
    tls_reset(t);
    RM_DEBUG_YIELD();
    e = rm_fcp_domain_leave(rm_rcu_domain()); /* releases the record: seen = MAX */
  }
  signals_restore(&old);
  return e;
}

RM_API void rm_rcu_thread_offline(void) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  RM_ASSERT(!rm_rcu_read_ongoing(), "rm_rcu_thread_offline inside a read section");
  if (rm_rcu_read_ongoing() || !t->own) return;
  RM_DEBUG_YIELD();
  go_offline(t->own);
}

RM_API void rm_rcu_thread_online(void) {
  struct rm_fcp_reader *r = rm_rcu_tls.own;
  RM_DEBUG_YIELD();
  if (r && is_offline(r)) come_online(r);
}

RM_API void rm_rcu_quiescent_state(void) {
  struct rm_fcp_reader *r = rm_rcu_tls.own;
  /* Offline, the thread stays offline (a report would bring it online). */
  if (r && !rm_rcu_read_ongoing() && !is_offline(r)) rm_fcp_report(dom, r);
}

/* ---- grace periods ---------------------------------------------------------- */

/* One grace period; the caller holds gp_lock. */
static void run_grace_period(void) {
  /* Odd: callers that read gp_seq from now on need the next grace period
   * too (this one may have begun before their updates).  seq_cst RMW: the
   * release half orders, for a caller whose snapshot RMW (below) came
   * before this one, that caller's updates before our version bump. */
  rm_atomic_fetch_add_seq_cst(&gp_seq, (uint64_t)1);
  /* Bump the version (seq_cst RMW + fence: the updates above are ordered
   * before the new version, and before our loads of the records), then
   * wait: records that report the version or are outside any section are
   * done; if some have not reported, one membarrier, then wait only for
   * those still inside (spin, then park on the record's wake word). */
  uint64_t v = rm_fcp_begin(dom);
  /* Readers compare the gate with their `seen`: moving it up to v sends
   * each to report v once, at its next section (fcp.h, "The gate"). */
  rm_fcp_gate_open(dom);
  rm_fcp_wait(dom, v, &rm_rcu_in_flight, NULL, RM_FCP_WAIT, CLOCK_MONOTONIC, NULL);
  /* Even: the acquire loads by which rm_fcp_wait concluded come before this
   * release, so a caller that reads the new value (acquire) has every
   * section it waited for ordered before its return. */
  rm_atomic_fetch_add_seq_cst(&gp_seq, (uint64_t)1);
  STAT_ADD(grace_periods, 1);
}

int rm_rcu_synchronize_as(const char *name) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  if (RM_UNLIKELY(rm_rcu_read_ongoing())) {
    /* One message per name: the function the program called. */
    static uint32_t said_rm, said_other;
    rm_misuse(strcmp(name, "rm_rcu_synchronize") == 0 ? &said_rm : &said_other,
              "%s inside a read section would wait for itself (returned EDEADLK)", name);
    return EDEADLK;
  }
  pthread_once(&dom_once, dom_init);
  STAT_ADD(sync_calls, 1);
  /* The snapshot: an RMW, see rcu_internal.h. */
  uint64_t s = rm_rcu_gp_snapshot(&gp_seq);
  /* While we wait, this thread is in no section and begins none (but in a
   * signal handler): say so, so that the grace period we wait for does not
   * wait for us (a record that never reports costs a membarrier).  A
   * thread that was offline stays so; a handler's section while we wait
   * runs as a section begun offline (invariant 5), and we come back online
   * after. */
  struct rm_fcp_reader *r = t->own && !is_offline(t->own) ? t->own : NULL;
  if (r) go_offline(r);
  RM_DEBUG_YIELD();
  /* One grace period at most, none when another caller's covered us. */
  if (!rm_rcu_gp_wait(&gp_seq, &gp_lock, s, run_grace_period)) STAT_ADD(sync_shared, 1);
  if (r) come_online(r);
  return 0;
}

RM_API int rm_rcu_synchronize(void) { return rm_rcu_synchronize_as("rm_rcu_synchronize"); }

/* ---- call_rcu ------------------------------------------------------------- */

/* The call machinery (src/rcu_call_impl.h) over this flavor. */
#define RM_CALL(name) rm_rcu_##name
#define CALL_PREFIX "rm_rcu_"
#define CALL_FLAVOR_TAG 0x4d454d42u /* "MEMB" */
#define CALL_TLS_T struct rm_rcu_thread
#define CALL_TLS rm_rcu_tls
#define CALL_FLAVOR_INIT() pthread_once(&dom_once, dom_init)
#define CALL_IN_SECTION() rm_rcu_read_ongoing()
#define CALL_END_SECTIONS() \
  do {                      \
    while (rm_rcu_read_ongoing()) rm_rcu_read_unlock(); \
  } while (0)
#define CALL_SYNC_AS(name) rm_rcu_synchronize_as(name)
/* A barrier waits in no section: grace periods need not wait for it. */
#define CALL_QUIESCE() (t->own && !is_offline(t->own) ? (go_offline(t->own), t->own) : NULL)
#define CALL_RESUME(r) \
  do {                 \
    if (r) come_online(r); \
  } while (0)
/* A registered thread pins with a read section (an offline one stays
 * offline); one without a record would have to register, and an idle
 * record costs every later grace period a membarrier. */
#define CALL_PIN_BEGIN() (t->own ? (rm_rcu_read_lock(), true) : false)
#define CALL_PIN_END() rm_rcu_read_unlock()
/* Callbacks that read register the worker on their own (the read lock). */
#define CALL_WORKER_BUSY() ((void)0)
/* A worker whose callbacks read registered itself: it now idles, so it
 * must not cost grace periods a membarrier. */
#define CALL_WORKER_IDLE()                    \
  do {                                        \
    if (t->own) rm_rcu_thread_offline();      \
  } while (0)
#include "rcu_call_impl.h"

/* ---- fork ------------------------------------------------------------------ */

static void fork_prepare(void) { call_fork_prepare(); }

static void fork_parent(void) { call_fork_parent(); }

static void fork_child(void) {
  /* gp_lock may be held by a thread that is gone: make it anew. */
  pthread_mutex_init(&gp_lock, NULL);
  if (gp_seq & 1u) gp_seq++; /* a grace period of a thread that is gone */
  call_fork_child();
}
