/* support/timespec.h - stand-in for glibc's test harness header.  See check.h. */
#ifndef RM_GLIBC_SUPPORT_TIMESPEC_H
#define RM_GLIBC_SUPPORT_TIMESPEC_H
#include <time.h>
#include <support/xtime.h>

static inline struct timespec make_timespec(time_t s, long ns) {
  struct timespec t = {s, ns};
  return t;
}
static inline struct timespec timespec_add(struct timespec a, struct timespec b) {
  struct timespec r = {a.tv_sec + b.tv_sec, a.tv_nsec + b.tv_nsec};
  if (r.tv_nsec >= 1000000000L) {
    r.tv_sec++;
    r.tv_nsec -= 1000000000L;
  }
  return r;
}
static inline struct timespec timespec_sub(struct timespec a, struct timespec b) {
  struct timespec r = {a.tv_sec - b.tv_sec, a.tv_nsec - b.tv_nsec};
  if (r.tv_nsec < 0) {
    r.tv_sec--;
    r.tv_nsec += 1000000000L;
  }
  return r;
}
static inline int rm_support_before(struct timespec a, struct timespec b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}
/* The clock has reached ts (a timed lock did not give up early). */
#define TEST_TIMESPEC_NOW_OR_AFTER(clk, ts)                                         \
  do {                                                                              \
    struct timespec n_ = xclock_now(clk);                                           \
    if (rm_support_before(n_, (ts)))                                                \
      rm_support_fail("clock %d: now %ld.%09ld is before %ld.%09ld", (int)(clk),    \
                      (long)n_.tv_sec, n_.tv_nsec, (long)(ts).tv_sec, (ts).tv_nsec); \
  } while (0)
#define TEST_TIMESPEC_BEFORE_NOW(ts, clk)                                              \
  do {                                                                                 \
    struct timespec n_ = xclock_now(clk);                                              \
    if (!rm_support_before((ts), n_))                                                  \
      rm_support_fail("%ld.%09ld is not before now", (long)(ts).tv_sec, (ts).tv_nsec); \
  } while (0)
#endif
