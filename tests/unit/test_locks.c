/* The lock contract (readmostly/rwlock.h), checked for every lock in the
 * operations table, so a lock added to the table is covered at once:
 *  - init(NULL) is EINVAL; a fresh lock is free; destroy of a free lock is 0
 *    and of a held one EBUSY;
 *  - exclusion: while one thread write-holds, another's read and write
 *    trylocks are EBUSY and its timed attempts ETIMEDOUT; while one thread
 *    read-holds, another's write trylock is EBUSY;
 *  - reader concurrency: while one thread read-holds, another's read lock
 *    (blocking) and read trylock succeed (work conserving);
 *  - timed variants: EINVAL for an unknown clock or tv_nsec out of range,
 *    ETIMEDOUT at the deadline (never before it), success when free, on
 *    both clocks;
 *  - preference: with a writer waiting behind a reader, writer-preference
 *    and phase-fair locks turn new readers away; reader-preference locks
 *    let them in, and recursive-read locks let the holder read again;
 *  - the static initializers give free, usable locks (all-zero bytes where
 *    the header promises it).
 * A hang is a failure: every lock's section runs under an alarm (a
 * watchdog far beyond any wait the test makes, not a speed check). */
#include "test.h"
#include <stdint.h>
#include <readmostly/bravo_locks.h>
#include <readmostly/cohort.h>
#include <readmostly/prwlock.h>
#include <readmostly/rwlock.h>
#include <signal.h>
#include <unistd.h>
#if __has_include(<readmostly/ba.h>)
#include <readmostly/ba.h>
#define HAVE_BA 1
#endif
#if __has_include(<readmostly/percpu.h>)
#include <readmostly/percpu.h>
#define HAVE_PERCPU 1
#endif

static const struct rm_rwlock_ops *ops;
static const char *current = "setup";

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_locks: timed out (a lock hung): ";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  if (write(2, current, strlen(current)) < 0) _exit(2);
  if (write(2, "\n", 1) < 0) _exit(2);
  _exit(1);
}

static void *new_lock(void) {
  size_t al = ops->align < 16 ? 16 : ops->align;
  size_t sz = (ops->size + al - 1) / al * al;
  void *l = aligned_alloc(al, sz);
  CHECK(l != NULL);
  memset(l, 0xA5, sz); /* init must not rely on zeroed memory */
  CHECK_ERR(ops->init(l), 0);
  return l;
}

static void free_lock(void *l) {
  CHECK_ERR(ops->destroy(l), 0);
  free(l);
}

static bool timed(void) { return (ops->flags & RM_RWLOCK_TIMED) != 0; }

/* Run fn(l) in another thread and wait for it. */
struct other {
  void (*fn)(void *);
  void *l;
};
static void *other_main(void *p) {
  struct other *o = (struct other *)p;
  o->fn(o->l);
  return NULL;
}
static void in_other_thread(void (*fn)(void *), void *l) {
  pthread_t th;
  struct other o = {fn, l};
  CHECK_EQ(pthread_create(&th, NULL, other_main, &o), 0);
  CHECK_EQ(pthread_join(th, NULL), 0);
}

/* ---- what another thread sees ---- */
static void sees_write_held(void *l) {
  rm_token_t t;
  CHECK_ERR(ops->read_trylock(l, &t), EBUSY);
  CHECK_ERR(ops->write_trylock(l), EBUSY);
  if (timed()) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 20);
    CHECK_ERR(ops->read_timedlock(l, &t, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK(rm_timespec_expired(CLOCK_MONOTONIC, &dl)); /* never before the deadline */
    dl = test_deadline_ms(CLOCK_REALTIME, 20);
    CHECK_ERR(ops->write_timedlock(l, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK(rm_timespec_expired(CLOCK_REALTIME, &dl));
    /* A deadline already past: ETIMEDOUT at once. */
    struct timespec past = {0, 0};
    CHECK_ERR(ops->write_timedlock(l, CLOCK_MONOTONIC, &past), ETIMEDOUT);
    /* Bad timeouts and clocks. */
    struct timespec bad = {0, 1000000000L};
    CHECK_ERR(ops->read_timedlock(l, &t, CLOCK_MONOTONIC, &bad), EINVAL);
    bad.tv_nsec = -1;
    CHECK_ERR(ops->write_timedlock(l, CLOCK_MONOTONIC, &bad), EINVAL);
    dl = test_deadline_ms(CLOCK_MONOTONIC, 20);
    CHECK_ERR(ops->write_timedlock(l, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    CHECK_ERR(ops->read_timedlock(l, &t, 12345, &dl), EINVAL);
  }
}

static void sees_read_held(void *l) {
  rm_token_t t, t2;
  CHECK_ERR(ops->write_trylock(l), EBUSY);
  /* Work conserving: a second reader gets in, blocking and trying. */
  CHECK_ERR(ops->read_lock(l, &t), 0);
  CHECK(t != 0);
  CHECK_ERR(ops->read_trylock(l, &t2), 0);
  CHECK(t2 != 0);
  CHECK_ERR(ops->write_trylock(l), EBUSY);
  if (timed()) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 20);
    /* We read-hold it ourselves: ETIMEDOUT, or EDEADLK from a lock that
     * knows its readers (prwlock). */
    int e = ops->write_timedlock(l, CLOCK_MONOTONIC, &dl);
    CHECK(e == ETIMEDOUT || (e == EDEADLK && strncmp(ops->name, "prwlock", 7) == 0));
    rm_token_t t3;
    dl = test_deadline_ms(CLOCK_REALTIME, 1000);
    CHECK_ERR(ops->read_timedlock(l, &t3, CLOCK_REALTIME, &dl), 0);
    CHECK_ERR(ops->read_unlock(l, t3), 0);
  }
  CHECK_ERR(ops->read_unlock(l, t2), 0);
  CHECK_ERR(ops->read_unlock(l, t), 0);
}

static void sees_free(void *l) {
  CHECK_ERR(ops->write_trylock(l), 0);
  CHECK_ERR(ops->write_unlock(l), 0);
  if (timed()) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_ERR(ops->write_timedlock(l, CLOCK_MONOTONIC, &dl), 0);
    CHECK_ERR(ops->write_unlock(l), 0);
  }
}

/* ---- preference ---- */
static int w_state; /* 1 arriving, 2 inside, 3 gone */
static void *writer_main(void *l) {
  __atomic_store_n(&w_state, 1, __ATOMIC_RELEASE);
  CHECK_ERR(ops->write_lock(l), 0);
  __atomic_store_n(&w_state, 2, __ATOMIC_RELEASE);
  CHECK_ERR(ops->write_unlock(l), 0);
  __atomic_store_n(&w_state, 3, __ATOMIC_RELEASE);
  return NULL;
}

/* A read trylock (and unlock) by a new thread: its result. */
static void *try_read_main(void *l) {
  rm_token_t t;
  int e = ops->read_trylock(l, &t);
  if (e == 0) CHECK_ERR(ops->read_unlock(l, t), 0);
  return (void *)(intptr_t)e;
}
static int try_read_elsewhere(void *l) {
  pthread_t th;
  void *r;
  CHECK_EQ(pthread_create(&th, NULL, try_read_main, l), 0);
  CHECK_EQ(pthread_join(th, &r), 0);
  return (int)(intptr_t)r;
}

static void preference(void *l) {
  rm_token_t t, t2;
  if (ops->flags & RM_RWLOCK_BIASED) {
    /* Turn the bias off for a long time, so BRAVO-A shows A's preference
     * (a fast-path reader would enter regardless of waiting writers). */
    CHECK_ERR(rm_bravo_set_inhibit_multiplier(1000000u), 0);
    CHECK_ERR(ops->read_lock(l, &t), 0);
    CHECK_ERR(ops->read_unlock(l, t), 0);
    CHECK_ERR(ops->write_lock(l), 0);
    CHECK_ERR(ops->write_unlock(l), 0);
  }
  CHECK_ERR(ops->read_lock(l, &t), 0);
  __atomic_store_n(&w_state, 0, __ATOMIC_RELEASE);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, writer_main, l), 0);
  while (__atomic_load_n(&w_state, __ATOMIC_ACQUIRE) == 0) test_sleep_ms(1);
  if (ops->flags & (RM_RWLOCK_PREFER_WRITER | RM_RWLOCK_PHASE_FAIR)) {
    /* Once the writer waits, new readers (another thread: prwlock lets
     * this thread's recursive reads in) are turned away.  No time limit:
     * a lock that never turns them away is caught by the alarm. */
    for (;;) {
      int e = try_read_elsewhere(l);
      if (e == EBUSY) break;
      CHECK_ERR(e, 0);
      test_sleep_ms(1);
    }
  } else if (ops->flags & RM_RWLOCK_PREFER_READER) {
    test_sleep_ms(50); /* let the writer block (if it is slower, no harm) */
    CHECK_ERR(ops->read_trylock(l, &t2), 0);
    CHECK_ERR(ops->read_unlock(l, t2), 0);
    if (ops->flags & RM_RWLOCK_RECURSIVE_READ) {
      CHECK_ERR(ops->read_lock(l, &t2), 0); /* must not deadlock */
      CHECK_ERR(ops->read_unlock(l, t2), 0);
    }
  }
  CHECK(__atomic_load_n(&w_state, __ATOMIC_ACQUIRE) == 1); /* exclusion */
  CHECK_ERR(ops->read_unlock(l, t), 0);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(w_state, 3);
  if (ops->flags & RM_RWLOCK_BIASED) CHECK_ERR(rm_bravo_set_inhibit_multiplier(9), 0);
}

static void contract(void) {
  CHECK_ERR(ops->init(NULL), EINVAL);
  void *l = new_lock();
  rm_token_t t, t2;

  /* Uncontended, one thread. */
  for (int k = 0; k < 3; k++) { /* BRAVO: slow, then fast */
    CHECK_ERR(ops->read_lock(l, &t), 0);
    CHECK(t != 0);
    CHECK_ERR(ops->read_unlock(l, t), 0);
  }
  CHECK_ERR(ops->read_trylock(l, &t), 0);
  CHECK_ERR(ops->read_unlock(l, t), 0);
  CHECK_ERR(ops->write_lock(l), 0);
  CHECK_ERR(ops->write_unlock(l), 0);
  CHECK_ERR(ops->write_trylock(l), 0);
  CHECK_ERR(ops->write_unlock(l), 0);
  if (timed()) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_ERR(ops->read_timedlock(l, &t, CLOCK_MONOTONIC, &dl), 0);
    CHECK_ERR(ops->read_unlock(l, t), 0);
    CHECK_ERR(ops->write_timedlock(l, CLOCK_MONOTONIC, &dl), 0);
    CHECK_ERR(ops->write_unlock(l), 0);
  }

  /* Write-held. */
  CHECK_ERR(ops->write_lock(l), 0);
  in_other_thread(sees_write_held, l);
  CHECK_ERR(ops->destroy(l), EBUSY);
  CHECK_ERR(ops->write_unlock(l), 0);
  in_other_thread(sees_free, l);

  /* Read-held (twice: the second time BRAVO locks are biased). */
  for (int k = 0; k < 2; k++) {
    CHECK_ERR(ops->read_lock(l, &t), 0);
    in_other_thread(sees_read_held, l);
    CHECK_ERR(ops->destroy(l), EBUSY);
    CHECK_ERR(ops->read_unlock(l, t), 0);
    in_other_thread(sees_free, l);
  }

  /* Two read holds by one thread, released in either order. */
  CHECK_ERR(ops->read_lock(l, &t), 0);
  CHECK_ERR(ops->read_lock(l, &t2), 0);
  CHECK_ERR(ops->read_unlock(l, t), 0);
  CHECK_ERR(ops->write_trylock(l), EBUSY);
  CHECK_ERR(ops->read_unlock(l, t2), 0);
  in_other_thread(sees_free, l);

  preference(l);
  in_other_thread(sees_free, l);
  free_lock(l);
}

/* ---- static initializers ---- */
static bool all_zero(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return false;
  return true;
}

#define USE_PLAIN(P, l)                     \
  do {                                      \
    CHECK_ERR(P##_read_lock(l), 0);         \
    CHECK_ERR(P##_write_trylock(l), EBUSY); \
    CHECK_ERR(P##_read_unlock(l), 0);       \
    CHECK_ERR(P##_write_lock(l), 0);        \
    CHECK_ERR(P##_read_trylock(l), EBUSY);  \
    CHECK_ERR(P##_write_unlock(l), 0);      \
    CHECK_ERR(P##_destroy(l), 0);           \
  } while (0)

#define USE_TOKEN(P, l)                         \
  do {                                          \
    rm_token_t tk_;                             \
    for (int k_ = 0; k_ < 3; k_++) {            \
      CHECK_ERR(P##_read_lock(l, &tk_), 0);     \
      CHECK_ERR(P##_write_trylock(l), EBUSY);   \
      CHECK_ERR(P##_read_unlock(l, tk_), 0);    \
    }                                           \
    CHECK_ERR(P##_write_lock(l), 0);            \
    CHECK_ERR(P##_read_trylock(l, &tk_), EBUSY); \
    CHECK_ERR(P##_write_unlock(l), 0);          \
    CHECK_ERR(P##_destroy(l), 0);               \
  } while (0)

static rm_pft_t s_pft = RM_PFT_INITIALIZER;
static rm_futexrw_t s_fut = RM_FUTEXRW_INITIALIZER;
static rm_futexrw_t s_futr = RM_FUTEXRW_READER_PREF_INITIALIZER;
static rm_pthread_t s_pth = RM_PTHREAD_INITIALIZER;
static rm_cohort_t s_coh = RM_COHORT_INITIALIZER;
static rm_bravo_pft_t s_bpft = RM_BRAVO_PFT_INITIALIZER;
static rm_bravo_pthread_t s_bpth = RM_BRAVO_PTHREAD_INITIALIZER;
static rm_bravo_futexrw_t s_bfut = RM_BRAVO_FUTEXRW_INITIALIZER;
static rm_prwlock_t s_prw = RM_PRWLOCK_INITIALIZER;
#ifdef HAVE_BA
static rm_ba_t s_ba = RM_BA_INITIALIZER;
static rm_bravo_ba_t s_bba = RM_BRAVO_BA_INITIALIZER;
#endif
#ifdef HAVE_PERCPU
static rm_percpu_t s_pcpu = RM_PERCPU_INITIALIZER;
#endif

static void static_initializers(void) {
  current = "static initializers";
  CHECK(all_zero(&s_pft, sizeof s_pft));
  CHECK(all_zero(&s_futr, sizeof s_futr));
  CHECK_EQ(sizeof(rm_futexrw_t), 40);
  CHECK(sizeof(rm_bravo_futexrw_t) <= 56);
  CHECK(all_zero(&s_bpft, sizeof s_bpft));
  USE_PLAIN(rm_pft, &s_pft);
  USE_PLAIN(rm_futexrw, &s_fut);
  USE_PLAIN(rm_futexrw, &s_futr);
  USE_PLAIN(rm_pthread, &s_pth);
  USE_TOKEN(rm_cohort, &s_coh);
  USE_TOKEN(rm_bravo_pft, &s_bpft);
  USE_TOKEN(rm_bravo_pthread, &s_bpth);
  USE_TOKEN(rm_bravo_futexrw, &s_bfut);
  CHECK(all_zero(&s_prw, sizeof s_prw));
  USE_PLAIN(rm_prwlock, &s_prw);
#ifdef HAVE_BA
  CHECK(all_zero(&s_ba, sizeof s_ba));
  CHECK(all_zero(&s_bba, sizeof s_bba));
  USE_PLAIN(rm_ba, &s_ba);
  USE_TOKEN(rm_bravo_ba, &s_bba);
#endif
#ifdef HAVE_PERCPU
  CHECK(all_zero(&s_pcpu, sizeof s_pcpu));
  USE_TOKEN(rm_percpu, &s_pcpu);
#endif
  /* Kinds: an unknown kind is EINVAL. */
  rm_futexrw_t k;
  CHECK_ERR(rm_futexrw_init_kind(&k, 7, 0), EINVAL);
  CHECK_ERR(rm_futexrw_init_kind(NULL, 0, 0), EINVAL);
  CHECK_ERR(rm_futexrw_init_kind(&k, RM_FUTEXRW_PREFER_READER, 1), 0);
  CHECK_ERR(rm_futexrw_destroy(&k), 0);
  /* The reader count is full (white-box: 2^31 - 1 holds would take a
   * minute): EAGAIN from every read lock, and nothing changes. */
  CHECK_ERR(rm_futexrw_init_kind(&k, RM_FUTEXRW_PREFER_READER, 0), 0);
  k.state = RM_FUTEXRW_READERS_MAX - 1u;
  CHECK_ERR(rm_futexrw_read_lock(&k), 0);
  CHECK_EQ(k.state, RM_FUTEXRW_READERS_MAX);
  struct timespec later = test_deadline_ms(CLOCK_MONOTONIC, 1000);
  CHECK_ERR(rm_futexrw_read_lock(&k), EAGAIN);
  CHECK_ERR(rm_futexrw_read_trylock(&k), EAGAIN);
  CHECK_ERR(rm_futexrw_read_timedlock(&k, CLOCK_MONOTONIC, &later), EAGAIN);
  CHECK_ERR(rm_futexrw_write_trylock(&k), EBUSY);
  CHECK_EQ(k.state, RM_FUTEXRW_READERS_MAX);
  CHECK_ERR(rm_futexrw_read_unlock(&k), 0);
  CHECK_ERR(rm_futexrw_read_lock(&k), 0);
  k.state = 0;
  CHECK_ERR(rm_futexrw_destroy(&k), 0);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  static_initializers();
  const struct rm_rwlock_ops *const *all = rm_rwlock_ops_all();
  int n = 0;
  for (int i = 0; all[i]; i++, n++) {
    ops = all[i];
    current = ops->name;
    CHECK(rm_rwlock_ops_find(ops->name) == ops);
    alarm(120);
    contract();
    alarm(0);
    printf("%-20s contract ok\n", ops->name);
  }
  CHECK(n >= 8);
  CHECK(rm_rwlock_ops_find("no-such-lock") == NULL);
  CHECK(rm_rwlock_ops_find(NULL) == NULL);
  TEST_MAIN_END();
}
