/* BRAVO's writers revoke without holding A (bravo.h, DESCRIPTION):
 *  - over a reader-preference A, a thread that holds a fast read lock can
 *    read-lock again while a writer revokes (Listing 1's writer held A
 *    exclusively while it waited for the first hold: the second read waited
 *    for the writer, which waited for the first: a deadlock);
 *  - while a writer is counted in, the bias stays off: a slow reader whose
 *    inhibit window is over cannot turn it on, and no fast hold starts;
 *  - a trylock writer that meets a revoking writer scans for itself;
 *  - the timed writer that gives up leaves the revocation pending.
 * BRAVO over glibc's default kind and over futexrw's reader preference. */
#include "test.h"
#include <readmostly/bravo_locks.h>
#include <signal.h>
#include <unistd.h>

static bool is_fast(rm_token_t t) { return t != RM_TOKEN_NONE && t != 0; }

/* One lock type at a time, through these. */
struct kind {
  const char *name;
  void *l;
  int (*rl)(void *, rm_token_t *);
  int (*rtl)(void *, rm_token_t *, int, const struct timespec *);
  int (*ru)(void *, rm_token_t);
  int (*wl)(void *);
  int (*wtl)(void *, int, const struct timespec *);
  int (*wtry)(void *);
  int (*wu)(void *);
  struct rm_bravo_bias *bias;
};
#define KIND(N, T, P)                                                                     \
  static int N##_rl(void *l, rm_token_t *t) { return P##_read_lock((T *)l, t); }           \
  static int N##_rtl(void *l, rm_token_t *t, int c, const struct timespec *a) {            \
    return P##_read_timedlock((T *)l, t, c, a);                                            \
  }                                                                                        \
  static int N##_ru(void *l, rm_token_t t) { return P##_read_unlock((T *)l, t); }          \
  static int N##_wl(void *l) { return P##_write_lock((T *)l); }                            \
  static int N##_wtl(void *l, int c, const struct timespec *a) {                           \
    return P##_write_timedlock((T *)l, c, a);                                              \
  }                                                                                        \
  static int N##_wtry(void *l) { return P##_write_trylock((T *)l); }                       \
  static int N##_wu(void *l) { return P##_write_unlock((T *)l); }
KIND(fut, rm_bravo_futexrw_t, rm_bravo_futexrw)
KIND(pth, rm_bravo_pthread_t, rm_bravo_pthread)

static rm_bravo_futexrw_t fut_lock = RM_BRAVO_FUTEXRW_READER_PREF_INITIALIZER;
static rm_bravo_pthread_t pth_lock = RM_BRAVO_PTHREAD_INITIALIZER; /* glibc's default kind */
static struct kind kinds[] = {
    {"bravo-futexrw (reader preference)", &fut_lock, fut_rl, fut_rtl, fut_ru, fut_wl, fut_wtl,
     fut_wtry, fut_wu, &fut_lock.bias},
    {"bravo-pthread (glibc default kind)", &pth_lock, pth_rl, pth_rtl, pth_ru, pth_wl, pth_wtl,
     pth_wtry, pth_wu, &pth_lock.bias},
};
static struct kind *k;

static uint32_t word(void) { return __atomic_load_n(&k->bias->rbias, __ATOMIC_ACQUIRE); }

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

static int writer_state; /* 1 started, 2 holds the lock, 3 released */
static void *writer_main(void *p) {
  (void)p;
  __atomic_store_n(&writer_state, 1, __ATOMIC_RELEASE);
  CHECK_ERR(k->wl(k->l), 0);
  __atomic_store_n(&writer_state, 2, __ATOMIC_RELEASE);
  CHECK_ERR(k->wu(k->l), 0);
  __atomic_store_n(&writer_state, 3, __ATOMIC_RELEASE);
  return NULL;
}

/* Wait until the writer has cleared the bias (it is revoking). */
static void wait_revoking(void) {
  for (int i = 0; i < 10000 && (word() & RM_BRAVO_BIAS); i++) test_sleep_ms(1);
  CHECK(!(word() & RM_BRAVO_BIAS));
}

static void recursive_read_during_revocation(void) {
  writer_state = 0;
  rm_token_t t1 = fast_read();
  pthread_t w;
  CHECK_EQ(pthread_create(&w, NULL, writer_main, NULL), 0);
  wait_revoking();
  test_sleep_ms(20); /* let the writer settle into its wait */
  /* The writer waits for t1; the bias is off, so this read goes through A.
   * A time limit turns the old deadlock into a clean failure. */
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 5000);
  rm_token_t t2;
  CHECK_ERR(k->rtl(k->l, &t2, CLOCK_MONOTONIC, &dl), 0);
  CHECK_EQ(t2, RM_TOKEN_NONE);
  /* And once more without a limit (a hang here is caught by alarm). */
  rm_token_t t3;
  CHECK_ERR(k->rl(k->l, &t3), 0);
  CHECK(__atomic_load_n(&writer_state, __ATOMIC_ACQUIRE) == 1); /* still out */
  CHECK_ERR(k->ru(k->l, t3), 0);
  CHECK_ERR(k->ru(k->l, t2), 0);
  CHECK(__atomic_load_n(&writer_state, __ATOMIC_ACQUIRE) == 1); /* t1 keeps it out */
  CHECK_ERR(k->ru(k->l, t1), 0);
  CHECK_EQ(pthread_join(w, NULL), 0);
  CHECK_EQ(writer_state, 3);
}

/* While a writer is counted in, no reader may turn the bias on, even with
 * the inhibit window over (N = 0): slow reads stay slow. */
static void bias_stays_off_while_counted(void) {
  writer_state = 0;
  rm_token_t t1 = fast_read();
  pthread_t w;
  CHECK_EQ(pthread_create(&w, NULL, writer_main, NULL), 0);
  wait_revoking();
  CHECK(word() >= RM_BRAVO_REVOKER); /* counted in, not under A */
  for (int i = 0; i < 50; i++) {
    rm_token_t t;
    CHECK_ERR(k->rl(k->l, &t), 0);
    CHECK_EQ(t, RM_TOKEN_NONE);
    CHECK_ERR(k->ru(k->l, t), 0);
    CHECK(!(word() & RM_BRAVO_BIAS));
  }
  /* A try-lock meanwhile must not get in past t1. */
  CHECK_ERR(k->wtry(k->l), EBUSY);
  CHECK_ERR(k->ru(k->l, t1), 0);
  CHECK_EQ(pthread_join(w, NULL), 0);
  CHECK_EQ(word(), 0);                  /* counted out, bias off */
  CHECK_EQ(k->bias->revoke_pending, 0); /* its scan completed */
  /* The window is over (N = 0): the next slow read turns the bias on. */
  rm_token_t t;
  CHECK_ERR(k->rl(k->l, &t), 0);
  CHECK_ERR(k->ru(k->l, t), 0);
  CHECK_EQ(word(), RM_BRAVO_BIAS);
}

/* A timed writer that gives up while revoking leaves the revocation
 * pending and counts out; the next writer scans again. */
static void timed_writer_gives_up(void) {
  rm_token_t t1 = fast_read();
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 30);
  CHECK_ERR(k->wtl(k->l, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
  CHECK_EQ(word(), 0);
  CHECK_EQ(k->bias->revoke_pending, 1);
  CHECK_ERR(k->wtry(k->l), EBUSY); /* t1 is still there */
  CHECK_ERR(k->ru(k->l, t1), 0);
  CHECK_ERR(k->wtry(k->l), 0);
  CHECK_EQ(k->bias->revoke_pending, 0);
  CHECK_ERR(k->wu(k->l), 0);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_bravo_revoke: hung (a recursive read waited for a writer)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(1);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  alarm(120);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    k = &kinds[i];
    fprintf(stderr, "%s\n", k->name);
    recursive_read_during_revocation();
    bias_stays_off_while_counted();
    timed_writer_gives_up();
  }
  TEST_MAIN_END();
}
