/*
 * test_rcu.c - the contract of readmostly/rcu.h: nesting, read_ongoing,
 * what synchronize waits for and what it does not, offline threads,
 * registration races, call_rcu (order, conservation, barrier, callbacks
 * that queue callbacks, exiting threads, batching), defer, fork.  Run in
 * both consensus modes (CTest runs it again with READMOSTLY_NO_MEMBARRIER=1).
 */
#include "test.h"
#include <readmostly/rcu.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static uint64_t version(void) { return __atomic_load_n(&rm_rcu_domain()->version, __ATOMIC_ACQUIRE); }
/* A section begun now is one the grace period that moved the version past
 * v0 does not wait for: the version has moved and a reader's lock will
 * report it.  In membarrier mode that needs the gate moved up too: the
 * grace period bumps the version, then opens the gate, and a reader that
 * locks in between finds the gate equal to its old `seen`, reports
 * nothing and is waited for as a straggler (readmostly/fcp.h, "The
 * gate"). A closed gate (fence mode) sends every lock to its report. */
static bool gp_begun_after(uint64_t v0) {
  uint64_t v = version();
  uint64_t g = __atomic_load_n(&rm_rcu_domain()->gate, __ATOMIC_ACQUIRE);
  return v != v0 && ((g & RM_FCP_GATE_CLOSED) || g >= v);
}

/* ---- nesting ---------------------------------------------------------------- */

/* depth sections, one inside the other: inside all the way down, outside
 * after the last unlock. */
static void nest_check(int depth) {
  CHECK(!rm_rcu_read_ongoing());
  for (int i = 0; i < depth; i++) rm_rcu_read_lock();
  for (int i = 0; i < depth; i++) {
    CHECK(rm_rcu_read_ongoing());
    rm_rcu_read_unlock();
  }
  CHECK(!rm_rcu_read_ongoing());
}

static void test_nesting(void) {
  for (int depth = 1; depth <= 100; depth++) nest_check(depth);
  CHECK_ERR(rm_rcu_synchronize(), 0);
}

/* Nesting in every registration state: the inline code works on the
 * thread's record, its nesting record (inner sections) or the stand-in
 * (no record), and the state must come out right whichever way in. */
/* A thread that exits inside nested sections: its sections end there, and
 * a later grace period does not wait for it. */
static void *exit_nested(void *p) {
  (void)p;
  rm_rcu_read_lock();
  rm_rcu_read_lock();
  rm_rcu_read_lock();
  return NULL;
}

static void test_nesting_states(void) {
  CHECK_ERR(rm_rcu_unregister_thread(), 0);
  nest_check(3); /* the first lock registers */
  CHECK_ERR(rm_rcu_unregister_thread(), 0);
  CHECK_ERR(rm_rcu_register_thread(), 0);
  nest_check(2);
  rm_rcu_thread_offline(); /* sections while offline leave the thread offline */
  nest_check(4);
  CHECK(__atomic_load_n(&rm_rcu_tls.own->seen, __ATOMIC_RELAXED) == RM_RCU_SEEN_OFFLINE);
  rm_rcu_thread_online();
  CHECK_ERR(rm_rcu_synchronize(), 0); /* EDEADLK inside: unit.misuse */
  /* A grace period in an inner section's time still waits for the
   * outermost one (covered by test_synchronize_waits' early reader), and
   * one between sections sees the inline code back on the record: the
   * next outermost section reports the new version at its lock. */
  uint64_t v0 = version();
  rm_rcu_read_lock();
  rm_rcu_read_lock();
  rm_rcu_read_unlock();
  rm_rcu_read_unlock();
  CHECK_ERR(rm_rcu_synchronize(), 0);
  rm_rcu_read_lock();
  CHECK(__atomic_load_n(&rm_rcu_tls.rec->seen, __ATOMIC_RELAXED) > v0);
  rm_rcu_read_unlock();
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, exit_nested, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_ERR(rm_rcu_synchronize(), 0);
}

/* ---- synchronize waits for a section that began before it --------------------- */

struct waits {
  int stage;    /* 1: reader inside; 2: reader asked to leave */
  int left;     /* reader's section ended */
  int returned; /* synchronize returned */
  int late_in;  /* the late reader is inside */
  int late_go;  /* the late reader may leave */
};

static void *early_reader(void *p) {
  struct waits *w = (struct waits *)p;
  rm_rcu_read_lock();
  rm_rcu_read_lock(); /* nested: only the outermost unlock ends it */
  __atomic_store_n(&w->stage, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&w->stage, __ATOMIC_ACQUIRE) != 2) sleep_ms(1);
  rm_rcu_read_unlock();
  CHECK_EQ(__atomic_load_n(&w->returned, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(&w->left, 1, __ATOMIC_RELEASE);
  rm_rcu_read_unlock();
  return NULL;
}

static void *syncer(void *p) {
  struct waits *w = (struct waits *)p;
  CHECK_ERR(rm_rcu_synchronize(), 0);
  CHECK_EQ(__atomic_load_n(&w->left, __ATOMIC_ACQUIRE), 1);
  __atomic_store_n(&w->returned, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* A section that begins after the grace period started (the version bump,
 * and the gate moved up: gp_begun_after) is not waited for, however long
 * it lasts. */
static void *late_reader(void *p) {
  struct waits *w = (struct waits *)p;
  rm_rcu_register_thread();
  rm_rcu_read_lock(); /* an old section first: its report is from before */
  rm_rcu_read_unlock();
  uint64_t v0 = version();
  __atomic_store_n(&w->late_in, 1, __ATOMIC_RELEASE);
  while (!gp_begun_after(v0)) sleep_ms(1); /* the grace period has begun */
  rm_rcu_read_lock();
  __atomic_store_n(&w->late_in, 2, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&w->late_go, __ATOMIC_ACQUIRE)) sleep_ms(1);
  rm_rcu_read_unlock();
  rm_rcu_unregister_thread();
  return NULL;
}

static void test_synchronize_waits(void) {
  struct waits w = {0};
  pthread_t r, s, l;
  CHECK_EQ(pthread_create(&l, NULL, late_reader, &w), 0);
  while (__atomic_load_n(&w.late_in, __ATOMIC_ACQUIRE) != 1) sleep_ms(1);
  CHECK_EQ(pthread_create(&r, NULL, early_reader, &w), 0);
  while (__atomic_load_n(&w.stage, __ATOMIC_ACQUIRE) != 1) sleep_ms(1);
  CHECK_EQ(pthread_create(&s, NULL, syncer, &w), 0);
  while (__atomic_load_n(&w.late_in, __ATOMIC_ACQUIRE) != 2) sleep_ms(1);
  sleep_ms(50); /* the grace period has had every chance to end early */
  CHECK_EQ(__atomic_load_n(&w.returned, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(&w.stage, 2, __ATOMIC_RELEASE);
  pthread_join(r, NULL);
  /* It returns while the late reader is still inside.  No time limit: if
   * it waited for the late reader it would never return, and CTest's
   * timeout reports the hang. */
  while (!__atomic_load_n(&w.returned, __ATOMIC_ACQUIRE)) sleep_ms(1);
  CHECK_EQ(__atomic_load_n(&w.returned, __ATOMIC_ACQUIRE), 1);
  pthread_join(s, NULL);
  CHECK_EQ(__atomic_load_n(&w.late_in, __ATOMIC_ACQUIRE), 2);
  __atomic_store_n(&w.late_go, 1, __ATOMIC_RELEASE);
  pthread_join(l, NULL);
}

/* ---- offline and idle threads ---------------------------------------------- */

struct idle {
  int mode; /* 0: stay online and idle; 1: go offline */
  int ready, done;
};

static void *idle_thread(void *p) {
  struct idle *x = (struct idle *)p;
  CHECK_ERR(rm_rcu_register_thread(), 0);
  rm_rcu_read_lock();
  rm_rcu_read_unlock();
  if (x->mode == 1) rm_rcu_thread_offline();
  __atomic_store_n(&x->ready, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) sleep_ms(1);
  if (x->mode == 1) {
    rm_rcu_thread_online();
    rm_rcu_read_lock(); /* reads again after coming online */
    rm_rcu_read_unlock();
  }
  CHECK_ERR(rm_rcu_unregister_thread(), 0);
  return NULL;
}

/* An idle online thread never reports: each grace period settles it with a
 * membarrier (membarrier mode).  An offline one is never looked at. */
static void test_offline(void) {
  for (int mode = 0; mode < 2; mode++) {
    struct idle x = {.mode = mode};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, idle_thread, &x), 0);
    while (!__atomic_load_n(&x.ready, __ATOMIC_ACQUIRE)) sleep_ms(1);
    uint64_t mb0 = __atomic_load_n(&rm_rcu_domain()->consensus_membarrier, __ATOMIC_RELAXED);
    for (int i = 0; i < 20; i++) CHECK_ERR(rm_rcu_synchronize(), 0);
    uint64_t mb = __atomic_load_n(&rm_rcu_domain()->consensus_membarrier, __ATOMIC_RELAXED) - mb0;
    if (mode == 1) CHECK_EQ(mb, 0);
    else if (rm_fcp_membarrier_mode()) CHECK(mb >= 20);
    __atomic_store_n(&x.done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
  }
  /* A section while offline: the thread is inside it, a grace period
   * waits for it, and after it the thread is offline again (idle, it costs
   * grace periods nothing). */
  rm_rcu_register_thread();
  rm_rcu_thread_offline();
  rm_rcu_read_lock();
  CHECK(rm_rcu_read_ongoing());
  CHECK(__atomic_load_n(&rm_rcu_tls.own->seen, __ATOMIC_RELAXED) != RM_RCU_SEEN_OFFLINE);
  rm_rcu_read_unlock();
  CHECK(__atomic_load_n(&rm_rcu_tls.own->seen, __ATOMIC_RELAXED) == RM_RCU_SEEN_OFFLINE);
  rm_rcu_thread_online();
  CHECK(__atomic_load_n(&rm_rcu_tls.own->seen, __ATOMIC_RELAXED) != RM_RCU_SEEN_OFFLINE);
  CHECK_ERR(rm_rcu_unregister_thread(), 0);
}

/* ---- register / unregister races, with a use-after-free oracle ---------------- */

struct obj {
  uint64_t magic; /* OBJ_LIVE while reachable or possibly read */
  uint64_t value;
};
#define OBJ_LIVE 0x11FEull
#define OBJ_DEAD 0xDEADull
static struct obj *shared_obj;
static int churn_stop;
static uint64_t churn_reads;

static void *churner(void *p) {
  (void)p;
  while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
    CHECK_ERR(rm_rcu_register_thread(), 0);
    for (int i = 0; i < 100; i++) {
      rm_rcu_read_lock();
      struct obj *o = rm_rcu_dereference(shared_obj);
      CHECK_EQ(__atomic_load_n(&o->magic, __ATOMIC_RELAXED), OBJ_LIVE);
      if ((i & 31) == 0) sched_yield(); /* preempted inside */
      CHECK_EQ(__atomic_load_n(&o->magic, __ATOMIC_RELAXED), OBJ_LIVE);
      rm_rcu_read_unlock();
    }
    __atomic_fetch_add(&churn_reads, 100, __ATOMIC_RELAXED);
    CHECK_ERR(rm_rcu_unregister_thread(), 0);
  }
  return NULL;
}

static void test_register_races(void) {
  struct obj *o = (struct obj *)malloc(sizeof *o);
  o->magic = OBJ_LIVE;
  o->value = 0;
  rm_rcu_assign_pointer(shared_obj, o);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&t[i], NULL, churner, NULL), 0);
  /* At least 2000 replacements, and until the churners have read a while
   * (they may get no CPU at first). */
  for (int i = 0; i < 2000 || __atomic_load_n(&churn_reads, __ATOMIC_RELAXED) < 20000; i++) {
    struct obj *n = (struct obj *)malloc(sizeof *n);
    n->magic = OBJ_LIVE;
    n->value = (uint64_t)i;
    struct obj *old = rm_rcu_xchg_pointer(&shared_obj, n);
    CHECK_ERR(rm_rcu_synchronize(), 0);
    __atomic_store_n(&old->magic, OBJ_DEAD, __ATOMIC_RELAXED); /* a reader still there would see it */
    free(old);
  }
  __atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(__atomic_load_n(&churn_reads, __ATOMIC_RELAXED) > 0);
  free(shared_obj);
}

/* ---- call_rcu ----------------------------------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 5000
struct cb {
  struct rm_rcu_head head;
  int producer, seq;
  int chain; /* callbacks still to queue from this one */
};
static int runs[PRODUCERS][PER_PRODUCER];
static int last_seq[PRODUCERS];
static int order_errors;
static int chain_runs;

static void count_cb(struct rm_rcu_head *h) {
  struct cb *c = (struct cb *)(void *)h;
  __atomic_fetch_add(&runs[c->producer][c->seq], 1, __ATOMIC_RELAXED);
  /* One queue (the default object) and one worker: each producer's
   * callbacks run in the order it queued them. */
  if (c->seq != last_seq[c->producer] + 1) order_errors++;
  last_seq[c->producer] = c->seq;
}

static struct cb *cbs;

static void producer(void *arg, int idx) {
  (void)arg;
  for (int i = 0; i < PER_PRODUCER; i++) {
    struct cb *c = &cbs[idx * PER_PRODUCER + i];
    c->producer = idx;
    c->seq = i;
    if (i % 3 == 0) { /* allowed inside a read section */
      rm_rcu_read_lock();
      rm_rcu_call(&c->head, count_cb);
      rm_rcu_read_unlock();
    } else {
      rm_rcu_call(&c->head, count_cb);
    }
  }
  /* The thread exits with callbacks pending: they still run. */
}

static void test_call_rcu(void) {
  cbs = (struct cb *)calloc(PRODUCERS * PER_PRODUCER, sizeof *cbs);
  for (int p = 0; p < PRODUCERS; p++) last_seq[p] = -1;
  test_run_threads(PRODUCERS, producer, NULL);
  CHECK_ERR(rm_rcu_barrier(), 0);
  for (int p = 0; p < PRODUCERS; p++)
    for (int i = 0; i < PER_PRODUCER; i++) CHECK_EQ(runs[p][i], 1);
  CHECK_EQ(order_errors, 0);
  free(cbs);
}

/* A callback runs only after a grace period: one queued while a reader is
 * inside must not run before that reader leaves. */
static int gp_cb_ran;
static void gp_cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_store_n(&gp_cb_ran, 1, __ATOMIC_RELEASE);
}
static void *holder(void *p) {
  int *stage = (int *)p;
  rm_rcu_read_lock();
  __atomic_store_n(stage, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(stage, __ATOMIC_ACQUIRE) != 2) sleep_ms(1);
  CHECK_EQ(__atomic_load_n(&gp_cb_ran, __ATOMIC_ACQUIRE), 0);
  rm_rcu_read_unlock();
  return NULL;
}
static void test_call_waits(void) {
  int stage = 0;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, holder, &stage), 0);
  while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) != 1) sleep_ms(1);
  struct rm_rcu_head h;
  rm_rcu_call(&h, gp_cb);
  sleep_ms(50);
  CHECK_EQ(__atomic_load_n(&gp_cb_ran, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(&stage, 2, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&gp_cb_ran, __ATOMIC_ACQUIRE), 1);
}

/* Callbacks that queue callbacks: each barrier runs what was queued before
 * it, so repeated barriers finish the chains. */
static void chain_cb(struct rm_rcu_head *h) {
  struct cb *c = (struct cb *)(void *)h;
  __atomic_fetch_add(&chain_runs, 1, __ATOMIC_RELAXED);
  if (c->chain > 0) {
    c->chain--;
    rm_rcu_call(&c->head, chain_cb);
  }
}
static void test_chains(void) {
  struct cb c[10];
  for (int i = 0; i < 10; i++) {
    c[i].chain = 9;
    rm_rcu_call(&c[i].head, chain_cb);
  }
  for (int i = 0; i < 10; i++) CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&chain_runs, __ATOMIC_RELAXED), 100);
}

/* Batching: with batch 100 and a long delay, 99 callbacks wait; the 100th
 * starts the grace period; a barrier never waits for a batch to fill. */
static int batch_runs;
static void batch_cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_fetch_add(&batch_runs, 1, __ATOMIC_RELAXED);
}
static void test_batch(void) {
  struct rm_rcu_call_data *c;
  CHECK_ERR(rm_rcu_call_data_create(&c), 0);
  CHECK_ERR(rm_rcu_call_set_batch(c, 0, 0), EINVAL);
  CHECK_ERR(rm_rcu_call_set_batch(c, 100, 60ull * 1000000000ull), 0);
  rm_rcu_call_data_set_thread(c);
  CHECK(rm_rcu_call_data_thread() == c);
  static struct rm_rcu_head h[250];
  for (int i = 0; i < 99; i++) rm_rcu_call(&h[i], batch_cb);
  sleep_ms(100);
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), 0);
  rm_rcu_call(&h[99], batch_cb);
  /* No time limit (a worker that never starts the batch is a hang CTest's
   * timeout reports). */
  while (__atomic_load_n(&batch_runs, __ATOMIC_RELAXED) < 100) sleep_ms(1);
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), 100);
  for (int i = 100; i < 150; i++) rm_rcu_call(&h[i], batch_cb);
  CHECK_ERR(rm_rcu_barrier(), 0); /* does not wait for 50 more */
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), 150);
  /* The knob changes while the worker runs (ThreadSanitizer checks that the
   * worker reads it atomically). */
  static struct rm_rcu_head k[64];
  for (int i = 0; i < 64; i++) {
    CHECK_ERR(rm_rcu_call_set_batch(c, 1u + (unsigned)(i % 3), 1000000u), 0);
    rm_rcu_call(&k[i], batch_cb);
  }
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), 214);
  /* Freeing an object runs what it still holds. */
  for (int i = 150; i < 250; i++) rm_rcu_call(&h[i], batch_cb);
  rm_rcu_call_data_set_thread(NULL);
  CHECK_ERR(rm_rcu_call_data_free(c), 0);
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), 314);
  CHECK_ERR(rm_rcu_call_data_free(rm_rcu_call_data_default()), EINVAL);
}

/* Per-CPU objects: callbacks land on the caller's CPU's object and run. */
static void test_per_cpu(void) {
  CHECK_ERR(rm_rcu_call_data_create_per_cpu(), 0);
  CHECK(rm_rcu_call_data_cpu(0) != NULL);
  CHECK(rm_rcu_call_data_cpu(-1) == NULL);
  int before = __atomic_load_n(&batch_runs, __ATOMIC_RELAXED);
  static struct rm_rcu_head h[64];
  for (int i = 0; i < 64; i++) rm_rcu_call(&h[i], batch_cb);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), before + 64);
  for (int i = 0; i < 64; i++) rm_rcu_call(&h[i], batch_cb);
  CHECK_ERR(rm_rcu_call_data_free_per_cpu(), 0); /* runs what they hold */
  CHECK_EQ(__atomic_load_n(&batch_runs, __ATOMIC_RELAXED), before + 128);
  CHECK(rm_rcu_call_data_cpu(0) == NULL);
}

/* ---- defer ------------------------------------------------------------------- */

static int deferred;
static void defer_fn(void *p) { __atomic_fetch_add(&deferred, (int)(intptr_t)p, __ATOMIC_RELAXED); }
static void test_defer(void) {
  for (int i = 0; i < 1000; i++) CHECK_ERR(rm_rcu_defer(defer_fn, (void *)(intptr_t)1), 0);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&deferred, __ATOMIC_RELAXED), 1000);
}

/* ---- shared grace periods ---------------------------------------------------- */

static void sync_many(void *arg, int idx) {
  (void)arg;
  (void)idx;
  for (int i = 0; i < 200; i++) CHECK_ERR(rm_rcu_synchronize(), 0);
}
static void test_shared_gp(void) {
  struct rm_rcu_stats a, b;
  rm_rcu_get_stats(&a);
  test_run_threads(4, sync_many, NULL);
  rm_rcu_get_stats(&b);
  CHECK_EQ(b.sync_calls - a.sync_calls, 800);
  /* Never more grace periods than calls; how many are shared depends on
   * timing, which a test does not judge (the benchmark measures it). */
  CHECK(b.grace_periods - a.grace_periods <= 800);
  CHECK(b.grace_periods - a.grace_periods >= 1);
}

/* ---- fork --------------------------------------------------------------------- */

static int fork_cb_ran;
static void fork_cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_fetch_add(&fork_cb_ran, 1, __ATOMIC_RELAXED);
}
static void *fork_reader(void *p) {
  int *stop = (int *)p;
  while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
    rm_rcu_read_lock();
    rm_rcu_read_unlock();
  }
  return NULL;
}
static void *fork_holder(void *p) {
  int *stage = (int *)p;
  rm_rcu_read_lock();
  __atomic_store_n(stage, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(stage, __ATOMIC_ACQUIRE) != 2) sleep_ms(1);
  rm_rcu_read_unlock();
  return NULL;
}
/* The child synchronizes and runs callbacks although another thread of
 * the parent was inside a section at fork() (that section, of a thread
 * the child does not have, ends there), and a reader was busy. */
static void test_fork(void) {
  if (TEST_UNDER_TSAN) return; /* the child starts a worker thread */
  int stop = 0, stage = 0;
  pthread_t t, th;
  CHECK_EQ(pthread_create(&t, NULL, fork_reader, &stop), 0);
  static struct rm_rcu_head h[10];
  for (int i = 0; i < 5; i++) rm_rcu_call(&h[i], fork_cb); /* the worker exists */
  CHECK_ERR(rm_rcu_barrier(), 0);
  fork_cb_ran = 0;
  CHECK_EQ(pthread_create(&th, NULL, fork_holder, &stage), 0);
  while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) != 1) sleep_ms(1);
  rm_rcu_read_lock(); /* the parent forks inside a section, as programs may */
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(20);
    rm_rcu_read_unlock();
    if (rm_rcu_synchronize() != 0) _exit(2);
    for (int i = 5; i < 10; i++) rm_rcu_call(&h[i], fork_cb);
    if (rm_rcu_barrier() != 0) _exit(3);
    _exit(__atomic_load_n(&fork_cb_ran, __ATOMIC_RELAXED) == 5 ? 0 : 4);
  }
  rm_rcu_read_unlock();
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&stage, 2, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  pthread_join(th, NULL);
}

/* ---- misuse ----------------------------------------------------------------------- */

static void test_errors(void) {
  CHECK_ERR(rm_rcu_register_thread(), 0);
  CHECK_ERR(rm_rcu_register_thread(), 0); /* twice is fine */
  CHECK_ERR(rm_rcu_unregister_thread(), 0);
  CHECK_ERR(rm_rcu_unregister_thread(), 0); /* not registered: nothing to do */
  CHECK_ERR(rm_rcu_call_data_create(NULL), EINVAL);
  CHECK_ERR(rm_rcu_call_data_free(NULL), EINVAL);
  CHECK_ERR(rm_rcu_call_set_batch(NULL, 2000000u, 0), EINVAL);
  /* Pointer helpers. */
  int a = 1, b = 2;
  int *p = &a;
  CHECK(rm_rcu_dereference(p) == &a);
  rm_rcu_assign_pointer(p, &b);
  CHECK(p == &b);
  CHECK(rm_rcu_xchg_pointer(&p, &a) == &b);
  CHECK(rm_rcu_cmpxchg_pointer(&p, &b, &b) == &a); /* fails: p is &a */
  CHECK(p == &a);
  CHECK(rm_rcu_cmpxchg_pointer(&p, &a, &b) == &a);
  CHECK(p == &b);
}

int main(void) {
  printf("mode: %s\n", rm_fcp_membarrier_mode() ? "membarrier" : "fence");
  test_errors();
  test_nesting();
  test_nesting_states();
  test_synchronize_waits();
  test_offline();
  test_register_races();
  test_call_rcu();
  test_call_waits();
  test_chains();
  test_batch();
  test_per_cpu();
  test_defer();
  test_shared_gp();
  test_fork();
  printf("mode at end: %s\n", rm_fcp_membarrier_mode() ? "membarrier" : "fence");
  TEST_MAIN_END();
}
