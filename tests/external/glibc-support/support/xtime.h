/* support/xtime.h - stand-in for glibc's test harness header.  See check.h. */
#ifndef RM_GLIBC_SUPPORT_XTIME_H
#define RM_GLIBC_SUPPORT_XTIME_H
#include <time.h>
#include <support/check.h>

static inline void xclock_gettime(clockid_t clk, struct timespec *t) {
  if (clock_gettime(clk, t) != 0) FAIL_EXIT1("clock_gettime(%d) failed", (int)clk);
}
static inline struct timespec xclock_now(clockid_t clk) {
  struct timespec t;
  xclock_gettime(clk, &t);
  return t;
}
#endif
