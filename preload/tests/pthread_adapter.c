/*
 * pthread_adapter - readmostly's rm_pthread_t adapter (readmostly/pthread_rw.h)
 * in a program whose pthread_rwlock_* may be the preload library's.
 *
 * The adapter's unlock-misuse checks read glibc's fields of the lock; under
 * libreadmostly-preload.so those bytes are laid out differently, and a
 * correct unlock once tripped the check (an assertion in debug builds,
 * EPERM otherwise).  Run on glibc and under the preload (the test
 * registers both): rm_pthread_interposed() tells which, and balanced read
 * and write holds, with a second thread contending, unlock with 0.  A
 * misused unlock is still refused: with EPERM by the adapter on glibc, by
 * the preload library under it.
 */
#include "test.h"
#include <readmostly/pthread_rw.h>
#include <unistd.h>

static rm_pthread_t lock = RM_PTHREAD_INITIALIZER;
static uint64_t counter;

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 20000; i++) {
    if (i % 8 == 0) {
      CHECK_ERR(rm_pthread_write_lock(&lock), 0);
      counter++;
      CHECK_ERR(rm_pthread_write_unlock(&lock), 0);
    } else {
      CHECK_ERR(rm_pthread_read_lock(&lock), 0);
      (void)__atomic_load_n(&counter, __ATOMIC_RELAXED);
      CHECK_ERR(rm_pthread_read_unlock(&lock), 0);
    }
  }
  return NULL;
}

int main(void) {
  alarm(60);
  bool expect = getenv("EXPECT_PRELOAD") != NULL;
  CHECK_EQ(rm_pthread_interposed(), expect);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  CHECK_EQ(counter, (uint64_t)2 * 2500);
#ifdef NDEBUG
  /* Release builds: a write unlock of a lock nobody holds is refused. */
  CHECK_ERR(rm_pthread_write_unlock(&lock), EPERM);
#endif
  CHECK_ERR(rm_pthread_write_trylock(&lock), 0);
  CHECK_ERR(rm_pthread_write_unlock(&lock), 0);
  CHECK_ERR(rm_pthread_destroy(&lock), 0);
  TEST_MAIN_END();
}
