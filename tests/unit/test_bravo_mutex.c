/* BRAVO over a mutex (readmostly/bravo_mutex.h):
 *  - with the bias on, readers of two threads hold the lock at once (the
 *    fast path), and a writer waits for both;
 *  - the caveat: with the bias off, a reader in the slow path holds the
 *    mutex and another thread's read trylock is refused (EBUSY) although
 *    no writer holds or waits: not work conserving.  BRAVO over glibc's
 *    rwlock admits that reader in the same state;
 *  - a second slow read lock by the holder is EDEADLK, not a hang;
 *  - unlock by a thread that does not hold the mutex is EPERM. */
#include "test.h"
#include <readmostly/bravo_locks.h>
#include <readmostly/bravo_mutex.h>

static rm_bravo_mutex_t lk = RM_BRAVO_MUTEX_INITIALIZER;
static rm_bravo_pthread_t plk = RM_BRAVO_PTHREAD_INITIALIZER;

static bool is_fast(rm_token_t t) { return t != RM_TOKEN_NONE && t != 0; }

static void *try_read(void *p) {
  rm_token_t t;
  int e = rm_bravo_mutex_read_trylock((rm_bravo_mutex_t *)p, &t);
  if (e == 0) CHECK_ERR(rm_bravo_mutex_read_unlock((rm_bravo_mutex_t *)p, t), 0);
  return (void *)(intptr_t)e;
}
static void *try_read_pthread(void *p) {
  rm_token_t t;
  int e = rm_bravo_pthread_read_trylock((rm_bravo_pthread_t *)p, &t);
  if (e == 0) CHECK_ERR(rm_bravo_pthread_read_unlock((rm_bravo_pthread_t *)p, t), 0);
  return (void *)(intptr_t)e;
}
static int elsewhere(void *(*fn)(void *), void *arg) {
  pthread_t th;
  void *r;
  CHECK_ERR(pthread_create(&th, NULL, fn, arg), 0);
  CHECK_ERR(pthread_join(th, &r), 0);
  return (int)(intptr_t)r;
}

static int writer_in;
static void *writer(void *p) {
  CHECK_ERR(rm_bravo_mutex_write_lock((rm_bravo_mutex_t *)p), 0);
  __atomic_store_n(&writer_in, 1, __ATOMIC_RELEASE);
  CHECK_ERR(rm_bravo_mutex_write_unlock((rm_bravo_mutex_t *)p), 0);
  return NULL;
}

static void *unlock_not_mine(void *p) {
  return (void *)(intptr_t)rm_bravo_mutex_write_unlock((rm_bravo_mutex_t *)p);
}

int main(void) {
  rm_bravo_mutex_t dyn;
  CHECK_ERR(rm_bravo_mutex_init(NULL), EINVAL);
  CHECK_ERR(rm_bravo_mutex_init(&dyn), 0);
  CHECK_ERR(rm_bravo_mutex_destroy(&dyn), 0);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);

  /* 1. Bias on: two readers at once, through the table. */
  rm_token_t t;
  CHECK_ERR(rm_bravo_mutex_read_lock(&lk, &t), 0); /* slow: turns the bias on */
  CHECK(t == RM_TOKEN_NONE);
  CHECK_ERR(rm_bravo_mutex_read_unlock(&lk, t), 0);
  CHECK_ERR(rm_bravo_mutex_read_lock(&lk, &t), 0);
  CHECK(is_fast(t));
  CHECK_ERR(elsewhere(try_read, &lk), 0); /* another reader is admitted */
  __atomic_store_n(&writer_in, 0, __ATOMIC_RELEASE);
  pthread_t w;
  CHECK_ERR(pthread_create(&w, NULL, writer, &lk), 0);
  test_sleep_ms(50);
  CHECK_EQ(__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE), 0); /* waits for the fast reader */
  CHECK_ERR(rm_bravo_mutex_read_unlock(&lk, t), 0);
  CHECK_ERR(pthread_join(w, NULL), 0);
  CHECK_EQ(__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE), 1);

  /* 2. The caveat.  N = 10^6: the revocation below keeps the bias off for
   * the rest of the test. */
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(1000000u), 0);
  CHECK_ERR(rm_bravo_mutex_read_lock(&lk, &t), 0); /* bias back on (N was 0) */
  CHECK_ERR(rm_bravo_mutex_read_unlock(&lk, t), 0);
  CHECK_ERR(rm_bravo_mutex_write_lock(&lk), 0); /* revokes: window of 10^6 x its cost */
  CHECK_ERR(rm_bravo_mutex_write_unlock(&lk), 0);
  CHECK_EQ(__atomic_load_n(&lk.bias.rbias, __ATOMIC_ACQUIRE), 0);
  CHECK_ERR(rm_bravo_mutex_read_lock(&lk, &t), 0);
  CHECK(t == RM_TOKEN_NONE); /* slow: holds the mutex */
  /* No writer holds or waits, yet another reader is refused. */
  CHECK_ERR(elsewhere(try_read, &lk), EBUSY);
  /* 3. The holder's second read lock: EDEADLK, not a hang. */
  rm_token_t t2;
  CHECK_ERR(rm_bravo_mutex_read_lock(&lk, &t2), EDEADLK);
  CHECK_EQ(t2, 0);
  /* 4. Unlock by a thread that does not hold it (ThreadSanitizer reports
   * the misuse itself, so not under it). */
  if (!TEST_UNDER_TSAN) CHECK_ERR(elsewhere(unlock_not_mine, &lk), EPERM);
  CHECK_ERR(rm_bravo_mutex_read_unlock(&lk, t), 0);

  /* BRAVO over glibc's rwlock in the same state admits the reader. */
  CHECK_ERR(rm_bravo_pthread_read_lock(&plk, &t), 0);
  CHECK_ERR(rm_bravo_pthread_read_unlock(&plk, t), 0);
  CHECK_ERR(rm_bravo_pthread_write_lock(&plk), 0);
  CHECK_ERR(rm_bravo_pthread_write_unlock(&plk), 0);
  CHECK_ERR(rm_bravo_pthread_read_lock(&plk, &t), 0);
  CHECK(t == RM_TOKEN_NONE);
  CHECK_ERR(elsewhere(try_read_pthread, &plk), 0);
  CHECK_ERR(rm_bravo_pthread_read_unlock(&plk, t), 0);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(9), 0);
  TEST_MAIN_END();
}
