/*
 * test.h - the tiny test harness shared by readmostly's tests.
 *
 * CHECK(cond)              fails the test, printing the condition.
 * CHECK_EQ(a, b)           compares as long long, printing both values.
 * CHECK_ERR(call, err)     the call returns the POSIX error code err.
 * TEST_SKIP(why)           exit 77, which CTest reports as skipped.
 * test_run_threads(n, fn, arg)  start n threads running fn(arg, index), join.
 * TEST_MAIN_END()          prints "N passed, 0 failed" and returns 0.
 *
 * A failing check prints file:line and exits 1 at once.
 */
#ifndef READMOSTLY_TEST_H
#define READMOSTLY_TEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned test_checks_passed;

/* ThreadSanitizer cannot follow a child that starts threads after a
 * multi-threaded fork(); tests skip only that part under it. */
#if defined(__SANITIZE_THREAD__)
#define TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_UNDER_TSAN 1
#endif
#endif
#ifndef TEST_UNDER_TSAN
#define TEST_UNDER_TSAN 0
#endif

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
      exit(1);                                                                   \
    }                                                                            \
    __atomic_fetch_add(&test_checks_passed, 1u, __ATOMIC_RELAXED);                                                      \
  } while (0)

#define CHECK_EQ(a, b)                                                           \
  do {                                                                           \
    long long va_ = (long long)(a), vb_ = (long long)(b);                        \
    if (va_ != vb_) {                                                            \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s: expected %lld, got %lld\n", \
              __FILE__, __LINE__, #a, #b, vb_, va_);                             \
      exit(1);                                                                   \
    }                                                                            \
    __atomic_fetch_add(&test_checks_passed, 1u, __ATOMIC_RELAXED);                                                      \
  } while (0)

#define CHECK_ERR(call, err)                                                     \
  do {                                                                           \
    int got_ = (call);                                                           \
    if (got_ != (err)) {                                                         \
      fprintf(stderr, "%s:%d: %s: expected %s (%d), got %d (%s)\n", __FILE__,    \
              __LINE__, #call, #err, (int)(err), got_, strerror(got_));          \
      exit(1);                                                                   \
    }                                                                            \
    __atomic_fetch_add(&test_checks_passed, 1u, __ATOMIC_RELAXED);                                                      \
  } while (0)

#define TEST_SKIP(why)                                                           \
  do {                                                                           \
    printf("SKIP: %s\n", why);                                                   \
    exit(77);                                                                    \
  } while (0)

#define TEST_MAIN_END()                                                          \
  do {                                                                           \
    printf("%u passed, 0 failed\n", __atomic_load_n(&test_checks_passed, __ATOMIC_RELAXED));                        \
    return 0;                                                                    \
  } while (0)

struct test_thread_arg_ {
  void (*fn)(void *, int);
  void *arg;
  int index;
};

static void *test_thread_main_(void *p) {
  struct test_thread_arg_ *a = (struct test_thread_arg_ *)p;
  a->fn(a->arg, a->index);
  return NULL;
}

static inline void test_run_threads(int n, void (*fn)(void *, int), void *arg) {
  pthread_t *t = (pthread_t *)calloc((size_t)n, sizeof *t);
  struct test_thread_arg_ *a = (struct test_thread_arg_ *)calloc((size_t)n, sizeof *a);
  CHECK(t && a);
  for (int i = 0; i < n; i++) {
    a[i].fn = fn;
    a[i].arg = arg;
    a[i].index = i;
    CHECK_EQ(pthread_create(&t[i], NULL, test_thread_main_, &a[i]), 0);
  }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  free(t);
  free(a);
}

/* Absolute time `ms` milliseconds from now on clock clk. */
static inline struct timespec test_deadline_ms(clockid_t clk, long ms) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Whether the absolute time `deadline` on clock clk has passed (loops that
 * wait for something to happen bound themselves by time, never by a count
 * of rounds, which a slow or loaded machine can exhaust first). */
static inline bool test_deadline_passed(clockid_t clk, const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(clk, &now);
  return now.tv_sec > deadline->tv_sec ||
         (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* A cheap per-thread pseudo-random sequence (xorshift32; *s must not be 0). */
static inline uint32_t test_xorshift32(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

static inline void test_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

#endif
