/*
 * test_prwlock.c - the contract of the passive reader-writer lock and of its
 * FCP consensus core.  CTest runs it twice: with membarrier (when the kernel
 * has it) and with READMOSTLY_NO_MEMBARRIER=1 (fence readers).
 */
#include "test.h"
#include <readmostly/prwlock.h>

#include <stdint.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

static int flag_get(int *f) { return __atomic_load_n(f, __ATOMIC_ACQUIRE); }
static void flag_set(int *f, int v) { __atomic_store_n(f, v, __ATOMIC_RELEASE); }
static void wait_flag(int *f, int v) {
  for (int i = 0; i < 20000 && flag_get(f) != v; i++) test_sleep_ms(1);
  CHECK_EQ(flag_get(f), v);
}

/* ---- helpers run in other threads ---- */
struct call {
  rm_prwlock_t *l;
  int op;      /* 0 read_try, 1 write_try, 2 read_timed 30ms, 3 write_timed 30ms, 4 write+unlock */
  int result;
};
static void *call_body(void *p) {
  struct call *c = (struct call *)p;
  struct timespec t = test_deadline_ms(CLOCK_MONOTONIC, 30);
  switch (c->op) {
  case 0:
    c->result = rm_prwlock_read_trylock(c->l);
    if (!c->result) rm_prwlock_read_unlock(c->l);
    break;
  case 1:
    c->result = rm_prwlock_write_trylock(c->l);
    if (!c->result) rm_prwlock_write_unlock(c->l);
    break;
  case 2:
    c->result = rm_prwlock_read_timedlock(c->l, CLOCK_MONOTONIC, &t);
    if (!c->result) rm_prwlock_read_unlock(c->l);
    break;
  case 3:
    c->result = rm_prwlock_write_timedlock(c->l, CLOCK_MONOTONIC, &t);
    if (!c->result) rm_prwlock_write_unlock(c->l);
    break;
  case 4:
    c->result = rm_prwlock_write_lock(c->l);
    if (!c->result) rm_prwlock_write_unlock(c->l);
    break;
  }
  return NULL;
}
static int in_thread(rm_prwlock_t *l, int op) {
  struct call c = {l, op, -1};
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, call_body, &c), 0);
  pthread_join(t, NULL);
  return c.result;
}

static void test_basics(void) {
  static rm_prwlock_t s = RM_PRWLOCK_INITIALIZER;
  rm_prwlock_t l;
  CHECK_ERR(rm_prwlock_init(NULL), EINVAL);
  CHECK_ERR(rm_prwlock_init_domain(&l, NULL, 0x100), EINVAL);
  CHECK_ERR(rm_prwlock_init(&l), 0);
  CHECK_EQ(sizeof(rm_prwlock_t), 64);
  for (int i = 0; i < 3; i++) {
    CHECK_ERR(rm_prwlock_read_lock(&s), 0);
    CHECK_ERR(rm_prwlock_read_unlock(&s), 0);
    CHECK_ERR(rm_prwlock_write_lock(&s), 0);
    CHECK_ERR(rm_prwlock_write_unlock(&s), 0);
  }
  /* Read-held by us. */
  CHECK_ERR(rm_prwlock_read_lock(&l), 0);
  CHECK_ERR(rm_prwlock_destroy(&l), EBUSY);
  CHECK_ERR(in_thread(&l, 0), 0); /* readers share */
  CHECK_ERR(in_thread(&l, 1), EBUSY);
  CHECK_ERR(in_thread(&l, 3), ETIMEDOUT);
  CHECK_ERR(rm_prwlock_write_lock(&l), EDEADLK);
  CHECK_ERR(rm_prwlock_write_trylock(&l), EBUSY);
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
#ifdef NDEBUG
  CHECK_ERR(rm_prwlock_read_unlock(&l), EPERM); /* nothing held (debug builds abort) */
#endif
  /* Write-held by us. */
  CHECK_ERR(rm_prwlock_write_lock(&l), 0);
  CHECK_ERR(rm_prwlock_destroy(&l), EBUSY);
  CHECK_ERR(in_thread(&l, 0), EBUSY);
  CHECK_ERR(in_thread(&l, 1), EBUSY);
  CHECK_ERR(in_thread(&l, 2), ETIMEDOUT);
  CHECK_ERR(in_thread(&l, 3), ETIMEDOUT);
  CHECK_ERR(rm_prwlock_write_unlock(&l), 0);
  /* Timeouts: validated, and free locks are taken. */
  struct timespec bad = {0, 1000000000L}, ok = test_deadline_ms(CLOCK_REALTIME, 1000);
  CHECK_ERR(rm_prwlock_read_timedlock(&l, CLOCK_MONOTONIC, &bad), EINVAL);
  CHECK_ERR(rm_prwlock_write_timedlock(&l, CLOCK_PROCESS_CPUTIME_ID, &ok), EINVAL);
  CHECK_ERR(rm_prwlock_write_timedlock(&l, CLOCK_REALTIME, &ok), 0);
  CHECK_ERR(rm_prwlock_write_unlock(&l), 0);
  CHECK_ERR(rm_prwlock_read_timedlock(&l, CLOCK_REALTIME, &ok), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
  CHECK_ERR(in_thread(&l, 4), 0);
  /* Counts that would overflow (white-box: 2^32 holds would take minutes)
   * give EAGAIN and change nothing: active readers, and a thread's
   * recursive passive holds. */
  l.active = UINT32_MAX;
  CHECK_ERR(rm_prwlock_read_lock_active(&l), EAGAIN);
  CHECK_EQ(l.active, UINT32_MAX);
  l.active = 0;
  CHECK_ERR(rm_prwlock_read_lock(&l), 0);
  struct rm_fcp_reader *me = rm_fcp_self(rm_fcp_default_domain());
  CHECK(me != NULL && rm_fcp_obj(me->passive) == (const void *)&l);
  me->nest = UINT32_MAX;
  me->passive = rm_fcp_nested(&l);
  CHECK_ERR(rm_prwlock_read_lock(&l), EAGAIN);
  CHECK_EQ(me->nest, UINT32_MAX);
  me->nest = 0;
  me->passive = &l;
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
  CHECK_ERR(rm_prwlock_destroy(&l), 0);
}

/* A writer waits for a passive reader that sleeps in its section (it parks
 * and the reader's unlock wakes it); a recursive read while that writer
 * waits does not block. */
static rm_prwlock_t wl = RM_PRWLOCK_INITIALIZER;
static int w_started, w_done, shared_value;
static void *writer_body(void *p) {
  (void)p;
  flag_set(&w_started, 1);
  CHECK_ERR(rm_prwlock_write_lock(&wl), 0);
  shared_value++;
  flag_set(&w_done, 1);
  CHECK_ERR(rm_prwlock_write_unlock(&wl), 0);
  return NULL;
}
static void test_writer_waits_for_readers(void) {
  for (int active = 0; active < 2; active++) {
    flag_set(&w_started, 0);
    flag_set(&w_done, 0);
    if (active) CHECK_ERR(rm_prwlock_read_lock_active(&wl), 0);
    else CHECK_ERR(rm_prwlock_read_lock(&wl), 0);
    int before = shared_value;
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, writer_body, NULL), 0);
    wait_flag(&w_started, 1);
    test_sleep_ms(60); /* the writer spins, then parks */
    CHECK_EQ(flag_get(&w_done), 0);
    if (!active) {
      /* Recursive read of the passive hold while the writer waits. */
      CHECK_ERR(rm_prwlock_read_lock(&wl), 0);
      CHECK_ERR(rm_prwlock_read_trylock(&wl), 0);
      CHECK_ERR(rm_prwlock_read_unlock(&wl), 0);
      CHECK_ERR(rm_prwlock_read_unlock(&wl), 0);
      CHECK_EQ(flag_get(&w_done), 0);
    }
    CHECK_EQ(shared_value, before);
    /* New readers wait behind the writer (writer preference). */
    CHECK_ERR(in_thread(&wl, 0), EBUSY);
    CHECK_ERR(rm_prwlock_read_unlock(&wl), 0);
    pthread_join(w, NULL);
    CHECK_EQ(flag_get(&w_done), 1);
    CHECK_EQ(shared_value, before + 1);
  }
}

/* Writers queued behind a writer get the lock passed, without consensus. */
static rm_prwlock_t pl = RM_PRWLOCK_INITIALIZER;
static int passed_in;
static void pass_body(void *p, int i) {
  (void)p;
  (void)i;
  CHECK_ERR(rm_prwlock_write_lock(&pl), 0);
  __atomic_fetch_add(&passed_in, 1, __ATOMIC_RELAXED);
  CHECK_ERR(rm_prwlock_write_unlock(&pl), 0);
}
static void *pass_threads(void *p) {
  test_run_threads(3, pass_body, p);
  return NULL;
}
static void test_writer_passing(void) {
  rm_fcp_domain_t *d = rm_fcp_default_domain();
  CHECK_ERR(rm_prwlock_write_lock(&pl), 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, pass_threads, NULL), 0);
  for (int i = 0; i < 20000 && __atomic_load_n(&pl.wstate, __ATOMIC_ACQUIRE) < 3 * RM_PRWLOCK_WAITER;
       i++)
    test_sleep_ms(1);
  CHECK(__atomic_load_n(&pl.wstate, __ATOMIC_ACQUIRE) >= 3 * RM_PRWLOCK_WAITER);
  uint64_t c0 = __atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED) +
                __atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED) +
                __atomic_load_n(&d->consensus_fenced, __ATOMIC_RELAXED);
  uint64_t v0 = __atomic_load_n(&d->version, __ATOMIC_RELAXED);
  CHECK_ERR(rm_prwlock_write_unlock(&pl), 0);
  pthread_join(t, NULL);
  CHECK_EQ(passed_in, 3);
  /* Three write locks, no new consensus: the lock went from writer to writer. */
  CHECK_EQ(__atomic_load_n(&d->version, __ATOMIC_RELAXED), v0);
  CHECK_EQ(__atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED) +
               __atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED) +
                __atomic_load_n(&d->consensus_fenced, __ATOMIC_RELAXED),
           c0);
  CHECK_EQ(pl.wstate, 0);
}

static void test_downgrade_upgrade(void) {
  rm_prwlock_t l;
  CHECK_ERR(rm_prwlock_init(&l), 0);
  CHECK_ERR(rm_prwlock_downgrade(&l), EPERM);
  CHECK_ERR(rm_prwlock_upgrade(&l), EPERM);
  /* Downgrade: we keep a read hold; readers enter, writers do not. */
  CHECK_ERR(rm_prwlock_write_lock(&l), 0);
  CHECK_ERR(rm_prwlock_downgrade(&l), 0);
  CHECK_ERR(in_thread(&l, 0), 0);
  CHECK_ERR(in_thread(&l, 1), EBUSY);
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
  CHECK_ERR(in_thread(&l, 1), 0);
  /* Upgrade from a passive hold, and from an active one. */
  for (int active = 0; active < 2; active++) {
    if (active) CHECK_ERR(rm_prwlock_read_lock_active(&l), 0);
    else CHECK_ERR(rm_prwlock_read_lock(&l), 0);
    CHECK_ERR(rm_prwlock_upgrade(&l), 0);
    CHECK_ERR(in_thread(&l, 0), EBUSY);
    CHECK_EQ(l.active, 0);
    CHECK_ERR(rm_prwlock_write_unlock(&l), 0);
    CHECK_ERR(in_thread(&l, 1), 0);
  }
  /* Nested passive holds cannot become one write hold. */
  CHECK_ERR(rm_prwlock_read_lock(&l), 0);
  CHECK_ERR(rm_prwlock_read_lock(&l), 0);
  CHECK_ERR(rm_prwlock_upgrade(&l), EDEADLK);
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
  /* Another writer waits for us: upgrading would deadlock. */
  struct call c = {&l, 4, -1};
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, call_body, &c), 0);
  for (int i = 0; i < 20000 && !(__atomic_load_n(&l.wstate, __ATOMIC_ACQUIRE) & RM_PRWLOCK_LOCKED); i++)
    test_sleep_ms(1);
  CHECK_ERR(rm_prwlock_upgrade(&l), EBUSY);
  CHECK_ERR(rm_prwlock_read_unlock(&l), 0);
  pthread_join(t, NULL);
  CHECK_EQ(c.result, 0);
  CHECK_ERR(rm_prwlock_destroy(&l), 0);
}

/* Domains: a writer waits only for readers of its own lock. */
static rm_prwlock_t da, db, dc;
static int hold_go, hold_stop;
static void *holder(void *p) {
  rm_prwlock_t *l = (rm_prwlock_t *)p;
  CHECK_ERR(rm_prwlock_read_lock(l), 0);
  flag_set(&hold_go, 1);
  while (!flag_get(&hold_stop)) test_sleep_ms(1);
  CHECK_ERR(rm_prwlock_read_unlock(l), 0);
  return NULL;
}
static void test_domains(void) {
  rm_fcp_domain_t *d;
  CHECK_ERR(rm_fcp_domain_create(NULL), EINVAL);
  CHECK_ERR(rm_fcp_domain_create(&d), 0);
  CHECK_ERR(rm_prwlock_init_domain(&da, d, 0), 0);
  CHECK_ERR(rm_prwlock_init_domain(&db, d, 0), 0);
  CHECK_ERR(rm_prwlock_init(&dc), 0);
  flag_set(&hold_go, 0);
  flag_set(&hold_stop, 0);
  pthread_t h;
  CHECK_EQ(pthread_create(&h, NULL, holder, &da), 0);
  wait_flag(&hold_go, 1);
  /* Same domain, other lock; other domain: neither waits for the holder. */
  CHECK_ERR(in_thread(&db, 1), 0);
  CHECK_ERR(in_thread(&dc, 1), 0);
  CHECK_ERR(in_thread(&db, 4), 0);
  CHECK_ERR(in_thread(&da, 1), EBUSY);
  /* We hold db passively; a read of da (same domain) is then active. */
  CHECK_ERR(rm_prwlock_read_lock(&db), 0);
  CHECK_ERR(rm_prwlock_read_lock(&da), 0);
  CHECK_EQ(da.active, 1);
  CHECK_ERR(rm_prwlock_read_unlock(&da), 0);
  CHECK_EQ(da.active, 0);
  CHECK_ERR(rm_prwlock_read_unlock(&db), 0);
  CHECK_ERR(rm_fcp_domain_destroy(d), EBUSY); /* the holder's record lives */
  CHECK_ERR(rm_fcp_domain_destroy(rm_fcp_default_domain()), EBUSY);
  flag_set(&hold_stop, 1);
  pthread_join(h, NULL);
  CHECK_ERR(in_thread(&da, 1), 0);
  CHECK_ERR(rm_fcp_domain_destroy(d), 0); /* its threads are gone; ours is released */
}

/* A thread that exits inside a passive section gives the hold up. */
static rm_prwlock_t xl = RM_PRWLOCK_INITIALIZER;
static void *exit_holding(void *p) {
  (void)p;
  CHECK_ERR(rm_prwlock_read_lock(&xl), 0);
  return NULL;
}
static void test_exit_inside(void) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, exit_holding, NULL), 0);
  pthread_join(t, NULL);
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 10000);
  CHECK_ERR(rm_prwlock_write_timedlock(&xl, CLOCK_MONOTONIC, &dl), 0);
  CHECK_ERR(rm_prwlock_write_unlock(&xl), 0);
}

/* Threads start, register, read and exit while writers run. */
static rm_prwlock_t cl = RM_PRWLOCK_INITIALIZER;
static int churn_stop;
static uint64_t churn_a, churn_b;
static void *short_reader(void *p) {
  (void)p;
  for (int i = 0; i < 50; i++) {
    CHECK_ERR(rm_prwlock_read_lock(&cl), 0);
    CHECK_EQ(churn_a, churn_b);
    CHECK_ERR(rm_prwlock_read_unlock(&cl), 0);
  }
  return NULL;
}
static void churn_body(void *p, int i) {
  (void)p;
  if (i < 2) { /* writers */
    while (!flag_get(&churn_stop)) {
      CHECK_ERR(rm_prwlock_write_lock(&cl), 0);
      churn_a++;
      churn_b++;
      CHECK_ERR(rm_prwlock_write_unlock(&cl), 0);
    }
    return;
  }
  for (int k = 0; k < 150; k++) {
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, short_reader, NULL), 0);
    pthread_join(t, NULL);
  }
  flag_set(&churn_stop, 1);
}
static void test_thread_churn(void) {
  test_run_threads(3, churn_body, NULL);
  CHECK(churn_a > 0);
  /* Records are reused: far fewer than the 150 threads that came and went. */
  CHECK(rm_fcp_default_domain()->nrecords < 40);
}

/* Active readers and a busy writer, oversubscribed: readers that find the
 * writer come and go on the active count while the writer waits for it to
 * drain.  A lost wake-up there hangs the test (the CTest timeout fails it);
 * the pair (a, b) is written by the writer and must never be seen torn. */
static rm_prwlock_t al;
static volatile uint64_t act_a, act_b;
static int act_stop;
static uint64_t act_writes;
static void active_body(void *p, int i) {
  (void)p;
  if (i == 0) {
    while (!flag_get(&act_stop)) {
      CHECK_ERR(rm_prwlock_write_lock(&al), 0);
      act_a = act_a + 1;
      act_b = act_a;
      CHECK_ERR(rm_prwlock_write_unlock(&al), 0);
      act_writes++;
    }
    return;
  }
  uint64_t n = 0;
  while (!flag_get(&act_stop)) {
    CHECK_ERR(rm_prwlock_read_lock_active(&al), 0);
    CHECK_EQ(act_a, act_b);
    if ((++n & 255u) == 0) sched_yield(); /* preempted inside, now and then */
    CHECK_ERR(rm_prwlock_read_unlock(&al), 0);
  }
}
static void *active_stopper(void *p) {
  (void)p;
  test_sleep_ms(1500);
  flag_set(&act_stop, 1);
  return NULL;
}
static void test_active_churn(void) {
  CHECK_ERR(rm_prwlock_init(&al), 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, active_stopper, NULL), 0);
  test_run_threads(6, active_body, NULL);
  pthread_join(t, NULL);
  CHECK(act_writes > 0);
  CHECK_EQ(al.active, 0u);
  CHECK_EQ(al.awake, 0u);
}

/* Readers parked behind a writer all get in, with parallel and with
 * broadcast wake-up. */
static rm_prwlock_t kl;
static int k_in;
static void parked_reader(void *p, int i) {
  (void)p;
  (void)i;
  CHECK_ERR(rm_prwlock_read_lock(&kl), 0);
  __atomic_fetch_add(&k_in, 1, __ATOMIC_RELAXED);
  CHECK_ERR(rm_prwlock_read_unlock(&kl), 0);
}
static void *parked_threads(void *p) {
  test_run_threads(6, parked_reader, p);
  return NULL;
}
static void test_wakeup(void) {
  for (unsigned f = 0; f < 2; f++) {
    CHECK_ERR(rm_prwlock_init_domain(&kl, NULL, f ? RM_PRWLOCK_BROADCAST_WAKE : 0), 0);
    __atomic_store_n(&k_in, 0, __ATOMIC_RELAXED);
    CHECK_ERR(rm_prwlock_write_lock(&kl), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, parked_threads, NULL), 0);
    test_sleep_ms(100);
    CHECK_EQ(__atomic_load_n(&k_in, __ATOMIC_RELAXED), 0);
    CHECK(__atomic_load_n(&kl.rmask, __ATOMIC_RELAXED) != 0); /* they parked */
    CHECK_ERR(rm_prwlock_write_unlock(&kl), 0);
    pthread_join(t, NULL);
    CHECK_EQ(k_in, 6);
  }
}

/* fork(): locks nobody held are free in the child; the forking thread's
 * holds are the child's; other threads' records that hold nothing do not
 * delay the child's writers. */
static rm_prwlock_t f1 = RM_PRWLOCK_INITIALIZER, f2 = RM_PRWLOCK_INITIALIZER,
                    f3 = RM_PRWLOCK_INITIALIZER;
static void *idle_reader(void *p) {
  (void)p;
  CHECK_ERR(rm_prwlock_read_lock(&f3), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&f3), 0);
  flag_set(&hold_go, 2);
  while (!flag_get(&hold_stop)) test_sleep_ms(1);
  return NULL;
}
static void test_fork(void) {
  flag_set(&hold_stop, 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, idle_reader, NULL), 0);
  wait_flag(&hold_go, 2);
  CHECK_ERR(rm_prwlock_read_lock(&f1), 0);
  CHECK_ERR(rm_prwlock_write_lock(&f2), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(30);
    CHECK_ERR(rm_prwlock_write_trylock(&f1), EBUSY); /* our read hold */
    CHECK_ERR(rm_prwlock_read_unlock(&f1), 0);
    CHECK_ERR(rm_prwlock_write_lock(&f1), 0);
    CHECK_ERR(rm_prwlock_write_unlock(&f1), 0);
    CHECK_ERR(rm_prwlock_write_unlock(&f2), 0); /* our write hold */
    CHECK_ERR(rm_prwlock_write_lock(&f3), 0);   /* nobody held it */
    CHECK_ERR(rm_prwlock_write_unlock(&f3), 0);
    _exit(0);
  }
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK_ERR(rm_prwlock_read_unlock(&f1), 0);
  CHECK_ERR(rm_prwlock_write_unlock(&f2), 0);
  flag_set(&hold_stop, 1);
  pthread_join(t, NULL);
}

/* The pthread-semantics support of the FCP core (used by the preload
 * library): holds kept at thread exit, released by another thread, and
 * recursion counts that cooperate with such a release. */
static rm_fcp_domain_t *fd;
static int fobj, fobj2;
static void *enter_and_exit(void *a) {
  struct rm_fcp_reader *r = rm_fcp_self(fd);
  CHECK(r != NULL);
  rm_fcp_enter(r, a);
  return NULL; /* exits holding a */
}
static void test_foreign_holds(void) {
  CHECK_ERR(rm_fcp_domain_create(&fd), 0);
  rm_fcp_domain_keep_exit_holds(fd, true);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, enter_and_exit, &fobj), 0);
  pthread_join(t, NULL);
  CHECK(rm_fcp_held(fd, &fobj)); /* an orphan keeps it */
  CHECK(!rm_fcp_held(fd, &fobj2));
  /* A writer of fobj waits for the orphan: a try-consensus says busy. */
  uint64_t v = rm_fcp_begin(fd);
  CHECK_ERR(rm_fcp_wait(fd, v, &fobj, NULL, RM_FCP_TRY, 0, NULL), EBUSY);
  CHECK_ERR(rm_fcp_wait(fd, v, &fobj2, NULL, RM_FCP_TRY, 0, NULL), 0);
  CHECK(rm_fcp_release_foreign(fd, &fobj, NULL));
  CHECK(!rm_fcp_held(fd, &fobj));
  CHECK(!rm_fcp_release_foreign(fd, &fobj, NULL)); /* nothing left */
  v = rm_fcp_begin(fd);
  CHECK_ERR(rm_fcp_wait(fd, v, &fobj, NULL, RM_FCP_TRY, 0, NULL), 0);
  /* Our own record: two holds (one nested); another thread's release takes
   * the nested one first, then the hold itself. */
  struct rm_fcp_reader *me = rm_fcp_self(fd);
  CHECK(me != NULL);
  rm_fcp_enter(me, &fobj);
  CHECK(rm_fcp_nest_add(me, &fobj));
  CHECK(!rm_fcp_nest_add(me, &fobj2)); /* not the object we hold */
  CHECK(rm_fcp_release_foreign(fd, &fobj, NULL));
  CHECK_EQ(me->nest, 0u);
  CHECK(rm_fcp_held(fd, &fobj));
  CHECK(!rm_fcp_nest_drop(me, &fobj)); /* nest 0: the caller would leave */
  CHECK(rm_fcp_release_foreign(fd, &fobj, NULL));
  CHECK(me->passive == NULL);
  CHECK(!rm_fcp_nest_add(me, &fobj)); /* the hold is gone */
  CHECK(!rm_fcp_held(fd, &fobj));
  CHECK(!rm_fcp_release_foreign(fd, &fobj, me)); /* our own record is skipped */
  /* The owner's unlock: a level, then the hold; then nothing of ours. */
  rm_fcp_enter(me, &fobj);
  CHECK(rm_fcp_nest_add(me, &fobj));
  CHECK(rm_fcp_unlock_own(fd, me, &fobj));
  CHECK(me->passive == &fobj);
  CHECK(rm_fcp_unlock_own(fd, me, &fobj));
  CHECK(me->passive == NULL);
  CHECK(!rm_fcp_unlock_own(fd, me, &fobj));
  /* A hold another thread took away: the owner's unlock says so, and the
   * releaser counted the take in `stolen`. */
  uint32_t st0 = me->stolen;
  rm_fcp_enter(me, &fobj);
  CHECK(rm_fcp_release_foreign(fd, &fobj, NULL));
  CHECK_EQ(me->stolen, st0 + 1u);
  CHECK(!rm_fcp_unlock_own(fd, me, &fobj));
  CHECK(!rm_fcp_held(fd, &fobj));
  CHECK_ERR(rm_fcp_domain_leave(fd), 0);
  CHECK_ERR(rm_fcp_domain_destroy(fd), 0);
}

/* Reports: a record reports the domain's version when it claims a record
 * and at every passive unlock, so a writer whose readers have all left since
 * its version bump settles without a membarrier (or fence); a record that
 * has not reported costs the writer the barrier.  An unlock with no writer
 * since the last report leaves `seen` as it was; one that reports wakes
 * writers parked on the record. */
static void test_reports(void) {
  rm_fcp_domain_t *rd;
  CHECK_ERR(rm_fcp_domain_create(&rd), 0);
  struct rm_fcp_reader *me = rm_fcp_self(rd);
  CHECK(me != NULL);
  CHECK_EQ(me->seen, rd->version); /* claimed: reported */
  uint64_t v = rm_fcp_begin(rd);
  CHECK(me->seen < v);
  rm_fcp_enter(me, &fobj);
  rm_fcp_leave(rd, me);
  CHECK_EQ(me->seen, v); /* the unlock reported */
  rm_fcp_enter(me, &fobj);
  rm_fcp_leave(rd, me);
  CHECK_EQ(me->seen, v); /* nothing new to report */
  uint64_t fast0 = rd->consensus_fast;
  uint64_t slow0 = rd->consensus_membarrier + rd->consensus_fenced;
  CHECK_ERR(rm_fcp_wait(rd, v, &fobj, NULL, RM_FCP_TRY, 0, NULL), 0);
  if (rm_fcp_membarrier_mode()) {
    CHECK_EQ(rd->consensus_fast, fast0 + 1u); /* everyone reported v */
    CHECK_EQ(rd->consensus_membarrier + rd->consensus_fenced, slow0);
  }
  /* A bump this record has not reported: the writer needs the barrier. */
  v = rm_fcp_begin(rd);
  fast0 = rd->consensus_fast;
  slow0 = rd->consensus_membarrier + rd->consensus_fenced;
  CHECK_ERR(rm_fcp_wait(rd, v, &fobj, NULL, RM_FCP_TRY, 0, NULL), 0);
  CHECK_EQ(rd->consensus_fast, fast0);
  CHECK_EQ(rd->consensus_membarrier + rd->consensus_fenced, slow0 + 1u);
  /* The unlock that reports a new version also wakes writers parked on the
   * record: `wake` is set here as a parked writer sets it. */
  rm_fcp_enter(me, &fobj);
  v = rm_fcp_begin(rd);
  __atomic_store_n(&me->wake, 1u, __ATOMIC_SEQ_CST);
  rm_fcp_leave(rd, me);
  CHECK_EQ(me->seen, v);
  CHECK_EQ(__atomic_load_n(&me->wake, __ATOMIC_ACQUIRE), 0u);
  CHECK_ERR(rm_fcp_domain_leave(rd), 0);
  CHECK_ERR(rm_fcp_domain_destroy(rd), 0);
}

/* Where the fast paths keep their state.  A thread with no record points
 * at rm_fcp_unregistered and gets a record at its first read lock.  A lock
 * of another domain carries RM_PRWLOCK_DOMAIN in its writer word for good
 * (write locks of every kind keep it) and is held in the domain's record,
 * never in the default one.  A recursive hold marks `passive` with
 * RM_FCP_NESTED until the last extra level is gone, so the unlock fast path
 * (passive == lock) only ever releases a single hold. */
static rm_prwlock_t fl = RM_PRWLOCK_INITIALIZER;
static void *first_lock_body(void *p) {
  (void)p;
  CHECK(rm_fcp_tls_default == &rm_fcp_unregistered);
  CHECK(rm_fcp_unregistered.passive != NULL); /* sends the fast path away */
#ifdef NDEBUG
  CHECK_ERR(rm_prwlock_read_unlock(&fl), EPERM); /* nothing held (debug builds abort) */
  CHECK(rm_fcp_tls_default == &rm_fcp_unregistered); /* an unlock claims nothing */
#endif
  CHECK_ERR(rm_prwlock_read_lock(&fl), 0);
  struct rm_fcp_reader *r = rm_fcp_tls_default;
  CHECK(r != &rm_fcp_unregistered);
  CHECK(r->passive == &fl);
  CHECK_EQ(fl.active, 0u);
  CHECK_ERR(rm_prwlock_read_unlock(&fl), 0);
  CHECK(r->passive == NULL);
  return NULL;
}
static void test_fast_path_state(void) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, first_lock_body, NULL), 0);
  pthread_join(t, NULL);

  /* Recursion. */
  struct rm_fcp_reader *me = rm_fcp_self(rm_fcp_default_domain());
  CHECK(me != NULL);
  const void *nested = rm_fcp_nested(&fl);
  CHECK_ERR(rm_prwlock_read_lock(&fl), 0);
  CHECK(me->passive == &fl);
  CHECK_ERR(rm_prwlock_read_lock(&fl), 0);
  CHECK_ERR(rm_prwlock_read_trylock(&fl), 0);
  CHECK(me->passive == nested);
  CHECK_EQ(me->nest, 2u);
  CHECK_ERR(in_thread(&fl, 1), EBUSY);
  CHECK_ERR(rm_prwlock_destroy(&fl), EBUSY);
  CHECK_ERR(rm_prwlock_write_lock(&fl), EDEADLK);
  CHECK_ERR(rm_prwlock_read_unlock(&fl), 0);
  CHECK(me->passive == nested);
  CHECK_ERR(rm_prwlock_read_unlock(&fl), 0);
  CHECK(me->passive == &fl);
  CHECK_EQ(me->nest, 0u);
  CHECK_ERR(in_thread(&fl, 1), EBUSY);
  CHECK_ERR(rm_prwlock_read_unlock(&fl), 0);
  CHECK(me->passive == NULL);
  CHECK_ERR(in_thread(&fl, 1), 0);

  /* Another domain. */
  rm_fcp_domain_t *d;
  rm_prwlock_t ol;
  CHECK_ERR(rm_fcp_domain_create(&d), 0);
  CHECK_ERR(rm_prwlock_init_domain(&ol, d, 0), 0);
  CHECK_EQ(ol.wstate, RM_PRWLOCK_DOMAIN);
  CHECK_ERR(rm_prwlock_write_lock(&ol), 0);
  CHECK_EQ(ol.wstate, RM_PRWLOCK_DOMAIN | RM_PRWLOCK_LOCKED);
  CHECK_ERR(rm_prwlock_write_unlock(&ol), 0);
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
  CHECK_ERR(rm_prwlock_write_timedlock(&ol, CLOCK_MONOTONIC, &dl), 0);
  CHECK_ERR(rm_prwlock_write_unlock(&ol), 0);
  CHECK_ERR(rm_prwlock_write_trylock(&ol), 0);
  CHECK_ERR(rm_prwlock_write_unlock(&ol), 0);
  CHECK_EQ(ol.wstate, RM_PRWLOCK_DOMAIN);
  CHECK_ERR(rm_prwlock_read_lock(&ol), 0);
  struct rm_fcp_reader *dr = rm_fcp_self(d);
  CHECK(dr != NULL && dr != me);
  CHECK(dr->passive == &ol);
  CHECK(me->passive == NULL); /* the default record let go of it */
  CHECK_EQ(ol.active, 0u);
  CHECK_ERR(rm_prwlock_read_lock(&ol), 0);
  CHECK(dr->passive == rm_fcp_nested(&ol));
  CHECK_ERR(in_thread(&ol, 1), EBUSY);
  CHECK_ERR(rm_prwlock_read_unlock(&ol), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&ol), 0);
  CHECK(dr->passive == NULL);
  CHECK_ERR(in_thread(&ol, 1), 0);
  /* The default record holds fl; ol still reads passively in its domain. */
  CHECK_ERR(rm_prwlock_read_lock(&fl), 0);
  CHECK_ERR(rm_prwlock_read_lock(&ol), 0);
  CHECK(dr->passive == &ol);
  CHECK(me->passive == &fl);
  CHECK_ERR(rm_prwlock_read_unlock(&ol), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&fl), 0);
  CHECK_ERR(rm_prwlock_destroy(&ol), 0);
  CHECK_ERR(rm_fcp_domain_leave(d), 0);
  CHECK_ERR(rm_fcp_domain_destroy(d), 0);
}

/* Finding the caller's own record without claiming one.  (1) A thread
 * with no record of a domain that read-locks and unlocks a lock of it
 * actively leaves no record behind (an idle record would cost every
 * consensus of the domain a membarrier).  (2) A thread using more domains
 * than its record cache holds still finds its passive hold: write-locking
 * that lock says EDEADLK instead of waiting for itself, and the unlock
 * releases the passive hold. */
#define FIND_DOMAINS (RM_FCP_TLS_CACHE + 2)
static rm_prwlock_t find_l[FIND_DOMAINS];
static rm_fcp_domain_t *find_d[FIND_DOMAINS];
static void *active_only_body(void *p) {
  (void)p;
  uint32_t n0 = __atomic_load_n(&find_d[0]->nrecords, __ATOMIC_RELAXED);
  CHECK_ERR(rm_prwlock_read_lock_active(&find_l[0]), 0);
  CHECK_EQ(find_l[0].active, 1u);
  CHECK_ERR(rm_prwlock_read_unlock(&find_l[0]), 0);
  CHECK_EQ(find_l[0].active, 0u);
  CHECK(rm_fcp_self_find(find_d[0]) == NULL);
  CHECK_EQ(__atomic_load_n(&find_d[0]->nrecords, __ATOMIC_RELAXED), n0);
  return NULL;
}
static void test_find_own_record(void) {
  for (int i = 0; i < FIND_DOMAINS; i++) {
    CHECK_ERR(rm_fcp_domain_create(&find_d[i]), 0);
    CHECK_ERR(rm_prwlock_init_domain(&find_l[i], find_d[i], 0), 0);
  }
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, active_only_body, NULL), 0);
  pthread_join(t, NULL);

  /* One passive hold per domain; the later claims evict the first. */
  for (int i = 0; i < FIND_DOMAINS; i++) CHECK_ERR(rm_prwlock_read_lock(&find_l[i]), 0);
  CHECK(rm_fcp_self_cached(find_d[0]) == NULL); /* evicted: the case under test */
  struct rm_fcp_reader *r0 = rm_fcp_self_find(find_d[0]);
  CHECK(r0 != NULL && r0->passive == &find_l[0]);
  CHECK_EQ(find_l[0].active, 0u);
  /* Without finding r0 the writer would wait for its own hold until the
   * deadline (ETIMEDOUT). */
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 200);
  CHECK_ERR(rm_prwlock_write_timedlock(&find_l[0], CLOCK_MONOTONIC, &dl), EDEADLK);
  CHECK_ERR(rm_prwlock_upgrade(&find_l[0]), 0); /* held once: upgrade works */
  CHECK(r0->passive == NULL);
  CHECK_ERR(rm_prwlock_write_unlock(&find_l[0]), 0);
  CHECK_ERR(rm_prwlock_read_lock(&find_l[0]), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&find_l[0]), 0);
  for (int i = 1; i < FIND_DOMAINS; i++) CHECK_ERR(rm_prwlock_read_unlock(&find_l[i]), 0);
  for (int i = 0; i < FIND_DOMAINS; i++) {
    struct rm_fcp_reader *r = rm_fcp_self_find(find_d[i]);
    CHECK(r != NULL && r->passive == NULL);
    CHECK_ERR(in_thread(&find_l[i], 1), 0); /* nothing left held */
    CHECK_ERR(rm_prwlock_destroy(&find_l[i]), 0);
    CHECK_ERR(rm_fcp_domain_leave(find_d[i]), 0);
    CHECK_ERR(rm_fcp_domain_destroy(find_d[i]), 0);
  }
}

/* The one-way switch to fence mode: afterwards readers fence, writers issue
 * no membarrier, and the lock still works. */
static void test_switch_to_fence(void) {
  rm_fcp_domain_t *d = rm_fcp_default_domain();
  rm_fcp_switch_to_fence();
  rm_fcp_switch_to_fence(); /* idempotent */
  CHECK(!rm_fcp_membarrier_mode());
  CHECK(rm_fcp_mode & RM_FCP_SWITCHED);
  CHECK(rm_fcp_mode & RM_FCP_WRITERS_FENCE);
  CHECK(!(rm_fcp_mode & RM_FCP_NOFENCE));
  uint64_t mb0 = __atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED);
  test_basics();
  test_writer_waits_for_readers();
  CHECK_EQ(__atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED), mb0);
  CHECK(__atomic_load_n(&d->consensus_fenced, __ATOMIC_RELAXED) > 0);
}

int main(void) {
  const char *nm = getenv("READMOSTLY_NO_MEMBARRIER");
  bool forced_fence = nm && *nm && strcmp(nm, "0") != 0;
  printf("consensus mode: %s\n", rm_fcp_membarrier_mode() ? "membarrier" : "fence");
  if (forced_fence) CHECK(!rm_fcp_membarrier_mode());
  test_basics();
  test_writer_waits_for_readers();
  test_writer_passing();
  test_downgrade_upgrade();
  test_domains();
  test_exit_inside();
  test_thread_churn();
  test_active_churn();
  test_wakeup();
  if (!TEST_UNDER_TSAN) test_fork();
  test_foreign_holds();
  test_reports();
  test_fast_path_state();
  test_find_own_record();
  test_switch_to_fence(); /* last: the switch is for good */
  TEST_MAIN_END();
}
