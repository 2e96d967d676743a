/*
 * platform.c - futexes, clock calibration, CPU queries, membarrier,
 * polite back-off and debug helpers.  See readmostly/platform.h.
 */
#define _GNU_SOURCE
#include <readmostly/platform.h>
#include <readmostly/pthread_rw.h>

#include "env.h"
#include "misuse.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

RM_API struct rm_platform_info rm_platform;
RM_API uint32_t rm_tsan_fence_word; /* used by rm_fence_store_load() under TSan */

static pthread_once_t platform_once = PTHREAD_ONCE_INIT;


#if defined(__x86_64__)
static bool tsc_invariant(void) {
  unsigned a, b, c, d;
  if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  (void)a; (void)b; (void)c;
  return (d >> 8) & 1u; /* CPUID.80000007H:EDX[8] = invariant TSC */
}

static uint64_t rdtsc_raw(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

/* Calibrate TSC ticks against CLOCK_MONOTONIC over ~2 ms. */
static double calibrate_tsc(void) {
  uint64_t n0 = rm_now_ns(), t0 = rdtsc_raw();
  uint64_t n1;
  do {
    n1 = rm_now_ns();
  } while (n1 - n0 < 2000000u);
  uint64_t t1 = rdtsc_raw();
  if (t1 <= t0) return 0.0;
  return (double)(n1 - n0) / (double)(t1 - t0);
}
#endif

static void platform_init_once(void) {
  long n = sysconf(_SC_NPROCESSORS_CONF);
  rm_platform.ncpus = n > 0 ? (uint32_t)n : 1u;
  rm_platform.ns_per_tick = 1.0;
  rm_platform.tsc_ok = 0;
#if defined(__x86_64__)
  if (!rm_env_flag("READMOSTLY_NO_TSC") && tsc_invariant()) {
    double r = calibrate_tsc();
    if (r > 0.0) {
      rm_platform.ns_per_tick = r;
      rm_platform.tsc_ok = 1;
    }
  }
#endif
  rm_platform.membarrier_ok = 0;
  if (!rm_env_flag("READMOSTLY_NO_MEMBARRIER")) {
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
      rm_platform.membarrier_ok = 1;
  }
  /* Publish: rm_ticks() readers may test tsc_ok without the once. */
  rm_atomic_store_release(&rm_platform.initialized, 1u);
}

RM_API void rm_platform_init(void) { pthread_once(&platform_once, platform_init_once); }

/* Run before main() and before the program can create threads, so that the
 * membarrier registration is cheap (see the header). */
__attribute__((constructor(101))) static void platform_ctor(void) { rm_platform_init(); }

RM_API uint64_t rm_ticks_to_ns(uint64_t ticks) {
  if (!rm_platform.tsc_ok) return ticks;
  return (uint64_t)((double)ticks * rm_platform.ns_per_tick);
}

RM_API uint64_t rm_ns_to_ticks(uint64_t ns) {
  if (RM_UNLIKELY(!rm_atomic_load_acquire(&rm_platform.initialized))) rm_platform_init();
  if (!rm_platform.tsc_ok || !(rm_platform.ns_per_tick > 0)) return ns;
  return (uint64_t)((double)ns / rm_platform.ns_per_tick);
}

RM_API unsigned rm_cpu_count(void) {
  if (RM_UNLIKELY(!rm_atomic_load_acquire(&rm_platform.initialized))) rm_platform_init();
  return rm_platform.ncpus;
}

RM_API unsigned rm_current_cpu(void) {
  int c = sched_getcpu();
  unsigned n = rm_cpu_count();
  if (c < 0) return 0;
  return (unsigned)c < n ? (unsigned)c : (unsigned)c % n;
}

RM_API bool rm_membarrier_available(void) {
  if (RM_UNLIKELY(!rm_atomic_load_acquire(&rm_platform.initialized))) rm_platform_init();
  return rm_platform.membarrier_ok != 0;
}

RM_API int rm_membarrier(void) {
  if (!rm_membarrier_available()) return ENOSYS;
  for (;;) {
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

/* ---- futexes ----------------------------------------------------------- */

RM_API int rm_timespec_check(int clk, const struct timespec *abstime) {
  if (clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME) return EINVAL;
  if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)) return EINVAL;
  return 0;
}

RM_API bool rm_timespec_expired(int clk, const struct timespec *abstime) {
  struct timespec now;
  if (!abstime) return false;
  clock_gettime(clk, &now);
  if (now.tv_sec != abstime->tv_sec) return now.tv_sec > abstime->tv_sec;
  return now.tv_nsec >= abstime->tv_nsec;
}

RM_API int rm_futex_wait(uint32_t *addr, uint32_t expected, int clk,
                         const struct timespec *abstime, bool shared) {
  int op;
  unsigned flags = 0;
  if (abstime) {
    int e = rm_timespec_check(clk, abstime);
    if (e) return e;
    if (abstime->tv_sec < 0) return ETIMEDOUT;
    /* FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC, or on
     * CLOCK_REALTIME with FUTEX_CLOCK_REALTIME. */
    op = FUTEX_WAIT_BITSET;
    if (clk == CLOCK_REALTIME) flags |= FUTEX_CLOCK_REALTIME;
  } else {
    op = FUTEX_WAIT_BITSET;
  }
  if (!shared) flags |= FUTEX_PRIVATE_FLAG;
  long r = syscall(SYS_futex, addr, op | (int)flags, expected, abstime, NULL,
                   FUTEX_BITSET_MATCH_ANY);
  if (r == 0) return 0;
  switch (errno) {
    case EAGAIN: return EAGAIN;
    case EINTR: return EINTR;
    case ETIMEDOUT: return ETIMEDOUT;
    case EINVAL: return EINVAL;
    default: return errno;
  }
}

RM_API int rm_futex_wake(uint32_t *addr, int n, bool shared) {
  int op = FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG);
  long r = syscall(SYS_futex, addr, op, n, NULL, NULL, 0);
  return r < 0 ? 0 : (int)r;
}

RM_API int rm_spin_then_park(uint32_t *addr, uint32_t expected, unsigned spins,
                             int clk, const struct timespec *abstime, bool shared) {
  if (abstime) {
    int e = rm_timespec_check(clk, abstime);
    if (e) return e;
  }
  for (unsigned i = 0; i < spins; i++) {
    /* Acquire: what the waker wrote before changing *addr is visible to us. */
    if (rm_atomic_load_acquire(addr) != expected) return 0;
    rm_cpu_relax();
  }
  for (;;) {
    if (rm_atomic_load_acquire(addr) != expected) return 0;
    int r = rm_futex_wait(addr, expected, clk, abstime, shared);
    if (r == ETIMEDOUT) return rm_atomic_load_acquire(addr) != expected ? 0 : ETIMEDOUT;
    if (r == EINVAL) return EINVAL;
    /* 0, EAGAIN, EINTR: loop and recheck. */
  }
}

/* ---- back-off -------------------------------------------------------------- */

RM_API void rm_backoff_wait_slowpath(rm_backoff_t *b) {
  uint32_t r = b->round++;
  if (r < RM_BACKOFF_SPINS + RM_BACKOFF_YIELDS) {
    sched_yield();
    return;
  }
  /* Sleep 1 us, 2 us, ... capped at 1 ms. */
  uint32_t k = r - (RM_BACKOFF_SPINS + RM_BACKOFF_YIELDS);
  long ns = 1000L << (k < 10 ? k : 10);
  if (ns > 1000000L) ns = 1000000L;
  rm_sleep_ns(ns);
}

/* glibc's nanosleep() and clock_nanosleep() are cancellation points; the
 * raw system call through syscall() is not (syscall() never acts on a
 * cancellation request).  An early return (EINTR) is harmless: every
 * caller re-checks its condition. */
RM_API void rm_sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* ---- debug ------------------------------------------------------------------- */

static void (*yield_hook)(void);

RM_API void rm_debug_set_yield_hook(void (*hook)(void)) {
  __atomic_store_n(&yield_hook, hook, __ATOMIC_RELEASE);
}

RM_API void rm_debug_yield(void) {
  void (*hook)(void) = __atomic_load_n(&yield_hook, __ATOMIC_ACQUIRE);
  if (hook) {
    hook();
    return;
  }
  static __thread uint32_t x;
  if (x == 0) x = (uint32_t)(uintptr_t)&x | 1u;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  if ((x & 7u) == 0) sched_yield();
}

/* READMOSTLY_DEBUG_PAUSE, parsed on the first call: up to 8 names, each
 * with a pause in microseconds.  Read only in debug-yield builds. */
#define PAUSE_MAX 8
static struct {
  char name[48];
  long us;
} pause_tab[PAUSE_MAX];
static unsigned pause_n;
static pthread_once_t pause_once = PTHREAD_ONCE_INIT;

static void pause_parse(void) {
  const char *all = getenv("READMOSTLY_DEBUG_PAUSE"), *v = all;
  while (v && *v && pause_n < PAUSE_MAX) {
    const char *colon = strchr(v, ':');
    char *end = NULL;
    long us = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof pause_tab[0].name ||
        end == colon + 1 || us < 0 || (*end != ',' && *end != '\0')) {
      /* The same report as every other variable (src/env.h). */
      rm_env_report("READMOSTLY_DEBUG_PAUSE", all,
                    "is not valid: want name:microseconds[,name:microseconds...], "
                    "names under 48 characters",
                    pause_n ? "the entries before the bad one" : "no pauses");
      return;
    }
    memcpy(pause_tab[pause_n].name, v, (size_t)(colon - v));
    pause_tab[pause_n].name[colon - v] = '\0';
    pause_tab[pause_n].us = us;
    pause_n++;
    v = *end == ',' ? end + 1 : NULL;
  }
}

RM_API void rm_debug_pause(const char *name) {
  pthread_once(&pause_once, pause_parse);
  for (unsigned i = 0; i < pause_n; i++)
    if (strcmp(pause_tab[i].name, name) == 0) {
      rm_sleep_ns(pause_tab[i].us * 1000L);
      return;
    }
  rm_debug_yield();
}

void rm_misuse_at(const char *file, int line, uint32_t *said, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
#ifndef NDEBUG
  (void)said;
  rm_assert_fail(file, line, "misuse", "%s", msg);
#else
  (void)file;
  (void)line;
  if (!rm_atomic_xchg_acq_rel(said, 1u)) fprintf(stderr, "readmostly: %s\n", msg);
#endif
}

RM_API void rm_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "readmostly: assertion failed at %s:%d: %s: ", file, line, cond);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

/* readmostly/pthread_rw.h: is pthread_rwlock_* served by the preload
 * library?  Looked up once (the answer is fixed when the program starts:
 * LD_PRELOAD); relaxed atomics, since every thread computes the same. */
RM_API bool rm_pthread_interposed(void) {
  static int known = -1;
  int k = rm_atomic_load_relaxed(&known);
  if (k < 0) {
    k = dlsym(RTLD_DEFAULT, "readmostly_preload_active") != NULL;
    rm_atomic_store_relaxed(&known, k);
  }
  return k != 0;
}
