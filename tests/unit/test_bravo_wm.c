/* BRAVO with a writer mutex (readmostly/bravo_wm.h), over BA, glibc's
 * rwlock and futexrw:
 *  - readers that arrive while a writer revokes (it waits for a fast
 *    reader) get in at once through A, read lock and read trylock alike,
 *    and the bias stays off meanwhile;
 *  - at most one writer of a lock revokes: a second writer waits on the
 *    mutex and is not counted into the bias word; it then finds nothing to
 *    revoke and takes A once;
 *  - try and timed writes: EBUSY / ETIMEDOUT while another writer holds the
 *    mutex or a fast reader holds a slot (the revocation stays pending and
 *    the next writer completes it); EINVAL for a bad timeout;
 *  - error codes: EDEADLK for a second write lock by the holder, EPERM for
 *    a write unlock by a thread that does not hold the lock, EBUSY from
 *    destroy while a writer holds it. */
/* Compiled as a user's release build (NDEBUG): a write unlock without the
 * write lock returns EPERM (a debug build aborts with a message). */
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include "test.h"
#include <readmostly/bravo_wm.h>

static bool is_fast(rm_token_t t) { return t != RM_TOKEN_NONE && t != 0; }

struct kind {
  const char *name;
  void *l;
  int (*rl)(void *, rm_token_t *);
  int (*rtry)(void *, rm_token_t *);
  int (*ru)(void *, rm_token_t);
  int (*wl)(void *);
  int (*wtry)(void *);
  int (*wtl)(void *, int, const struct timespec *); /* NULL: no timed variant */
  int (*wu)(void *);
  int (*destroy)(void *);
  struct rm_bravo_bias *bias;
  struct rm_bravo_wmutex *wm;
};
#define KIND(N, T, P)                                                                    \
  static int N##_rl(void *l, rm_token_t *t) { return P##_read_lock((T *)l, t); }          \
  static int N##_rtry(void *l, rm_token_t *t) { return P##_read_trylock((T *)l, t); }     \
  static int N##_ru(void *l, rm_token_t t) { return P##_read_unlock((T *)l, t); }         \
  static int N##_wl(void *l) { return P##_write_lock((T *)l); }                           \
  static int N##_wtry(void *l) { return P##_write_trylock((T *)l); }                      \
  static int N##_wu(void *l) { return P##_write_unlock((T *)l); }                         \
  static int N##_destroy(void *l) { return P##_destroy((T *)l); }
#define KIND_TIMED(N, T, P)                                                              \
  KIND(N, T, P)                                                                          \
  static int N##_wtl(void *l, int c, const struct timespec *a) {                          \
    return P##_write_timedlock((T *)l, c, a);                                             \
  }
KIND(wba, rm_bravowm_ba_t, rm_bravowm_ba)
KIND_TIMED(wpth, rm_bravowm_pthread_t, rm_bravowm_pthread)
KIND_TIMED(wfut, rm_bravowm_futexrw_t, rm_bravowm_futexrw)

static rm_bravowm_ba_t ba_lock = RM_BRAVOWM_BA_INITIALIZER;
static rm_bravowm_pthread_t pth_lock = RM_BRAVOWM_PTHREAD_INITIALIZER;
static rm_bravowm_futexrw_t fut_lock = RM_BRAVOWM_FUTEXRW_INITIALIZER;
static struct kind kinds[] = {
    {"bravowm-ba", &ba_lock, wba_rl, wba_rtry, wba_ru, wba_wl, wba_wtry, NULL, wba_wu,
     wba_destroy, &ba_lock.bias, &ba_lock.wm},
    {"bravowm-pthread", &pth_lock, wpth_rl, wpth_rtry, wpth_ru, wpth_wl, wpth_wtry, wpth_wtl,
     wpth_wu, wpth_destroy, &pth_lock.bias, &pth_lock.wm},
    {"bravowm-futexrw", &fut_lock, wfut_rl, wfut_rtry, wfut_ru, wfut_wl, wfut_wtry, wfut_wtl,
     wfut_wu, wfut_destroy, &fut_lock.bias, &fut_lock.wm},
};
static struct kind *k;

static uint32_t word(void) { return __atomic_load_n(&k->bias->rbias, __ATOMIC_ACQUIRE); }
static uint32_t mutex_word(void) { return __atomic_load_n(&k->wm->word, __ATOMIC_ACQUIRE); }

/* A fast read hold (N = 0: the first slow read turns the bias on). */
static rm_token_t fast_read(void) {
  for (int i = 0; i < 1000; i++) {
    rm_token_t t;
    CHECK_ERR(k->rl(k->l, &t), 0);
    if (is_fast(t)) return t;
    CHECK_ERR(k->ru(k->l, t), 0);
  }
  CHECK(!"no fast read hold after 1000 tries");
  return 0;
}

struct writer {
  pthread_t th;
  int state; /* 1 started, 2 holds the lock, 3 released */
};
static void *writer_main(void *p) {
  struct writer *w = (struct writer *)p;
  __atomic_store_n(&w->state, 1, __ATOMIC_RELEASE);
  CHECK_ERR(k->wl(k->l), 0);
  __atomic_store_n(&w->state, 2, __ATOMIC_RELEASE);
  CHECK_ERR(k->wu(k->l), 0);
  __atomic_store_n(&w->state, 3, __ATOMIC_RELEASE);
  return NULL;
}
static int wstate(struct writer *w) { return __atomic_load_n(&w->state, __ATOMIC_ACQUIRE); }

/* Wait until a writer is counted in (revoking). */
static void wait_revoking(void) {
  for (int i = 0; i < 10000 && word() < RM_BRAVO_REVOKER; i++) test_sleep_ms(1);
  CHECK(word() >= RM_BRAVO_REVOKER);
  CHECK(!(word() & RM_BRAVO_BIAS));
}

/* A writer revokes, waiting for t1; readers get in meanwhile, the bias
 * stays off, and a second writer waits on the mutex without revoking. */
static void readers_pass_one_revoker(void) {
  rm_token_t t1 = fast_read();
  struct writer w1 = {0, 0}, w2 = {0, 0};
  CHECK_EQ(pthread_create(&w1.th, NULL, writer_main, &w1), 0);
  wait_revoking();
  test_sleep_ms(10); /* let it settle into its wait */
  for (int i = 0; i < 100; i++) {
    rm_token_t t;
    CHECK_ERR((i & 1) ? k->rtry(k->l, &t) : k->rl(k->l, &t), 0);
    CHECK_EQ(t, RM_TOKEN_NONE); /* through A: the bias is off */
    CHECK_ERR(k->ru(k->l, t), 0);
  }
  CHECK(!(word() & RM_BRAVO_BIAS)); /* the slow reads could not turn it on */
  CHECK_EQ(wstate(&w1), 1);         /* t1 keeps the writer out */
  /* A second writer: blocked on the mutex, not counted in. */
  CHECK_EQ(pthread_create(&w2.th, NULL, writer_main, &w2), 0);
  for (int i = 0; i < 2000 && mutex_word() != 2u; i++) test_sleep_ms(1);
  CHECK_EQ(mutex_word(), 2u); /* held, and waited for */
  CHECK_EQ(word(), RM_BRAVO_REVOKER); /* one writer counted in, not two */
  CHECK_EQ(wstate(&w2), 1);
  /* Other writers meanwhile: the mutex is held. */
  CHECK_ERR(k->wtry(k->l), EBUSY);
  if (k->wtl) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 5);
    CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_EQ(word(), RM_BRAVO_REVOKER);
  }
  CHECK_ERR(k->ru(k->l, t1), 0);
  CHECK_EQ(pthread_join(w1.th, NULL), 0);
  CHECK_EQ(pthread_join(w2.th, NULL), 0);
  CHECK_EQ(wstate(&w1), 3);
  CHECK_EQ(wstate(&w2), 3);
  CHECK_EQ(word(), 0u); /* counted out, bias off until a slow read */
  CHECK_EQ(k->bias->revoke_pending, 0);
  CHECK_EQ(mutex_word(), 0u);
  /* N = 0: the window is over, the next slow read turns the bias on. */
  rm_token_t t;
  CHECK_ERR(k->rl(k->l, &t), 0);
  CHECK_ERR(k->ru(k->l, t), 0);
  CHECK_EQ(word(), RM_BRAVO_BIAS);
}

/* Try and timed writes that meet a fast reader give up; the revocation
 * stays pending (bias off) and the next writer completes it. */
static void try_and_timed_give_up(void) {
  rm_token_t t1 = fast_read();
  CHECK_ERR(k->wtry(k->l), EBUSY);
  CHECK_EQ(word(), 0u);                 /* counted out again, bias off */
  CHECK_EQ(k->bias->revoke_pending, 1); /* t1 may still be in the table */
  CHECK_EQ(mutex_word(), 0u);
  if (k->wtl) {
    struct timespec dl = test_deadline_ms(CLOCK_REALTIME, 5);
    CHECK_ERR(k->wtl(k->l, CLOCK_REALTIME, &dl), ETIMEDOUT);
    CHECK_EQ(k->bias->revoke_pending, 1);
    CHECK_EQ(mutex_word(), 0u);
    /* A bad timeout is EINVAL before anything else. */
    struct timespec bad = {0, 1000000000L};
    CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, &bad), EINVAL);
    CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, NULL), EINVAL);
  }
  /* Once t1 is gone, a try-lock completes the pending revocation. */
  CHECK_ERR(k->ru(k->l, t1), 0);
  CHECK_ERR(k->wtry(k->l), 0);
  CHECK_EQ(k->bias->revoke_pending, 0);
  CHECK_ERR(k->wu(k->l), 0);
  if (k->wtl) {
    rm_token_t t = fast_read();
    CHECK_ERR(k->ru(k->l, t), 0);
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, &dl), 0); /* revokes, nothing to wait for */
    CHECK_EQ(word(), 0u);
    CHECK_ERR(k->wu(k->l), 0);
  }
}

static void *unlock_other(void *p) {
  (void)p;
  CHECK_ERR(k->wu(k->l), EPERM);
  return NULL;
}

static void error_codes(void) {
  CHECK_ERR(k->wu(k->l), EPERM); /* not held at all */
  CHECK_ERR(k->wl(k->l), 0);
  CHECK_ERR(k->wl(k->l), EDEADLK);
  CHECK_ERR(k->wtry(k->l), EBUSY);
  if (k->wtl) {
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, &dl), EDEADLK);
  }
  CHECK_ERR(k->destroy(k->l), EBUSY);
  pthread_t o;
  CHECK_EQ(pthread_create(&o, NULL, unlock_other, NULL), 0);
  CHECK_EQ(pthread_join(o, NULL), 0);
  CHECK_EQ(mutex_word(), 1u); /* still ours */
  CHECK_ERR(k->wu(k->l), 0);
  CHECK_ERR(k->wu(k->l), EPERM);
}

int main(void) {
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    k = &kinds[i];
    readers_pass_one_revoker();
    try_and_timed_give_up();
    error_codes();
    CHECK_ERR(k->destroy(k->l), 0);
    printf("%s: ok\n", k->name);
  }
  TEST_MAIN_END();
}
