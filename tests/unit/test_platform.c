/* Platform layer: clock, CPU queries, futex wait/wake with timeouts,
 * spin-then-park, back-off, membarrier. */
#include "test.h"
#include <readmostly/platform.h>
#include <sched.h>

static uint32_t word;

static void waker(void *arg, int i) {
  (void)arg; (void)i;
  test_sleep_ms(50);
  rm_atomic_store_release(&word, 1u);
  rm_futex_wake(&word, INT32_MAX, false);
}

int main(void) {
  rm_platform_init();
  CHECK(rm_cpu_count() >= 1);
  CHECK(rm_current_cpu() < rm_cpu_count());

  /* Ticks are monotonic and convert to plausible nanoseconds.  A thread
   * preempted between the two clocks' reads skews one interval, so a skewed
   * try is taken again: no timing of the machine decides the result. */
  bool plausible = false;
  for (int tries = 0; tries < 10 && !plausible; tries++) {
    uint64_t t0 = rm_ticks(), n0 = rm_now_ns();
    test_sleep_ms(20);
    uint64_t t1 = rm_ticks(), n1 = rm_now_ns();
    CHECK(t1 > t0);
    uint64_t dt = rm_ticks_to_ns(t1 - t0), dn = n1 - n0;
    plausible = dt > dn / 2 && dt < dn * 2;
  }
  CHECK(plausible);
  /* rm_ns_to_ticks is rm_ticks_to_ns's inverse (up to rounding). */
  CHECK_EQ(rm_ns_to_ticks(0), 0);
  uint64_t back = rm_ticks_to_ns(rm_ns_to_ticks(1000000000u));
  CHECK(back > 999000000u && back <= 1000000000u);

  /* Timespec validation. */
  struct timespec ts = {0, 0};
  CHECK_ERR(rm_timespec_check(CLOCK_MONOTONIC, &ts), 0);
  CHECK_ERR(rm_timespec_check(CLOCK_REALTIME, &ts), 0);
  CHECK_ERR(rm_timespec_check(CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
  ts.tv_nsec = 1000000000L;
  CHECK_ERR(rm_timespec_check(CLOCK_MONOTONIC, &ts), EINVAL);
  ts.tv_nsec = -1;
  CHECK_ERR(rm_timespec_check(CLOCK_MONOTONIC, &ts), EINVAL);

  /* Futex wait: value mismatch, timeouts on both clocks, past deadline. */
  uint32_t w = 5;
  CHECK_ERR(rm_futex_wait(&w, 4, CLOCK_MONOTONIC, NULL, false), EAGAIN);
  struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 30);
  CHECK_ERR(rm_futex_wait(&w, 5, CLOCK_MONOTONIC, &dl, false), ETIMEDOUT);
  dl = test_deadline_ms(CLOCK_REALTIME, 30);
  CHECK_ERR(rm_futex_wait(&w, 5, CLOCK_REALTIME, &dl, true), ETIMEDOUT);
  struct timespec past = {-1, 0};
  CHECK_ERR(rm_futex_wait(&w, 5, CLOCK_MONOTONIC, &past, false), ETIMEDOUT);
  CHECK(rm_timespec_expired(CLOCK_MONOTONIC, &past));
  CHECK(!rm_timespec_expired(CLOCK_MONOTONIC, NULL));
  CHECK_EQ(rm_futex_wake(&w, 1, false), 0);

  /* Spin-then-park returns once another thread changes the word. */
  word = 0;
  pthread_t th;
  struct test_thread_arg_ a = {waker, NULL, 0};
  CHECK_EQ(pthread_create(&th, NULL, test_thread_main_, &a), 0);
  dl = test_deadline_ms(CLOCK_MONOTONIC, 10000);
  CHECK_ERR(rm_spin_then_park(&word, 0, 100, CLOCK_MONOTONIC, &dl, false), 0);
  CHECK_EQ(rm_atomic_load_acquire(&word), 1);
  pthread_join(th, NULL);
  dl = test_deadline_ms(CLOCK_MONOTONIC, 20);
  CHECK_ERR(rm_spin_then_park(&word, 1, 10, CLOCK_MONOTONIC, &dl, false), ETIMEDOUT);
  CHECK_ERR(rm_spin_then_park(&word, 1, 10, 12345, &dl, false), EINVAL);

  /* Back-off goes through spin, yield and sleep phases without hanging. */
  rm_backoff_t b = RM_BACKOFF_INIT;
  uint64_t s = rm_now_ns();
  for (int i = 0; i < 400; i++) rm_backoff_wait(&b);
  CHECK(b.round == 400);
  CHECK(rm_now_ns() - s < 5000000000ull);

  /* membarrier: either registered and working, or reported unavailable. */
  const char *nomb = getenv("READMOSTLY_NO_MEMBARRIER");
  if (nomb && *nomb == '1') {
    CHECK(!rm_membarrier_available());
    CHECK_ERR(rm_membarrier(), ENOSYS);
  } else if (rm_membarrier_available()) {
    CHECK_ERR(rm_membarrier(), 0);
  } else {
    printf("note: kernel refused membarrier registration\n");
  }

  /* Thread identity: stable within a thread. */
  CHECK(rm_thread_identity() == rm_thread_identity());
  rm_debug_yield();
  TEST_MAIN_END();
}
