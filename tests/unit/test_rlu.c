/* RLU contract: objects and headers, sections, try_lock and copies, commit
 * and abort, isolation from a running section, conflicts (fine-grained),
 * the writer lock (coarse-grained, and with deferral), log growth and
 * ENOMEM with nothing applied, deferred free, contexts beyond any fixed
 * cap with slot reuse (a free slot costs synchronize nothing), a thread
 * that exits inside a section, and the RLU list. */
#include "test.h"
#include <readmostly/rlu.h>
#include <readmostly/rlu_hash.h>
#include <readmostly/rlu_list.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* A watchdog for the tests that used to hang: a deadlock fails the run
 * with a message instead of waiting for CTest's timeout. */
static const char *watchdog_what;
static void watchdog_fired(int sig) {
  (void)sig;
  static const char m[] = "test_rlu: watchdog: no progress (deadlock?) in ";
  if (write(2, m, sizeof m - 1) < 0) _exit(3);
  if (watchdog_what && write(2, watchdog_what, strlen(watchdog_what)) < 0) _exit(3);
  if (write(2, "\n", 1) < 0) _exit(3);
  _exit(3);
}
static void watchdog(const char *what, unsigned seconds) {
  watchdog_what = what;
  signal(SIGALRM, watchdog_fired);
  alarm(seconds);
}

struct acct {
  long v;
  long pad[3];
};

static bool fence_free; /* the second pass runs everything with the fence-free entry */
static void set_opts(enum rm_rlu_flavor f, size_t chunk, size_t maxlog) {
  struct rm_rlu_options o = {.flavor = f, .stats = true, .log_chunk = chunk,
                             .max_log_bytes = maxlog, .fence_free = fence_free};
  CHECK_ERR(rm_rlu_init(&o), 0);
}

static void test_objects(void) {
  struct acct *a = rm_rlu_alloc(sizeof *a);
  CHECK(a != NULL);
  CHECK(((uintptr_t)a & 15) == 0);
  CHECK(RM_RLU_HDR(a)->copy == NULL);
  CHECK_EQ(RM_RLU_HDR(a)->size, sizeof *a);
  CHECK(rm_rlu_actual(a) == a);
  CHECK(rm_rlu_actual(NULL) == NULL);
  CHECK_ERR(rm_rlu_free(NULL, a), 0);
  void *z = rm_rlu_alloc(0);
  CHECK(z != NULL);
  rm_rlu_free(NULL, z);
}

static void test_single(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  struct acct *a = rm_rlu_alloc(sizeof *a), *b = rm_rlu_alloc(sizeof *b);
  a->v = 10;
  b->v = 20;
  uint64_t clk = rm_rlu_clock();

  /* Read-only section: dereference returns the object, no clock step. */
  rm_rlu_reader_lock(self);
  CHECK(rm_rlu_in_section(self));
  CHECK(RM_RLU_DEREF(self, a) == a);
  rm_rlu_reader_unlock(self);
  CHECK(!rm_rlu_in_section(self));
  CHECK_EQ(rm_rlu_clock(), clk);

  /* try_lock gives a copy; our dereferences see it; the object is not
   * changed before the commit; the commit steps the clock once. */
  rm_rlu_reader_lock(self);
  struct acct *pa = a;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa), 0);
  CHECK(pa != a);
  CHECK(((uintptr_t)pa & 15) == 0);
  CHECK_EQ(pa->v, 10);
  CHECK(RM_RLU_HDR(pa)->copy == RM_RLU_COPY_MARK);
  CHECK(rm_rlu_actual(pa) == a);
  CHECK(rm_rlu_same(pa, a));
  CHECK(RM_RLU_DEREF(self, a) == pa);
  CHECK(RM_RLU_DEREF(self, pa) == pa);
  struct acct *pa2 = pa;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa2), 0); /* copy given: same copy back */
  CHECK(pa2 == pa);
  pa2 = a;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa2), 0); /* locked by us: same copy */
  CHECK(pa2 == pa);
  pa->v = 11;
  CHECK_EQ(a->v, 10);
  CHECK(RM_RLU_HDR(a)->copy == pa);
  rm_rlu_reader_unlock(self);
  CHECK_EQ(a->v, 11);
  CHECK(RM_RLU_HDR(a)->copy == NULL);
  CHECK_EQ(rm_rlu_clock(), clk + 1);

  /* assign_ptr stores the actual address even when given a copy. */
  struct holder { struct acct *p; } *h = rm_rlu_alloc(sizeof *h);
  h->p = NULL;
  rm_rlu_reader_lock(self);
  struct holder *ph = h;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &ph), 0);
  struct acct *pb = b;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pb), 0);
  RM_RLU_ASSIGN_PTR(&ph->p, pb);
  CHECK(ph->p == b);
  pb->v = 21;
  rm_rlu_reader_unlock(self);
  CHECK(h->p == b);
  CHECK_EQ(b->v, 21);

  /* Abort: copies discarded, objects unlocked, clock unchanged. */
  clk = rm_rlu_clock();
  rm_rlu_reader_lock(self);
  pa = a;
  pb = b;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa), 0);
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pb), 0);
  pa->v = 99;
  pb->v = 99;
  rm_rlu_abort(self);
  CHECK(!rm_rlu_in_section(self));
  CHECK_EQ(a->v, 11);
  CHECK_EQ(b->v, 21);
  CHECK(RM_RLU_HDR(a)->copy == NULL);
  CHECK(RM_RLU_HDR(b)->copy == NULL);
  CHECK_EQ(rm_rlu_clock(), clk);

  /* Many sections alternate the two logs. */
  for (int i = 0; i < 1000; i++) {
    rm_rlu_reader_lock(self);
    pa = a;
    CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa), 0);
    pa->v++;
    rm_rlu_reader_unlock(self);
  }
  CHECK_EQ(a->v, 1011);

  struct rm_rlu_stats st;
  rm_rlu_stats_get(&st);
  CHECK(st.commits >= 1002);
  CHECK(st.aborts >= 1);
  rm_rlu_free(NULL, a);
  rm_rlu_free(NULL, b);
  rm_rlu_free(NULL, h);
  rm_rlu_thread_unregister(self);
}

/* A section larger than the log's first chunk, objects of several sizes,
 * one larger than any chunk; then the same with a log limit: ENOMEM, abort,
 * nothing applied. */
static void test_log(void) {
  set_opts(RM_RLU_FINE, 256, 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  enum { N = 300 };
  long *objs[N];
  for (int i = 0; i < N; i++) {
    size_t sz = sizeof(long) * (size_t)(1 + i % 7);
    objs[i] = rm_rlu_alloc(sz);
    memset(objs[i], 0, sz);
  }
  char *big = rm_rlu_alloc(3 << 20);
  memset(big, 'a', 3 << 20);
  rm_rlu_reader_lock(self);
  for (int i = 0; i < N; i++) {
    long *p = objs[i];
    CHECK_ERR(RM_RLU_TRY_LOCK(self, &p), 0);
    p[i % 7] = i + 1;
  }
  char *pbig = big;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pbig), 0);
  CHECK_EQ(pbig[(3 << 20) - 1], 'a');
  pbig[0] = 'b';
  pbig[(3 << 20) - 1] = 'c';
  rm_rlu_reader_unlock(self);
  for (int i = 0; i < N; i++) CHECK_EQ(objs[i][i % 7], i + 1);
  CHECK_EQ(big[0], 'b');
  CHECK_EQ(big[(3 << 20) - 1], 'c');
  rm_rlu_free(NULL, big);
  rm_rlu_thread_unregister(self);

  /* A limit of about 40 copies. */
  set_opts(RM_RLU_FINE, 256, 40 * (48 + 64));
  self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  int i, r = 0;
  for (i = 0; i < N; i++) {
    long *p = objs[i];
    r = RM_RLU_TRY_LOCK(self, &p);
    if (r != 0) break;
    p[i % 7] = -1;
  }
  CHECK_ERR(r, ENOMEM);
  CHECK(i >= 20 && i < N);
  CHECK(RM_RLU_HDR(objs[i])->copy == NULL); /* the failed one is not locked */
  rm_rlu_abort(self);
  for (i = 0; i < N; i++) {
    CHECK_EQ(objs[i][i % 7], i + 1);
    CHECK(RM_RLU_HDR(objs[i])->copy == NULL);
  }
  /* The context still works after the failure. */
  rm_rlu_reader_lock(self);
  long *p0 = objs[0];
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &p0), 0);
  p0[0] = 5;
  rm_rlu_reader_unlock(self);
  CHECK_EQ(objs[0][0], 5);
  rm_rlu_thread_unregister(self);
  for (i = 0; i < N; i++) rm_rlu_free(NULL, objs[i]);
}

/* ---- two threads ---------------------------------------------------------- */
static struct acct *A, *B;
static int phase;
static void wait_phase(int p) {
  while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) < p) usleep(100);
}
static void set_phase(int p) { __atomic_store_n(&phase, p, __ATOMIC_RELEASE); }
static int writer_done;

/* The reader is in a section that read A; a writer commits A and B: its
 * commit must wait for the reader, and the reader keeps reading the old
 * values (both of them) until it leaves. */
static void *iso_reader(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *a = RM_RLU_DEREF(self, A);
  CHECK_EQ(a->v, 1);
  set_phase(1);
  wait_phase(2); /* the writer has locked both and is committing or done */
  usleep(50000);
  CHECK_EQ(__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE), 0); /* waits for us */
  struct acct *b = RM_RLU_DEREF(self, B);
  CHECK_EQ(b->v, 1); /* no half commit */
  a = RM_RLU_DEREF(self, A);
  CHECK_EQ(a->v, 1);
  rm_rlu_reader_unlock(self);
  /* A new section sees both copies or both written back. */
  wait_phase(3);
  rm_rlu_reader_lock(self);
  CHECK_EQ(RM_RLU_DEREF(self, A)->v, 2);
  CHECK_EQ(RM_RLU_DEREF(self, B)->v, 0);
  rm_rlu_reader_unlock(self);
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void *iso_writer(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  wait_phase(1);
  rm_rlu_reader_lock(self);
  struct acct *a = A, *b = B;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &b), 0);
  a->v++;
  b->v--;
  set_phase(2);
  rm_rlu_reader_unlock(self);
  __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
  set_phase(3);
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void test_isolation(enum rm_rlu_flavor f) {
  set_opts(f, 0, 0);
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  A->v = 1;
  B->v = 1;
  phase = 0;
  writer_done = 0;
  pthread_t r, w;
  pthread_create(&r, NULL, iso_reader, NULL);
  pthread_create(&w, NULL, iso_writer, NULL);
  pthread_join(r, NULL);
  pthread_join(w, NULL);
  CHECK_EQ(A->v, 2);
  CHECK_EQ(B->v, 0);
  rm_rlu_free(NULL, A);
  rm_rlu_free(NULL, B);
}

/* Fine-grained conflict: an object locked by another section gives EBUSY;
 * the other's copy is invisible to us (it is not committing). */
static void *conflict_holder(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 42;
  set_phase(1);
  wait_phase(2);
  rm_rlu_reader_unlock(self);
  set_phase(3);
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void test_conflict(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  A = rm_rlu_alloc(sizeof *A);
  A->v = 1;
  phase = 0;
  pthread_t t;
  pthread_create(&t, NULL, conflict_holder, NULL);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  wait_phase(1);
  rm_rlu_reader_lock(self);
  CHECK(RM_RLU_DEREF(self, A) == A); /* not stolen: the holder is not committing */
  CHECK_EQ(RM_RLU_DEREF(self, A)->v, 1);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), EBUSY);
  CHECK(a == A);
  rm_rlu_abort(self);
  set_phase(2);
  wait_phase(3);
  rm_rlu_reader_lock(self);
  a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  CHECK_EQ(a->v, 42);
  rm_rlu_reader_unlock(self);
  pthread_join(t, NULL);
  struct rm_rlu_stats st;
  rm_rlu_stats_get(&st);
  CHECK(st.conflicts >= 1);
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, A);
}

/* Coarse-grained: rm_rlu_init refuses while contexts exist; the writer
 * lock serializes writer sections; try_writer_lock fails while held. */
static void *coarse_holder(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_writer_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_LOCK(self, &a), 0);
  a->v += 5;
  set_phase(1);
  wait_phase(2);
  rm_rlu_reader_unlock(self);
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void test_coarse(void) {
  set_opts(RM_RLU_COARSE, 0, 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  struct rm_rlu_options o = {.flavor = RM_RLU_FINE};
  CHECK_ERR(rm_rlu_init(&o), EBUSY);
  o.flavor = (enum rm_rlu_flavor)5;
  CHECK_ERR(rm_rlu_init(&o), EINVAL);
  A = rm_rlu_alloc(sizeof *A);
  A->v = 0;
  phase = 0;
  pthread_t t;
  pthread_create(&t, NULL, coarse_holder, NULL);
  wait_phase(1);
  rm_rlu_reader_lock(self);
  CHECK_ERR(rm_rlu_try_writer_lock(self), EBUSY);
  rm_rlu_abort(self);
  set_phase(2);
  pthread_join(t, NULL);
  rm_rlu_reader_lock(self);
  CHECK_ERR(rm_rlu_try_writer_lock(self), 0);
  CHECK_ERR(rm_rlu_try_writer_lock(self), 0); /* held: again fine */
  struct acct *a = A;
  CHECK_ERR(RM_RLU_LOCK(self, &a), 0);
  a->v++;
  rm_rlu_reader_unlock(self);
  for (int i = 0; i < 10; i++) {
    rm_rlu_writer_lock(self);
    a = A;
    CHECK_ERR(RM_RLU_LOCK(self, &a), 0);
    a->v++;
    rm_rlu_reader_unlock(self);
  }
  CHECK_EQ(A->v, 16);
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, A);
}

/* 512 contexts registered at once (no cap), each commits; then slots are
 * reused: the next registrations get contexts already allocated. */
enum { MANY = 512 };
static pthread_barrier_t bar;
static rm_rlu_ctx *seen[MANY];
static void many_worker(void *arg, int i) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  seen[i] = self;
  pthread_barrier_wait(&bar);
  rm_rlu_reader_lock(self);
  struct acct *a = A;
  while (RM_RLU_TRY_LOCK(self, &a) != 0) {
    rm_rlu_abort(self);
    sched_yield();
    rm_rlu_reader_lock(self);
    a = A;
  }
  a->v++;
  rm_rlu_reader_unlock(self);
  pthread_barrier_wait(&bar);
  rm_rlu_thread_unregister(self);
}

static void test_many(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  A = rm_rlu_alloc(sizeof *A);
  A->v = 0;
  pthread_barrier_init(&bar, NULL, MANY);
  test_run_threads(MANY, many_worker, NULL);
  pthread_barrier_destroy(&bar);
  CHECK_EQ(A->v, MANY);
  for (int i = 0; i < MANY; i++)
    for (int j = i + 1; j < MANY; j++) CHECK(seen[i] != seen[j]);
  /* Reuse: a new registration gets one of the old contexts. */
  rm_rlu_ctx *c = rm_rlu_thread_register();
  int found = 0;
  for (int i = 0; i < MANY; i++) found |= seen[i] == c;
  CHECK(found);
  rm_rlu_thread_unregister(c);
  rm_rlu_free(NULL, A);
}

/* Deferred free: an object freed in a section is freed after the commit. */
static void test_free(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  struct acct *a = rm_rlu_alloc(sizeof *a);
  struct rm_rlu_stats before, after;
  rm_rlu_stats_get(&before);
  rm_rlu_reader_lock(self);
  struct acct *pa = a;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &pa), 0);
  CHECK_ERR(rm_rlu_free(self, pa), 0);
  rm_rlu_stats_get(&after);
  CHECK_EQ(after.frees, before.frees); /* not yet */
  rm_rlu_reader_unlock(self);
  rm_rlu_stats_get(&after);
  CHECK_EQ(after.frees, before.frees + 1);
  /* An aborted section's frees are dropped. */
  struct acct *b = rm_rlu_alloc(sizeof *b);
  rm_rlu_reader_lock(self);
  CHECK_ERR(rm_rlu_free(self, b), 0);
  rm_rlu_abort(self);
  rm_rlu_stats_get(&before);
  CHECK_EQ(before.frees, after.frees);
  b->v = 3; /* still ours */
  rm_rlu_free(NULL, b);
  rm_rlu_thread_unregister(self);
}

/* A thread exits inside a section holding a lock, another exits after a
 * commit without unregistering: the lock is released, the commit kept,
 * and writers are not blocked. */
static void *exit_in_section(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 1000;
  return NULL;
}
static void *exit_after_commit(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *b = B;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &b), 0);
  b->v = 7;
  rm_rlu_reader_unlock(self);
  return NULL;
}

static void test_exit(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  A->v = 1;
  B->v = 1;
  pthread_t t;
  pthread_create(&t, NULL, exit_in_section, NULL);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, exit_after_commit, NULL);
  pthread_join(t, NULL);
  CHECK_EQ(A->v, 1);
  CHECK(RM_RLU_HDR(A)->copy == NULL);
  CHECK_EQ(B->v, 7);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 2;
  rm_rlu_reader_unlock(self); /* synchronize must not wait for the dead */
  CHECK_EQ(A->v, 2);
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, A);
  rm_rlu_free(NULL, B);
}

/* The fence-free entry's automatic close: a registered thread that stays
 * idle never reports, so every synchronize issues a membarrier; above
 * fence_free_max_barriers per second RLU goes back to the fenced entry,
 * and updates go on.  With UINT_MAX it never does. */
static int idle_stop, idle_ready;
static void *idle_ctx(void *arg) {
  (void)arg;
  rm_rlu_ctx *c = rm_rlu_thread_register();
  __atomic_store_n(&idle_ready, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&idle_stop, __ATOMIC_ACQUIRE)) usleep(1000);
  rm_rlu_thread_unregister(c);
  return NULL;
}
static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
/* One committed update of A by self. */
static void bump_a(rm_rlu_ctx *self) {
  rm_rlu_reader_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v++;
  rm_rlu_reader_unlock(self);
}

/* Each commit's synchronize issues a membarrier for the idle context.
 *  - CLOSES, limit 1 a second: the first window of 100 ms or more closes
 *    the entry (however slow the machine, as long as 64 membarriers take
 *    less than 64 s), and commits issue none after.
 *  - NEVER, no limit: still open after 300 ms of commits.
 *  - BURST, the default limit (5000 a second): 130 commits as fast as they
 *    go stay open, since no window of 100 ms can see them above the limit
 *    (130 membarriers in 100 ms is 1300 a second).  The first rule, 64
 *    membarriers in under 64/limit seconds, closed it here (its mutant:
 *    min_window_ns 0 in barrier_note).
 * Time bounds only end loops; the checks are on what happened. */
enum { CLOSES, NEVER, BURST };
static void test_auto_close(void) {
  if (!fence_free) return;
  for (int mode = CLOSES; mode <= BURST; mode++) {
    struct rm_rlu_options o = {.flavor = RM_RLU_FINE, .stats = true, .fence_free = true,
                               .fence_free_max_barriers = mode == CLOSES  ? 1
                                                          : mode == NEVER ? UINT_MAX
                                                                          : 0};
    CHECK_ERR(rm_rlu_init(&o), 0);
    A = rm_rlu_alloc(sizeof *A);
    A->v = 0;
    __atomic_store_n(&idle_stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&idle_ready, 0, __ATOMIC_RELEASE);
    pthread_t t;
    pthread_create(&t, NULL, idle_ctx, NULL);
    while (!__atomic_load_n(&idle_ready, __ATOMIC_ACQUIRE)) usleep(100);
    rm_rlu_ctx *self = rm_rlu_thread_register();
    CHECK(rm_rlu_fence_free());
    struct rm_rlu_stats st0, st1;
    rm_rlu_stats_get(&st0);
    long n = 0;
    uint64_t t0 = now_ms();
    if (mode == BURST) {
      for (; n < 130; n++) bump_a(self);
    } else {
      while (now_ms() - t0 < (mode == NEVER ? 300u : 60000u)) {
        bump_a(self);
        n++;
        if (mode == CLOSES && !rm_rlu_fence_free()) break;
      }
    }
    rm_rlu_stats_get(&st1);
    uint64_t nb = st1.barriers - st0.barriers;
    CHECK_EQ(A->v, n);
    if (mode != CLOSES) {
      CHECK(rm_rlu_fence_free());
      CHECK_EQ(nb, (uint64_t)n); /* one per synchronize */
    } else {
      CHECK(!rm_rlu_fence_free());
      CHECK(nb >= 128 && nb % 64 == 0); /* closed at a 64th, the window's end */
      for (int i = 0; i < 50; i++) bump_a(self); /* fenced from now on: no membarrier */
      rm_rlu_stats_get(&st1);
      CHECK_EQ(st1.barriers - st0.barriers, nb);
      CHECK_EQ(A->v, n + 50);
    }
    __atomic_store_n(&idle_stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    rm_rlu_thread_unregister(self);
    rm_rlu_free(NULL, A);
    /* rm_rlu_init() chooses again: the entry opens at the next registration. */
    set_opts(RM_RLU_FINE, 0, 0);
    self = rm_rlu_thread_register();
    CHECK(rm_rlu_fence_free());
    rm_rlu_thread_unregister(self);
  }
}

/* Deferral: committed sections stay invisible to other threads until a
 * flush (max_defer sections, a sync request, rm_rlu_sync, unregister), and
 * visible to the writer's own sections. */
static long peek(struct acct *x) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  long v = RM_RLU_DEREF(self, x)->v;
  rm_rlu_reader_unlock(self);
  rm_rlu_thread_unregister(self);
  return v;
}
static void *peek_thread(void *arg) { return (void *)(intptr_t)peek(arg); }
static long peek_other(struct acct *x) {
  pthread_t t;
  void *r;
  pthread_create(&t, NULL, peek_thread, x);
  pthread_join(t, &r);
  return (long)(intptr_t)r;
}
static void bump(rm_rlu_ctx *self, struct acct *x) {
  for (;;) {
    rm_rlu_reader_lock(self);
    struct acct *p = x;
    int r = RM_RLU_TRY_LOCK(self, &p);
    if (r == 0) {
      p->v++;
      rm_rlu_reader_unlock(self);
      return;
    }
    CHECK_ERR(r, EBUSY);
    rm_rlu_abort(self);
  }
}
static void *bump_thread(void *arg) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  set_phase(1);
  bump(self, arg); /* meets the deferred lock: requests a sync, retries */
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void test_defer(void) {
  struct rm_rlu_options o = {.flavor = RM_RLU_COARSE, .max_defer = 3, .fence_free = fence_free};
  CHECK_ERR(rm_rlu_init(&o), EINVAL);
  o.flavor = RM_RLU_FINE;
  o.stats = true;
  CHECK_ERR(rm_rlu_init(&o), 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  A->v = 0;
  B->v = 0;
  uint64_t clk = rm_rlu_clock();
  bump(self, A);                      /* deferred 1 */
  CHECK_EQ(rm_rlu_clock(), clk);      /* no clock step, no synchronize */
  CHECK_EQ(peek_other(A), 0);         /* invisible to others */
  rm_rlu_reader_lock(self);
  CHECK_EQ(RM_RLU_DEREF(self, A)->v, 1); /* visible to us */
  rm_rlu_reader_unlock(self);
  bump(self, B);                      /* deferred 2 */
  CHECK_EQ(peek_other(B), 0);
  struct acct *c3 = rm_rlu_alloc(sizeof *c3);
  c3->v = 0;
  bump(self, c3);                     /* third section: flush */
  CHECK_EQ(rm_rlu_clock(), clk + 1);
  CHECK_EQ(A->v, 1);
  CHECK_EQ(B->v, 1);
  CHECK_EQ(c3->v, 1);
  CHECK(RM_RLU_HDR(A)->copy == NULL && RM_RLU_HDR(B)->copy == NULL);
  rm_rlu_free(NULL, c3);

  /* Self conflict: A locked by an earlier deferred section of ours. */
  bump(self, A); /* deferred; the next bump of A aborts once, flushes, retries */
  bump(self, A);
  CHECK_EQ(peek_other(A), 2);         /* the first was flushed by the retry */
  rm_rlu_sync(self);                  /* explicit sync point */
  CHECK_EQ(A->v, 3);

  /* A sync request from another writer. */
  bump(self, A);                      /* deferred: A locked */
  phase = 0;
  pthread_t t;
  pthread_create(&t, NULL, bump_thread, A);
  wait_phase(1);
  struct rm_rlu_stats st;
  do {
    rm_rlu_stats_get(&st);
    usleep(100);
  } while (st.sync_requests == 0);
  rm_rlu_reader_lock(self);           /* checkpoint: flush */
  rm_rlu_reader_unlock(self);
  pthread_join(t, NULL);
  CHECK_EQ(A->v, 5);

  /* Unregister flushes. */
  bump(self, B);
  CHECK_EQ(B->v, 1);
  rm_rlu_thread_unregister(self);
  CHECK_EQ(B->v, 2);
  rm_rlu_free(NULL, A);
  rm_rlu_free(NULL, B);
}

/* Deferral and the writer lock (fine-grained; rm_rlu_writer_lock or
 * rm_rlu_try_writer_lock in a section): a section that holds the writer
 * lock is never deferred, so its exit releases the lock.  It used to
 * return at the deferral test with the lock held: the same thread's next
 * rm_rlu_writer_lock deadlocked on itself, other threads' for ever (the
 * watchdog catches both), and the section's update stayed invisible. */
static void *writer_lock_other(void *arg) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_writer_lock(self);
  struct acct *p = arg;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &p), 0);
  p->v += 10;
  rm_rlu_reader_unlock(self);
  rm_rlu_thread_unregister(self);
  return NULL;
}
static void test_defer_writer_lock(void) {
  struct rm_rlu_options o = {.flavor = RM_RLU_FINE, .max_defer = 4, .stats = true,
                             .fence_free = fence_free};
  CHECK_ERR(rm_rlu_init(&o), 0);
  watchdog("test_defer_writer_lock", 60);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  A->v = 0;
  B->v = 0;
  bump(self, B);                 /* an ordinary section: deferred */
  CHECK_EQ(peek_other(B), 0);
  rm_rlu_writer_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 1;
  rm_rlu_reader_unlock(self);    /* holds the writer lock: commits, with B's */
  rm_rlu_writer_lock(self);      /* the lock is free again */
  CHECK_EQ(peek_other(A), 1);
  CHECK_EQ(peek_other(B), 1);
  a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 2;
  rm_rlu_reader_unlock(self);
  rm_rlu_reader_lock(self);      /* taken inside a section */
  CHECK_ERR(rm_rlu_try_writer_lock(self), 0);
  a = A;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &a), 0);
  a->v = 3;
  rm_rlu_reader_unlock(self);
  CHECK_EQ(peek_other(A), 3);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, writer_lock_other, A), 0); /* another thread's */
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(A->v, 13);
  rm_rlu_thread_unregister(self);
  alarm(0);
  rm_rlu_free(NULL, A);
  rm_rlu_free(NULL, B);
}

/* A slot freed below the high-water mark costs synchronize nothing: the
 * context is not in use.  It was treated as an idle thread: with the
 * fence-free entry every commit issued a membarrier for it (one per
 * commit here), and the automatic close then turned the fence-free entry
 * off for the whole process.  Thread T takes slot 0, we take slot 1, T
 * unregisters: the mark stays at 2. */
static rm_rlu_ctx *gone_ctx;
static void *register_and_leave(void *arg) {
  (void)arg;
  rm_rlu_ctx *c = rm_rlu_thread_register();
  CHECK(c != NULL);
  __atomic_store_n(&gone_ctx, c, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_ready, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&idle_stop, __ATOMIC_ACQUIRE)) usleep(1000);
  rm_rlu_thread_unregister(c);
  return NULL;
}
static void test_free_slot(void) {
  set_opts(RM_RLU_FINE, 0, 0);
  A = rm_rlu_alloc(sizeof *A);
  A->v = 0;
  __atomic_store_n(&idle_stop, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_ready, 0, __ATOMIC_RELEASE);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, register_and_leave, NULL), 0);
  while (!__atomic_load_n(&idle_ready, __ATOMIC_ACQUIRE)) usleep(100);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(rm_rlu_ctx_id(self) > rm_rlu_ctx_id(gone_ctx)); /* the free slot is below ours */
  __atomic_store_n(&idle_stop, 1, __ATOMIC_RELEASE);
  CHECK_EQ(pthread_join(t, NULL), 0);
  bool ff = rm_rlu_fence_free();
  CHECK_EQ(ff, fence_free);
  struct rm_rlu_stats st0, st1;
  rm_rlu_stats_get(&st0);
  for (int i = 0; i < 2000; i++) bump_a(self);
  rm_rlu_stats_get(&st1);
  CHECK_EQ(A->v, 2000);
  CHECK_EQ(st1.syncs - st0.syncs, 2000);
  CHECK_EQ(st1.barriers - st0.barriers, 0); /* no context but ours is in use */
  CHECK_EQ(st1.sync_waits - st0.sync_waits, 0);
  CHECK_EQ(rm_rlu_fence_free(), ff);
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, A);
}

/* The list against a plain array, one thread, both flavors. */
static void test_list(bool coarse) {
  set_opts(coarse ? RM_RLU_COARSE : RM_RLU_FINE, 0, 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  struct rm_rlu_list *l = rm_rlu_list_create_flavor(coarse);
  CHECK(l != NULL);
  static char ref[256];
  memset(ref, 0, sizeof ref);
  unsigned s = 12345;
  for (int i = 0; i < 5000; i++) {
    s = s * 1103515245u + 12345u;
    int64_t k = (int64_t)((s >> 8) % 256);
    int op = (int)((s >> 20) % 3);
    if (op == 0) {
      CHECK_EQ(rm_rlu_list_add(self, l, k), !ref[k]);
      ref[k] = 1;
    } else if (op == 1) {
      CHECK_EQ(rm_rlu_list_remove(self, l, k), ref[k]);
      ref[k] = 0;
    } else {
      CHECK_EQ(rm_rlu_list_contains(self, l, k), ref[k]);
    }
  }
  rm_rlu_reader_lock(self);
  struct rm_rlu_node *n = RM_RLU_DEREF(self, l->head);
  int64_t last = INT64_MIN;
  int count = 0, expect = 0;
  for (n = RM_RLU_DEREF(self, n->next); n->key != INT64_MAX; n = RM_RLU_DEREF(self, n->next)) {
    CHECK(n->key > last);
    CHECK(ref[n->key]);
    last = n->key;
    count++;
  }
  rm_rlu_reader_unlock(self);
  for (int k = 0; k < 256; k++) expect += ref[k];
  CHECK_EQ(count, expect);
  rm_rlu_list_destroy(l);
  rm_rlu_thread_unregister(self);
}

/* The hash table: 4 threads, each owning the keys k with k mod 4 == its
 * index (negative ones too), checking every result against its own
 * reference while the others change the same buckets. */
enum { HASH_THREADS = 4, HASH_RANGE = 512 };
static struct rm_rlu_hash *H;
static long hash_count[HASH_THREADS];
static void hash_worker(void *arg, int t) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  static __thread char ref[HASH_RANGE];
  memset(ref, 0, sizeof ref);
  unsigned s = 777u * (unsigned)(t + 1);
  long n = 0;
  for (int i = 0; i < 20000; i++) {
    s = s * 1103515245u + 12345u;
    int slot = (int)((s >> 8) % (HASH_RANGE / HASH_THREADS));
    int64_t k = (int64_t)(slot * HASH_THREADS + t) - HASH_RANGE / 2; /* k mod 4 fixed per thread */
    int idx = slot * HASH_THREADS + t;
    switch ((s >> 20) % 3) {
    case 0:
      CHECK_EQ(rm_rlu_hash_add(self, H, k), !ref[idx]);
      n += !ref[idx];
      ref[idx] = 1;
      break;
    case 1:
      CHECK_EQ(rm_rlu_hash_remove(self, H, k), ref[idx]);
      n -= ref[idx];
      ref[idx] = 0;
      break;
    default:
      CHECK_EQ(rm_rlu_hash_contains(self, H, k), ref[idx]);
    }
  }
  hash_count[t] = n;
  rm_rlu_thread_unregister(self);
}

static void test_hash(bool coarse) {
  set_opts(coarse ? RM_RLU_COARSE : RM_RLU_FINE, 0, 0);
  H = rm_rlu_hash_create(16, coarse);
  CHECK(H != NULL);
  test_run_threads(HASH_THREADS, hash_worker, NULL);
  long total = 0;
  for (int t = 0; t < HASH_THREADS; t++) total += hash_count[t];
  CHECK_EQ(rm_rlu_hash_size(H), total);
  rm_rlu_hash_destroy(H);
}

int main(int argc, char **argv) {
  fence_free = argc > 1 && !strcmp(argv[1], "--fence-free");
  if (fence_free) {
    set_opts(RM_RLU_FINE, 0, 0);
    rm_rlu_ctx *c = rm_rlu_thread_register();
    if (!rm_rlu_fence_free()) {
      rm_rlu_thread_unregister(c);
      TEST_SKIP("no fence-free entry here (no membarrier, or ThreadSanitizer)");
    }
    rm_rlu_thread_unregister(c);
  }
  test_objects();
  test_single();
  test_log();
  test_isolation(RM_RLU_FINE);
  test_isolation(RM_RLU_COARSE);
  test_conflict();
  test_coarse();
  test_many();
  test_free();
  test_exit();
  test_auto_close();
  test_defer();
  test_defer_writer_lock();
  test_free_slot();
  test_list(false);
  test_list(true);
  test_hash(false);
  test_hash(true);
  rm_rlu_stats_print(stdout);
  TEST_MAIN_END();
}
